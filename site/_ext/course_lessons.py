"""The list of lessons and the site's own size and build time as site text, generated when the site is built.

Nothing on a page names, counts or describes the lessons by hand: each reads lessons.txt (labcore.lessons), the
lessons' own pages (the title, summary and prose of `<lesson>/page.md`, read by labcore.lessons) and command lines, so
a lesson added to the list reaches every page on the next build.

- `{course-lessons}` (directive): a bullet per listed lesson, in course order: its title linked to its page (the
  release notebook, `../course/<lesson>/<lesson>.ipynb` from a page of site/) and its one-line summary.
- `{course-pages}` (directive): the same list with each lesson's own prose for the lessons page in place of the
  summary: its PAGE (`<lesson>/page.md`, Markdown) after the title and the summary, which the bullet does not repeat.
- {course-lessons}`count` (role): how many lessons the list holds, as a word ("four"); `notebooks`: each lesson's
  notebook file (`day54.ipynb`, ...); `paths`: each notebook under its folder (`day54/day54.ipynb`, ...); `cells`:
  the fewest and the most cells of a release notebook (course/<lesson>/<lesson>.ipynb), as "38-59".
- `{course-exercises}` (directive): per listed lesson, read from its release notebook (public): the prediction cells
  and the quantities each asks for, every autograded test cell's one-line docstring and points, and the written
  answers' points (graded by hand).
- `{course-help}` (directive): every listed lesson's `python -m <lesson> --help`, as its own parser prints it.
- `{course-build}` (directive): the built site's size and build time, which site/build.py measures as it builds:
  the directive leaves BUILD_FIGURES in the page, and build.py writes the measured figures in its place.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from labcore.lessons import PAGE, lessons

RELEASE = Path(__file__).resolve().parents[2] / "course"  # the checkout's release notebooks
BUILD_FIGURES = "SITE-BUILD-FIGURES"  # replaced in the built HTML by site/build.py (its measure of this build)
HELP_COLUMNS = "100"  # argparse wraps --help to $COLUMNS: the page's width, whatever the building terminal's
PREDICTION = re.compile(r"^(predictions_\w+)\s*=\s*\{")  # a prediction cell: a plain dict, never graded
KEY = re.compile(r'^\s+"(\w+)":', re.M)  # one quantity of a prediction cell
DOCSTRING = re.compile(r'^\s*"""(.*?)"""', re.S)  # a test cell's first line says what it checks
WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def count_word(n: int) -> str:
    """A small count as a word, as the prose writes it ("four"); digits past twelve."""
    return WORDS[n] if n < len(WORDS) else str(n)


def lesson_bullets() -> list[str]:
    """The Markdown list of the lessons: title linked to the lesson's page, then its summary."""
    return [f"- [{x.title}](../course/{x.name}/{x.name}.ipynb): {x.summary}" for x in lessons()]


def page_bullets() -> list[str]:
    """The Markdown list of the lessons with each one's own prose (its PAGE after the title and summary), else, where
    the page has nothing after them, its summary."""
    lines = []
    for x in lessons():
        found = x.page
        prose = (found.prose or found.summary).splitlines()
        lines += [
            f"- **[{found.title}](../course/{x.name}/{x.name}.ipynb).** {prose[0]}",
            *(f"  {p}" for p in prose[1:]),
        ]
    return lines


def inline(what: str) -> list[nodes.Node]:
    """The nodes of {course-lessons}`what`; ValueError for a name the role does not know."""
    names = [x.name for x in lessons()]
    if what == "count":
        return [nodes.Text(count_word(len(names)))]
    if what == "cells":
        cells = [len(json.loads((RELEASE / n / f"{n}.ipynb").read_text())["cells"]) for n in names]
        return [nodes.Text(f"{min(cells)}-{max(cells)}" if min(cells) != max(cells) else str(min(cells)))]
    files = {"notebooks": [f"{n}.ipynb" for n in names], "paths": [f"{n}/{n}.ipynb" for n in names]}
    if what not in files:
        raise ValueError(f"course-lessons: no {what!r} (there are count, cells, {', '.join(files)})")
    found: list[nodes.Node] = []
    for i, name in enumerate(files[what]):
        if i:
            found.append(nodes.Text(" and " if i == len(names) - 1 else ", "))
        found.append(nodes.literal(name, name))
    return found


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _points(points: float) -> str:
    n = int(points) if float(points).is_integer() else points
    return "no points" if n == 0 else f"{n} point" + ("" if n == 1 else "s")


def _escaped(text: str) -> str:
    """Prose for Markdown: characters that would start emphasis, a link or HTML taken literally."""
    return re.sub(r"([*_\[\]<>`])", r"\\\1", " ".join(text.split()))


def exercise_bullets(name: str) -> list[str]:
    """One lesson's predictions, autograded test cells and written answers, as Markdown bullets, from its release."""
    cells = json.loads((RELEASE / name / f"{name}.ipynb").read_text())["cells"]
    predictions, tests, written = [], [], []
    for cell in cells:
        source, meta = _source(cell), cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] == "code" and not (meta.get("grade") or meta.get("solution")):
            if found := PREDICTION.match(source):
                predictions.append(f"`{found.group(1)}` ({', '.join(KEY.findall(source))})")
        elif cell["cell_type"] == "code" and meta.get("grade"):
            doc = DOCSTRING.match(source)
            what = _escaped(doc.group(1)) if doc else f"`{meta.get('grade_id')}`"
            points = _points(meta.get("points", 0))
            tests.append(f"  - {what}" + ("" if points in what else f" ({points})"))
        elif cell["cell_type"] == "markdown" and meta.get("grade") and meta.get("solution"):
            written.append(float(meta.get("points", 0)))
    lines = [f"- **[{lesson_title(name)}](../course/{name}/{name}.ipynb)**"]
    if predictions:
        lines.append(f"  - predictions: {'; '.join(predictions)}")
    lines.append("  - checked by its test cells:")
    lines += ["  " + line for line in tests]
    if written:
        lines.append(
            f"  - written answers: {len(written)}, {_points(sum(written))} in all, each in its own cell under a "
            "read-only question, graded by hand"
        )
    return lines


def lesson_title(name: str) -> str:
    return next(x.title for x in lessons() if x.name == name)


def lesson_help(name: str) -> str:
    """`python -m <lesson> --help` of a listed lesson, from its own parser (its __main__'s build_parser)."""
    parser = importlib.import_module(f"{name}.__main__").build_parser()
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return parser.format_help().rstrip()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def course_lessons_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        return inline(text.strip()), []
    except ValueError as error:
        message = inliner.reporter.error(str(error), line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]


class CourseLessons(SphinxDirective):
    """`{course-lessons}`: the listed lessons as a bulleted list, parsed in place (so the links resolve)."""

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(lesson_bullets(), source="lessons.txt"), self.content_offset, container)
        return container.children


class CoursePages(SphinxDirective):
    """`{course-pages}`: the listed lessons, each with its own prose page, parsed in place."""

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(page_bullets(), source=PAGE), self.content_offset, container)
        return container.children


class CourseExercises(SphinxDirective):
    """`{course-exercises}`: every listed lesson's predictions and exercises, from its release notebook."""

    def run(self) -> list[nodes.Node]:
        lines = [line for x in lessons() for line in exercise_bullets(x.name)]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="course/"), self.content_offset, container)
        return container.children


class CourseHelp(SphinxDirective):
    """`{course-help}`: each listed lesson's --help, a paragraph naming the command and the help as a code block."""

    def run(self) -> list[nodes.Node]:
        found: list[nodes.Node] = []
        for x in lessons():
            command = f"python -m {x.name} --help"
            found.append(nodes.paragraph("", "", nodes.literal(command, command), nodes.Text(f" ({x.title}):")))
            text = lesson_help(x.name)
            found.append(nodes.literal_block(text, text, language="text"))
        return found


class CourseBuild(SphinxDirective):
    """`{course-build}`: a paragraph that site/build.py completes with what this build measured."""

    def run(self) -> list[nodes.Node]:
        return [nodes.paragraph("", "", nodes.Text(f"This copy of the site: {BUILD_FIGURES}."))]


def setup(app) -> dict:
    app.add_directive("course-lessons", CourseLessons)
    app.add_role("course-lessons", course_lessons_role)
    app.add_directive("course-pages", CoursePages)
    app.add_directive("course-exercises", CourseExercises)
    app.add_directive("course-help", CourseHelp)
    app.add_directive("course-build", CourseBuild)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
