"""The list of lessons and the site's own size and build time as site text, generated when the site is built.

Nothing on a page names, counts or describes the lessons by hand: each reads lessons.txt (labcore.lessons) and the
lessons' own TITLE, SUMMARY and command line, so a lesson added to the list reaches every page on the next build.

- `{course-lessons}` (directive): a bullet per listed lesson, in course order: its title linked to its page (the
  release notebook, `../course/<lesson>/<lesson>.ipynb` from a page of site/) and its one-line summary.
- {course-lessons}`count` (role): how many lessons the list holds, as a word ("four"); `notebooks`: each lesson's
  notebook file (`day54.ipynb`, ...); `paths`: each notebook under its folder (`day54/day54.ipynb`, ...); `cells`:
  the fewest and the most cells of a release notebook (course/<lesson>/<lesson>.ipynb), as "38-59".
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
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from labcore.lessons import lessons

RELEASE = Path(__file__).resolve().parents[2] / "course"  # the checkout's release notebooks
BUILD_FIGURES = "SITE-BUILD-FIGURES"  # replaced in the built HTML by site/build.py (its measure of this build)
HELP_COLUMNS = "100"  # argparse wraps --help to $COLUMNS: the page's width, whatever the building terminal's
WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def count_word(n: int) -> str:
    """A small count as a word, as the prose writes it ("four"); digits past twelve."""
    return WORDS[n] if n < len(WORDS) else str(n)


def lesson_bullets() -> list[str]:
    """The Markdown list of the lessons: title linked to the lesson's page, then its summary."""
    return [f"- [{x.title}](../course/{x.name}/{x.name}.ipynb): {x.summary}" for x in lessons()]


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
    app.add_directive("course-help", CourseHelp)
    app.add_directive("course-build", CourseBuild)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
