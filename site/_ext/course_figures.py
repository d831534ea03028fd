"""The shipped profiles' figures as site text, computed at build time by the lessons' own readers and reports.

`{course-figures} NAME` in a page becomes the Markdown that `markdown(NAME)` returns: nothing is retyped, so a
new profile changes the site when it is rebuilt. NAME is `<lesson>-<block>`: the block of that lesson's `pages`
module (every listed lesson that has one, labcore.lessons), computed from the record its `load` gives. Every
number is also printed by `python -m <lesson>` replaying the same profile (tests/test_site_numbers.py checks that).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from labcore.lessons import names
from labcore.record import Record

PAGES = "pages"  # the optional module of a lesson that holds its website blocks


def _figures() -> dict[str, tuple[Callable[[], Record], Callable[[Record], list[str]]]]:
    found = {}
    for lesson in names():
        if importlib.util.find_spec(f"{lesson}.{PAGES}") is None:
            continue
        pages = importlib.import_module(f"{lesson}.{PAGES}")
        found.update({f"{lesson}-{block}": (pages.load, render) for block, render in pages.BLOCKS.items()})
    return found


FIGURES = _figures()


def markdown(name: str) -> str:
    """One named figure block as Markdown, computed from its lesson's shipped profile."""
    load, render = FIGURES[name]
    return "\n".join(render(load()))


class CourseFigures(SphinxDirective):
    """`{course-figures} NAME`: the Markdown of one figure block, parsed in place."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in FIGURES:
            raise self.error(f"course-figures: no figure block {name!r} (there are {', '.join(FIGURES)})")
        container = nodes.container()
        self.state.nested_parse(StringList(markdown(name).splitlines(), source=name), self.content_offset, container)
        return container.children


def setup(app) -> dict:
    app.add_directive("course-figures", CourseFigures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
