"""The course's lessons: the one list, `lessons.txt`, and where each lesson's parts lie.

The list is a text file, one lesson a line (its folder name) in course order, `#` starting a comment. In the
checkout it lies at the root beside the lesson folders; a wheel or the student bundle carries a copy as
`labcore/lessons.txt` (package data, written by setup.py's build and by `grader bundle`). Every reader of lessons
(the grader, packaging, the site, the tests) goes through `names()`; nothing else names a lesson.

A lesson is one folder `<name>/`, which is its package: `__init__.py` (LESSON, DOMAIN, BUILDS_ON where it has
one), `__main__.py`, the shape's modules, `page.md` (its prose: its title as a level-1 heading, its one-sentence
summary as the first paragraph, then the site's prose; `page()` reads it), `solutions/<name>.ipynb` (the nbgrader
source), `profiles/<gpu>/` (the shipped recorded profile) and `tests/` (its own tests). Installed copies carry the
package and its profiles only.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path

from labcore.errors import UsageError

LIST_NAME = "lessons.txt"
HERE = Path(__file__).resolve().parent
CHECKOUT_LIST = HERE.parent / LIST_NAME  # the checkout's (or a bundle folder's) list, beside the lesson folders
PACKAGED_LIST = HERE / LIST_NAME  # the copy a wheel or the bundle installs
SOLUTIONS_DIR, PROFILES_DIR, TESTS_DIR = "solutions", "profiles", "tests"
PAGE = "page.md"  # a lesson's prose: `# <title>`, its one-sentence summary, then its prose for the site's lessons page
# What every lesson folder holds (the shape: site/architecture.md); kernel.py, verify.py and kernels/ are optional
SHAPE_FILES = (
    "__init__.py",
    "__main__.py",
    "config.py",
    "model.py",
    "live.py",
    "replay.py",
    "report.py",
    "plots.py",
    "notebook.py",
    "checks.py",
)
NAME = re.compile(r"[a-z_][a-z0-9_]*")


def list_file() -> Path:
    """The list this labcore reads: the checkout's at the root, else the installed copy; UsageError when neither."""
    for path in (CHECKOUT_LIST, PACKAGED_LIST):
        if path.is_file():
            return path
    raise UsageError(f"no list of lessons: neither {CHECKOUT_LIST} nor {PACKAGED_LIST} exists")


def parse(text: str, where: str = LIST_NAME) -> tuple[str, ...]:
    """The lesson names of a list's text; UsageError on a name that cannot be a package or on a repeat."""
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not NAME.fullmatch(name):
            raise UsageError(f"{where}:{number}: {name!r} is not a lesson name (a Python package name, lower case)")
        if name in found:
            raise UsageError(f"{where}:{number}: {name!r} is listed twice")
        found.append(name)
    return tuple(found)


@cache
def _names(path: Path, mtime_ns: int) -> tuple[str, ...]:
    return parse(path.read_text(), str(path))


def names() -> tuple[str, ...]:
    """The course's lessons, in course order."""
    path = list_file()
    return _names(path, path.stat().st_mtime_ns)


def is_checkout() -> bool:
    """Whether this labcore is a checkout's (the list at the root beside the lesson folders)."""
    return CHECKOUT_LIST.is_file()


@dataclasses.dataclass(frozen=True)
class Lesson:
    """One lesson: its name and its folder (the package), and where its parts lie in that folder."""

    name: str
    folder: Path

    @property
    def solutions(self) -> Path:
        """The nbgrader source notebook (the checkout only: installed copies carry none)."""
        return self.folder / SOLUTIONS_DIR / f"{self.name}.ipynb"

    @property
    def profiles(self) -> Path:
        """The folder of its recorded profiles, one folder per GPU (`profiles/h200/`)."""
        return self.folder / PROFILES_DIR

    def profile(self, gpu: str) -> Path:
        return self.profiles / gpu

    @property
    def tests(self) -> Path:
        return self.folder / TESTS_DIR

    def module(self) -> object:
        return importlib.import_module(self.name)

    @property
    def page(self) -> Page:
        """Its title, summary and prose, from its folder's page.md (the checkout only: installed copies carry none)."""
        return page(self.folder / PAGE)

    @property
    def title(self) -> str:
        return self.page.title

    @property
    def summary(self) -> str:
        return self.page.summary

    @property
    def prose(self) -> str:
        return self.page.prose


@dataclasses.dataclass(frozen=True)
class Page:
    """A lesson's page.md: its title (one line), its summary (one sentence) and the prose after them (Markdown)."""

    title: str
    summary: str
    prose: str


def page(path: Path) -> Page:
    """A lesson's page.md read: `# <title>`, a blank line, the one-sentence summary (one paragraph, ending in a full
    stop, with none before it), then the prose; UsageError naming the file when one of them is missing or the
    summary is not one sentence."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: missing (a lesson's page: `# <title>`, its one-sentence summary, then its prose)")
    paragraphs = [p.strip() for p in re.split(r"\n[ \t]*\n", path.read_text().strip(), maxsplit=2)]
    heading = paragraphs[0]
    if not heading.startswith("# ") or "\n" in heading or not heading[2:].strip():
        raise UsageError(f"{path}: it does not open with the lesson's title, `# <title>` on a line of its own")
    summary = " ".join(paragraphs[1].split()) if len(paragraphs) > 1 else ""
    if not summary or summary.startswith("#"):
        raise UsageError(f"{path}: no summary (the paragraph after the title: the lesson in one sentence)")
    if not summary.endswith(".") or ". " in summary:
        raise UsageError(f"{path}: its summary is not one sentence (one full stop, at its end): {summary!r}")
    return Page(heading[2:].strip(), summary, paragraphs[2] if len(paragraphs) > 2 else "")


def folder(name: str, root: Path | None = None) -> Path:
    """Where a lesson's package lies: under root if given, beside the checkout's list, else where it imports from."""
    if root is not None:
        return Path(root) / name
    if is_checkout():
        return CHECKOUT_LIST.parent / name
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"the lesson {name!r} of {list_file()} is not installed here")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def lesson(name: str, root: Path | None = None) -> Lesson:
    """A listed lesson; UsageError naming the list when it is not on it."""
    if name not in names():
        raise UsageError(f"no lesson {name!r} in {list_file()}; the lessons are: {', '.join(names())}")
    return Lesson(name, folder(name, root))


def lessons(root: Path | None = None) -> tuple[Lesson, ...]:
    return tuple(Lesson(n, folder(n, root)) for n in names())


def read_list(root: Path) -> tuple[str, ...]:
    """The lessons of another checkout's list (root/lessons.txt): a course directory named by --repo."""
    path = Path(root) / LIST_NAME
    if not path.is_file():
        raise UsageError(f"{root} has no {LIST_NAME} (the list of the course's lessons)")
    return parse(path.read_text(), str(path))
