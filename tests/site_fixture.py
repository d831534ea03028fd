"""The course's website, built once per test session into a temporary folder by the README's build command; and the
region scan that the site's and the bundle's tests share (no solution region quoted whole, in any layout)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.feedback import html_text
from labcore.lessons import names

from once import made_once

ROOT = Path(__file__).resolve().parents[1]
SITE = "site"  # its name in tests/once.py
KERNEL_NOISE = "[IPKernelApp] WARNING"  # ipykernel's line about its local TCP transport, not Sphinx's


def readme_build_command() -> str:
    """The README's line that builds the site (the one a reader copies)."""
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines() if "site/build.py" in line]
    commands = [line for line in lines if line.startswith(".venv/bin/")]
    assert len(commands) == 1, f"the README should show one command that builds the site, found {commands}"
    return commands[0]


@pytest.fixture(scope="session")
def site_build(tmp_path_factory) -> SimpleNamespace:
    """The site as the README builds it, once a run (tests/once.py): tests/test_readme_commands.py's build, with the
    README's command in its fresh venv, where the run holds that test (it offers its build, and the site's tests start
    after it); else `python site/build.py OUT` as the README runs it, with this interpreter and a temporary OUT. Its
    out, log, warnings, command, and root (the checkout it was built from)."""
    pytest.importorskip("sphinx", reason="the test extra (sphinx) is not installed")
    pytest.importorskip("myst_nb", reason="the test extra (myst-nb) is not installed")
    command = readme_build_command()

    def make(folder: Path) -> dict:
        script = command.rsplit("python ", 1)[1].split()[0]
        out = folder / "html"
        done = subprocess.run([sys.executable, script, str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        log = done.stdout + done.stderr
        assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{log[-6000:]}"
        return {"out": str(out), "log": log, "root": str(ROOT)}

    made = made_once(tmp_path_factory, SITE, make)
    warnings = [line for line in made["log"].splitlines() if "WARNING" in line and KERNEL_NOISE not in line]
    return SimpleNamespace(
        out=Path(made["out"]), log=made["log"], warnings=warnings, command=command, root=Path(made["root"])
    )


# -- the region scan ---------------------------------------------------------------------------------------------
# The line scans (tests/test_bundle.py, tests/test_site.py) let through what the release shows anyway, line by line:
# the loop every chunked schedule opens with, the context's calls. Put together, some of those lines are a whole
# answer (day 54's pipeline is four of them), so each solution and hidden-test region is also looked for whole:
# whitespace folded, and once more with `#` comments stripped on both sides, so that reindenting, rewrapping or
# annotating it does not hide it.

REGION_MARKERS = {  # nbgrader's default delimiters -> what the region holds
    ("### BEGIN SOLUTION", "### END SOLUTION"): "solution",
    ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"): "hidden test",
}
MIN_REGION_LINES = 2  # a one-line region is the line scans' to find
# Day 54's answer (`my_pipelined`; `my_fastest` and day 56's `my_capturable` are the same loop), the region the
# scan was written for: its lines are each public, and together they are the exercise
PIPELINE = (
    "for k in range(ctx.n_chunks):",
    "    pair = k % ctx.n_buffers",
    "    ctx.copy_in(k, pair)",
    "    ctx.launch(k, pair)",
    "    ctx.copy_out(k, pair)",
)


def fold(text: str) -> str:
    """Every run of whitespace (newlines included) one space, none at the ends."""
    return " ".join(text.split())


def without_comments(text: str) -> str:
    """Each line less its `#` comment: from a `#` at the line's start or after whitespace to the line's end."""
    return "\n".join(re.sub(r"(^|\s)#.*", "", line) for line in text.splitlines())


def marked_regions(source: str, begin: str, end: str) -> list[str]:
    """The text between each begin marker line and the end marker line after it."""
    found, inside = [], None
    for line in source.splitlines():
        if inside is None and begin in line:
            inside = []
        elif inside is not None and end in line:
            found.append("\n".join(inside))
            inside = None
        elif inside is not None:
            inside.append(line)
    return found


def region_needles(root: Path = ROOT) -> dict[str, list[str]]:
    """Every solution and hidden-test region of each lesson's solutions notebook (a solution cell without markers
    whole) of MIN_REGION_LINES lines or more, folded; for a code cell also its code with `#` comments stripped, folded,
    if that still has MIN_REGION_LINES lines -> where each comes from."""
    needles: dict[str, list[str]] = {}
    for lesson in names():
        notebook = root / lesson / "solutions" / f"{lesson}.ipynb"
        for cell in json.loads(notebook.read_text())["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            nbgrader = cell.get("metadata", {}).get("nbgrader", {})
            where = f"{lesson}/solutions/{lesson}.ipynb, cell {nbgrader.get('grade_id', cell.get('id'))}"
            held = [(kind, r) for (b, e), kind in REGION_MARKERS.items() for r in marked_regions(source, b, e)]
            if not held and nbgrader.get("solution"):
                held = [("solution", source)]  # a solution cell without markers: all of it is the answer
            for kind, region in held:
                forms = [region] + ([without_comments(region)] if cell["cell_type"] == "code" else [])
                for form in forms:
                    if sum(1 for line in form.splitlines() if line.strip()) >= MIN_REGION_LINES:
                        needles.setdefault(fold(form), []).append(f"{kind} of {where}")
    return {needle: sorted(set(origins)) for needle, origins in needles.items()}


def json_strings(value: object) -> list[str]:
    """Every string in a JSON document (a notebook's sources and outputs), decoded from JSON's escapes."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    return []


def readable_texts(path: Path) -> list[str] | None:
    """A file's text as a reader sees it: an HTML page without its tags, entities decoded; a notebook or other JSON
    file as it is and its strings decoded. None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    if path.suffix in (".html", ".htm"):
        return [html_text(path)]
    texts = [text]
    if path.suffix in (".ipynb", ".json"):
        try:
            texts.append("\n".join(json_strings(json.loads(text))))
        except ValueError:
            pass  # not JSON after all: its text alone
    return texts


def regions_quoted(tree: Path, needles: dict[str, list[str]]) -> tuple[list[tuple[str, str]], int]:
    """(file, region) for every region of needles that a text file of tree quotes, whitespace folded, with or
    without `#` comments; and how many binary files were skipped."""
    hits, binary = [], 0
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        texts = readable_texts(path)
        if texts is None:
            binary += 1
            continue
        hay = [fold(t) for t in texts] + [fold(without_comments(t)) for t in texts]
        hits += [(str(path.relative_to(tree)), n) for n in needles if any(n in h for h in hay)]
    return hits, binary
