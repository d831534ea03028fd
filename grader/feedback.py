"""Feedback that never shows hidden tests.

`write_feedback` runs `nbgrader generate_feedback`, whose pipeline ends with HideHiddenTests
(grader.preprocessors; DIR/nbgrader_config.py puts it there): hidden-test regions are cut out of every cell
with `split_hidden` below and their cells' outputs reduced to a verdict line. It then reads every produced
HTML file as text and looks for each hidden-test line that does not also appear in the visible part of that
notebook, verbatim or encoded (base64 of the line or of a whole region at any offset, standard or URL-safe, hex,
zlib or gzip inside those, each also reversed or rot13; whitespace ignored): an HTML file that quotes one is
deleted and reported. The sandbox never holds hidden test text (it asks planned questions), so this is defence in
depth against a page that carries it anyway. A student's code does see the inputs a hidden question gives it, and may
print them: the scan also looks, in the same encodings, for the inputs of the questions only hidden tests asked
(grader.checker.hidden_inputs, stored with each result), a distinctive number alone or one question's numbers in a
row, and deletes a page that shows them. nbgrader also copies the other files of each
autograded folder into feedback/ (the student's run files and every non-notebook file of source/<a>/): hidden
test data must never live in such a file.
"""

from __future__ import annotations

import base64
import codecs
import html
import json
import math
import re
import zlib
from pathlib import Path

from grader.checker import digits_of
from grader.feedback_page import finished
from grader.grading import GradingDir
from grader.layout import COURSE_ID, STORE
from grader.report_data import pending_gpu, result_words, student_results
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


B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}")  # base64-looking (standard or URL-safe), padding dropped
HEX_RUN = re.compile(r"[0-9a-fA-F]{16,}")
MAX_INFLATED = 1 << 20  # bytes a zlib or gzip stream found in a page may inflate to here


def _texts(blob: bytes) -> list[str]:
    """What bytes decoded from a page may say: themselves as text, and what they inflate to as zlib, gzip or raw."""
    found = [blob.decode("utf-8", "replace")]
    for wbits in (15, 31, -15):
        try:
            found.append(zlib.decompressobj(wbits).decompress(blob, MAX_INFLATED).decode("utf-8", "replace"))
        except zlib.error:
            pass
    return found


def _base64(run: str) -> list[bytes]:
    """A base64-looking run decoded from each of its four offsets (a copy may begin after other base64-like text),
    its padding put back."""
    standard = run.replace("-", "+").replace("_", "/")
    found = []
    for offset in range(4):
        piece = standard[offset:]
        piece = piece[: len(piece) - (len(piece) % 4 == 1)]  # a lone last character holds no whole byte
        if len(piece) >= 8:
            found.append(base64.b64decode(piece + "=" * (-len(piece) % 4)))
    return found


def decodings(text: str) -> list[str]:
    """The text of a page and what it could be hiding: every base64 and hex run decoded (and inflated), and each of
    those, the text included, also reversed and rot13; whitespace removed throughout (wrapped base64 joins up)."""
    squeezed = re.sub(r"\s+", "", text)
    shown = [re.sub(r"\s+", "", t) for t in [squeezed, *_decoded_runs(squeezed)]]
    return [v for t in shown for v in (t, t[::-1], codecs.encode(t, "rot13"))]


def _decoded_runs(squeezed: str) -> list[str]:
    """What the base64 and hex runs of a text without whitespace decode (and inflate) to."""
    found = [t for run in set(B64_RUN.findall(squeezed)) for blob in _base64(run) for t in _texts(blob)]
    for run in set(HEX_RUN.findall(squeezed)):
        found += [t for offset in (0, 1) for t in _texts(bytes.fromhex(run[offset:][: (len(run) - offset) // 2 * 2]))]
    return found


def quoted_lines(text: str, lines: set[str]) -> list[str]:
    """The hidden lines a page's text quotes in any form `decodings` reads, whitespace ignored."""
    forms = "\0".join(decodings(text))
    return sorted(line for line in lines if re.sub(r"\s+", "", line) in forms)


def html_text(path: Path) -> str:
    """The text a reader sees in an HTML file: tags (syntax-highlighting spans) removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", path.read_text(errors="replace")))


NUMBER = re.compile(r"\d+(?:\.\d+)?")
MIN_ALONE_DIGITS = 4  # a hidden input found alone on a page: a float written with this many digits
MIN_ALONE_INT_DIGITS = 6  # an integer (a seed, a count of ids) with this many, not a round size
MIN_ROW_DIGITS = 8


def _value_texts(text: str) -> list[str]:
    """The page's text and what its base64 and hex runs decode (and inflate) to, each also reversed; whitespace
    kept (it separates numbers)."""
    found = [text, *_decoded_runs(re.sub(r"\s+", "", text))]
    return [v for t in found for v in (t, t[::-1])]


def _same(shown: str, drawn: float) -> bool:
    """Whether a number written on a page is a drawn input: equal, or it rounded to the digits written."""
    value = float(shown)
    if value == abs(drawn):
        return True
    decimals = len(shown.partition(".")[2])
    return decimals > 0 and digits_of(value) >= MIN_ALONE_DIGITS and round(abs(drawn), decimals) == value


def _alone(number: float) -> bool:
    """A drawn input distinctive enough to be looked for by itself."""
    if float(number).is_integer():  # 100000 or 4194304 may be on any page; 22369621 is nobody's but the draw's
        return len(str(int(abs(number))).rstrip("0")) >= MIN_ALONE_INT_DIGITS and int(number) % 1024 != 0
    return digits_of(number) >= MIN_ALONE_DIGITS


def _row(inputs: list[float]) -> bool:
    """A question's inputs worth looking for together: three or more, or two written with 8 digits between them
    (two plain numbers side by side, "100 / 100", say nothing)."""
    return len(inputs) >= 3 or (len(inputs) == 2 and sum(map(digits_of, inputs)) >= MIN_ROW_DIGITS)


class _Numbers:
    """The numbers written in some texts, in order, indexed by value: where a drawn input may begin is looked up
    rather than tried at every number of every text (a lesson's feedback page and what its base64-looking runs
    decode to hold hundreds of thousands, and a class's pages were most of `grader feedback`'s time). A row is
    looked for within one text, never across two."""

    def __init__(self, texts: list[str]) -> None:
        self.shown: list[str] = []
        self.end: list[int] = []  # for each number, where its text's numbers end
        for text in texts:
            numbers = NUMBER.findall(text)
            self.shown += numbers
            self.end += [len(self.shown)] * len(numbers)
        self.at: dict[float, list[int]] = {}
        decimals = set()
        for i, number in enumerate(self.shown):
            self.at.setdefault(float(number), []).append(i)
            decimals.add(len(number.partition(".")[2]))
        self.decimals = sorted(d for d in decimals if d > 0)

    def _starts(self, drawn: float) -> set[int]:
        """Every place a number `_same` takes for `drawn` is written: its value, or it rounded to a number's
        decimals (where that number has those decimals and enough digits); nowhere for an infinite or NaN one."""
        if not math.isfinite(drawn):
            return set()
        places = set(self.at.get(abs(drawn), ()))
        for decimals in self.decimals:
            rounded = round(abs(drawn), decimals)
            if digits_of(rounded) >= MIN_ALONE_DIGITS:
                places.update(i for i in self.at.get(rounded, ()) if len(self.shown[i].partition(".")[2]) == decimals)
        return places

    def in_row(self, inputs: list[float]) -> bool:
        """Whether the inputs are written one after another in one of the texts, each as `_same` reads it."""
        return any(
            at + len(inputs) <= self.end[at]
            and all(_same(self.shown[at + i], value) for i, value in enumerate(inputs[1:], 1))
            for at in self._starts(inputs[0])
        )


def quoted_values(text: str, drawn: list[list[float]], visible: str = "") -> list[str]:
    """The hidden questions' inputs (grader.checker.hidden_inputs) a page shows, in any form `_value_texts` reads:
    a distinctive one by itself, or all of one question's in a row; none that the notebook's visible text holds."""
    shown = _Numbers(_value_texts(text))
    public = _Numbers([visible])
    found = []
    for inputs in drawn:
        looked = [[n] for n in inputs if _alone(n)] + ([inputs] if _row(inputs) else [])
        for wanted in looked:
            if not public.in_row(wanted) and shown.in_row(wanted):
                found.append(", ".join(f"{n:g}" for n in wanted))
    return sorted(set(found))


def drawn_inputs(grading: GradingDir, assignment: str, student: str, notebook: str) -> list[list[float]]:
    """The hidden questions' inputs the student's notebook was graded with, as grading stored them ([] if none)."""
    try:
        stored = json.loads((grading.root / STORE / assignment / student / f"{notebook}.json").read_text())
        drawn = stored["result"]["extracted"].get("drawn", [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    return [[n for n in row if isinstance(n, (int, float))] for row in drawn if isinstance(row, list)]


def visible_text(notebook: Path) -> str:
    """Every cell's source as the release shows it: hidden-test regions cut."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests

    begin, end = ClearHiddenTests.begin_test_delimeter.default_value, ClearHiddenTests.end_test_delimeter.default_value
    return "\n".join("\n".join(split_hidden(c.source, begin, end)[0]) for c in nbformat.read(notebook, 4).cells)


def leaks(grading: GradingDir, assignment: str) -> list[str]:
    """Feedback files quoting a hidden-test line or showing a hidden question's inputs; each is deleted and named
    with what it showed."""
    found = []
    for page in sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")):
        student = page.parent.parent.name
        notebook = grading.root / "autograded" / student / assignment / f"{page.stem}.ipynb"
        if not notebook.is_file():
            continue
        text = html_text(page)
        quoted = quoted_lines(text, leak_lines(notebook))
        drawn = drawn_inputs(grading, assignment, student, page.stem)
        shown = quoted_values(text, drawn, visible_text(notebook)) if drawn else []
        if quoted or shown:
            page.unlink()
            what = f"quoted a hidden test ({quoted[0]!r})" if quoted else f"showed a hidden test's inputs ({shown[0]})"
            found.append(f"{page.relative_to(grading.root)} {what}; deleted it")
    return found


def _cells_line(cells: dict[str, float], lead: str, rest: str) -> str:
    """'LEAD: 2 cells (a, b; 3 points)REST', or '' when there are no cells."""
    if not cells:
        return ""
    n, points = len(cells), sum(cells.values())
    return f"{lead}: {n} cell{'s' * (n != 1)} ({', '.join(cells)}; {points:g} points){rest}"


def pending_line(cells: dict[str, float]) -> str:
    """The line atop a page whose written answers wait for grading by hand ('' when none do)."""
    rest = ", graded by hand later; until then they count 0 in the score below."
    return _cells_line(cells, "Written answers not graded yet", rest)


def pending_gpu_line(cells: dict[str, float]) -> str:
    """The line atop a page with cells a check could not verify without a GPU ('' when none)."""
    rest = (
        " could not be verified on the grading machine, which has no GPU; until graded on a GPU they count 0 in the "
        "score below."
    )
    return _cells_line(cells, "Pending a GPU", rest)


def measured_note(results: list) -> str:
    """What the checks measured for this student (labcore.checking.Result, read from the test cells' outputs), as
    a list atop the page ('' when they measured nothing)."""
    if not results:
        return ""
    items = "".join(f"<li>{html.escape(result_words(r))}</li>" for r in results)
    return f'<div class="measured"><p style="font-weight:bold">Measured by the checks:</p><ul>{items}</ul></div>'


def finish_pages(grading: GradingDir, assignment: str) -> None:
    """Each page: the written answers still waiting, the cells pending a GPU and what the checks measured at the
    top, those cells labelled pending beside their score, wrapped lines, math with nothing fetched
    (grader.feedback_page), no path of the grading machine."""
    from nbgrader.api import Gradebook  # seconds to import: only once there is a gradebook to read

    paths = machine_paths(grading)
    with Gradebook(grading.db_url, COURSE_ID) as gb:
        for page in sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")):
            text = strip_paths(page.read_text(errors="replace"), paths)
            student = page.parent.parent.name
            waiting_gpu = pending_gpu(grading, assignment, [page.stem], student)
            text = finished(text, waiting_gpu)
            lines = [
                ("pending-written", pending_line(pending(gb, grading, assignment, student, page.stem))),
                ("pending-gpu", pending_gpu_line(waiting_gpu)),
            ]
            note = "".join(
                f'<p class="{kind}" style="font-weight:bold">{html.escape(line)}</p>' for kind, line in lines if line
            ) + measured_note(student_results(grading, assignment, page.stem, student))
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
