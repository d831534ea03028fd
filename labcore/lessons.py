"""The course's lessons: the one list, `lessons.txt`, and where each lesson's parts lie.

The list is a text file, one lesson a line (its folder name) in course order, `#` starting a comment. In the
checkout it lies at the root beside the lesson folders; a wheel or the student bundle carries a copy as
`labcore/lessons.txt` (package data, written by setup.py's build and by `grader bundle`). Every reader of lessons
(the grader, packaging, the site, the tests) goes through `names()`; nothing else names a lesson.

A lesson is one folder `<name>/`, which is its package: `__init__.py` (LESSON, DOMAIN, TITLE, SUMMARY),
`__main__.py`, the shape's modules, `solutions/<name>.ipynb` (the nbgrader source), `profiles/<gpu>/` (the
shipped recorded profile) and `tests/` (its own tests). Installed copies carry the package and its profiles only.
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
    def title(self) -> str:
        return str(self.module().TITLE)

    @property
    def summary(self) -> str:
        return str(self.module().SUMMARY)


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
