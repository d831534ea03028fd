"""Feedback that never shows hidden tests.

`write_feedback` runs `nbgrader generate_feedback`, whose pipeline ends with HideHiddenTests
(grader.preprocessors; DIR/nbgrader_config.py puts it there): hidden-test regions are cut out of every cell
with `split_hidden` below and their cells' outputs reduced to a verdict line. It then reads every produced
HTML file as text and looks for each hidden-test line that does not also appear in the visible part of that
notebook; an HTML file that quotes one is deleted and reported. nbgrader also copies the other files of each
autograded folder into feedback/ (the student's run files and every non-notebook file of source/<a>/): hidden
test data must never live in such a file.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from grader.grading import GradingDir
from grader.layout import COURSE_ID
from grader.report import pending_gpu
from grader.runner import nbgrader_or_fail
from grader.status import machine_paths, pending, strip_paths

PLACEHOLDER = "# hidden tests: not shown"
MIN_LEAK_CHARS = 8  # shorter hidden lines ("else:", ")") say nothing and occur everywhere


def split_hidden(source: str, begin: str, end: str) -> tuple[list[str], list[str], int | None]:
    """(visible lines with a placeholder per region, hidden lines, 1-based line of the first marker)."""
    visible, hidden, first = [], [], None
    inside = False
    for number, line in enumerate(source.split("\n"), start=1):
        if begin in line and not inside:
            inside = True
            first = first or number
            visible.append(line[: len(line) - len(line.lstrip())] + PLACEHOLDER)
        elif end in line and inside:
            inside = False
        elif inside:
            hidden.append(line)
        else:
            visible.append(line)
    return visible, hidden, first


def leak_lines(notebook: Path) -> set[str]:
    """Hidden-test lines of an autograded notebook worth looking for: long enough, not also visible."""
    import nbformat  # seconds to import (jsonschema's format checks): --help and bad options do not wait for it
    from nbgrader.preprocessors import ClearHiddenTests  # seconds to import; read here for its default delimiters

    begin, end = ClearHiddenTests.begin_test_delimeter.default_value, ClearHiddenTests.end_test_delimeter.default_value
    hidden, visible = set(), set()
    for cell in nbformat.read(notebook, as_version=4).cells:
        shown, secret, _ = split_hidden(cell.source, begin, end)
        visible.update(line.strip() for line in shown)
        hidden.update(line.strip() for line in secret)
    return {line for line in hidden - visible if len(line) >= MIN_LEAK_CHARS}


def html_text(path: Path) -> str:
    """The text a reader sees in an HTML file: tags (syntax-highlighting spans) removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", path.read_text(errors="replace")))


def leaks(grading: GradingDir, assignment: str) -> list[str]:
    """Feedback files quoting a hidden-test line; each is deleted and named with the line it quotes."""
    found = []
    for page in sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")):
        student = page.parent.parent.name
        notebook = grading.root / "autograded" / student / assignment / f"{page.stem}.ipynb"
        text = html_text(page)
        quoted = sorted(line for line in leak_lines(notebook) if line in text) if notebook.is_file() else []
        if quoted:
            page.unlink()
            found.append(f"{page.relative_to(grading.root)} quoted a hidden test ({quoted[0]!r}); deleted it")
    return found


def pending_line(cells: dict[str, float]) -> str:
    """The line atop a page whose written answers wait for grading by hand ('' when none do)."""
    if not cells:
        return ""
    n, points = len(cells), sum(cells.values())
    return (
        f"Written answers not graded yet: {n} cell{'s' * (n != 1)} ({', '.join(cells)}; {points:g} points), "
        "graded by hand later; until then they count 0 in the score below."
    )


def pending_gpu_line(cells: dict[str, float]) -> str:
    """The line atop a page with cells a check could not verify without a GPU ('' when none)."""
    if not cells:
        return ""
    n, points = len(cells), sum(cells.values())
    return (
        f"Pending a GPU: {n} cell{'s' * (n != 1)} ({', '.join(cells)}; {points:g} points) could not be verified on "
        "the grading machine, which has no GPU; until graded on a GPU they count 0 in the score below."
    )


def finish_pages(grading: GradingDir, assignment: str) -> None:
    """Each page: the written answers still waiting and the cells pending a GPU named at the top, no path of the
    grading machine."""
    from nbgrader.api import Gradebook  # seconds to import: only once there is a gradebook to read

    paths = machine_paths(grading)
    with Gradebook(grading.db_url, COURSE_ID) as gb:
        for page in sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")):
            text = strip_paths(page.read_text(errors="replace"), paths)
            student = page.parent.parent.name
            lines = [
                ("pending-written", pending_line(pending(gb, grading, assignment, student, page.stem))),
                ("pending-gpu", pending_gpu_line(pending_gpu(grading, assignment, [page.stem], student))),
            ]
            note = "".join(
                f'<p class="{kind}" style="font-weight:bold">{html.escape(line)}</p>' for kind, line in lines if line
            )
            if note:
                text = re.sub(r"(<body[^>]*>)", lambda m, note=note: m.group(1) + note, text, count=1)
            page.write_text(text)


def write_feedback(grading: GradingDir, assignment: str) -> tuple[list[Path], list[str]]:
    """nbgrader generate_feedback for one assignment, the pending line and paths, then the leak check.

    (HTML files kept, leaks)."""
    nbgrader_or_fail(["generate_feedback", assignment, "--force"], cwd=grading.root)
    finish_pages(grading, assignment)
    found = leaks(grading, assignment)
    return sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")), found
