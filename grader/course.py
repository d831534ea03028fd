"""The course checkout: nbgrader sources in <lesson>/solutions/, the generated student release in course/.

`generate` rewrites course/ from the lessons' solutions/ with `nbgrader generate_assignment` (the checkout's
nbgrader_config.py: no gradebook, outputs cleared). `check` regenerates into a temporary directory and
lists every file of course/ that differs, plus any notebook in either tree that carries outputs or
execution counts: what CI runs. Assignments are the lessons of lessons.txt (labcore.lessons), in its order.

After nbgrader, every cell of the release that raises while untouched gets the `raises-exception` tag: the graded
test cells and the answer cells whose stub raises outside a function. JupyterLab's Run All (and nbclient) then go
on past them, so the lesson cells after an exercise still run; the error stays in the cell's output, and nbgrader,
which executes with errors allowed whatever the tags, still scores a failing test 0.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from grader.layout import GRADING_CONFIG, RELEASE_DIR, SOURCE_DIR, run_files_glob
from grader.runner import REPO, nbgrader_or_fail
from labcore.errors import UsageError
from labcore.lessons import LIST_NAME, PAGE, page, read_list

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

SOLUTION_MARKER = re.compile(r"### (BEGIN|END) SOLUTION")
SKIP = (".ipynb_checkpoints", "__pycache__")
RAISES_TAG = "raises-exception"  # the cell tag JupyterLab's Run All and nbclient go on past (nbclient's docs)


@dataclasses.dataclass(frozen=True)
class Course:
    """A checkout: root holds nbgrader_config.py, the list of lessons (lessons.txt), each lesson's folder with its
    nbgrader source in <lesson>/solutions/, and course/."""

    root: Path

    def source_of(self, assignment: str) -> Path:
        """The folder of an assignment's nbgrader source notebook: <lesson>/solutions/."""
        return self.root / assignment / SOURCE_DIR

    def notebook_of(self, assignment: str) -> Path:
        return self.source_of(assignment) / f"{assignment}.ipynb"

    @property
    def release(self) -> Path:
        return self.root / RELEASE_DIR

    @classmethod
    def at(cls, root: str | Path | None = None) -> Course:
        """The checkout at root (default: the one this grader belongs to); UsageError if it is not one."""
        path = Path(root).resolve() if root else REPO
        for needed in (path / GRADING_CONFIG, path / LIST_NAME):
            if not needed.exists():
                raise UsageError(
                    f"{path} is not a course checkout: it has no {needed.name} "
                    f"(give --repo the folder holding {GRADING_CONFIG} and {LIST_NAME})"
                )
        return cls(path)

    def assignments(self) -> list[str]:
        """Assignment names: the lessons of the checkout's list, in course order; UsageError for a listed lesson
        without its source notebook."""
        names = list(read_list(self.root))
        for name in names:
            if not self.notebook_of(name).is_file():
                raise UsageError(f"{LIST_NAME} lists {name!r}, which has no {name}/{SOURCE_DIR}/{name}.ipynb")
        return names

    def pick(self, assignment: str | None) -> list[str]:
        """One named assignment (checked) or all of them; UsageError listing what exists."""
        known = self.assignments()
        if not known:
            raise UsageError(f"{self.root / LIST_NAME} lists no lesson (expected <name>/{SOURCE_DIR}/<name>.ipynb)")
        if assignment is None:
            return known
        if assignment not in known:
            raise UsageError(f"no assignment {assignment!r} in {self.root / LIST_NAME}; there are: {', '.join(known)}")
        return [assignment]

    def notebooks(self, tree: Path) -> list[Path]:
        """Every notebook under tree, checkpoints excluded."""
        return sorted(p for p in tree.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)

    def sources(self, assignments: list[str] | None = None) -> list[Path]:
        """The source notebooks of these assignments (default all)."""
        return [self.notebook_of(n) for n in (self.assignments() if assignments is None else assignments)]


def solved_release(course: Course, assignment: str) -> NotebookNode:
    """The student release with every solution cell holding the reference's answer: a reference submission as a
    student hands it in (the solution markers gone), for validating a grading set-up and benchmarking one."""
    import nbformat  # seconds to import (jsonschema): only the callers that build notebooks wait for it

    release = nbformat.read(course.release / assignment / f"{assignment}.ipynb", as_version=4)
    solved = {c.get("id"): c for c in nbformat.read(course.notebook_of(assignment), 4).cells}
    for cell in release.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.get("id") in solved:
            cell.source = "\n".join(
                line for line in solved[cell["id"]].source.splitlines() if not SOLUTION_MARKER.search(line)
            )
    return release


def generate(course: Course, assignment: str, into: Path | None = None) -> Path:
    """Regenerate the release of one assignment (into another release folder if given); its folder."""
    with tempfile.TemporaryDirectory(prefix="grader-source-") as staged:
        # nbgrader reads source/<assignment>/: a copy of <lesson>/solutions/ (the notebook) under that name
        shutil.copytree(course.source_of(assignment), Path(staged) / assignment, ignore=shutil.ignore_patterns(*SKIP))
        args = ["generate_assignment", assignment, "--force", f"--CourseDirectory.source_directory={staged}"]
        if into is not None:
            args.append(f"--CourseDirectory.release_directory={into.resolve()}")
        nbgrader_or_fail(args, cwd=course.root)
    folder = (into.resolve() if into else course.release) / assignment
    tag_raising_cells(folder)
    return folder


def raises_untouched(cell: NotebookNode) -> bool:
    """A release cell that raises as handed out: a graded test, or an answer cell whose stub raises at top level."""
    meta = cell.metadata.get("nbgrader", {})
    if cell.cell_type != "code" or not (meta.get("grade") or meta.get("solution")):
        return False
    if meta.get("grade") and not meta.get("solution"):
        return True
    try:
        body = ast.parse(cell.source).body
    except SyntaxError:  # a stub that does not parse raises too
        return True
    return any(isinstance(node, ast.Raise) for node in body)


def tag_raising_cells(folder: Path) -> list[str]:
    """Tag `raises-exception` on every cell of the release notebooks under folder that raises untouched; their ids."""
    import nbformat  # seconds to import (jsonschema): only the callers that build notebooks wait for it

    tagged = []
    for path in sorted(folder.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        changed = False
        for cell in nb.cells:
            tags = cell.metadata.get("tags", [])
            if raises_untouched(cell) and RAISES_TAG not in tags:
                cell.metadata["tags"] = [*tags, RAISES_TAG]
                tagged.append(cell.get("id", ""))
                changed = True
        if changed:
            nbformat.write(nb, path)
    return tagged


def outputs_in(path: Path) -> list[str]:
    """What in a notebook is not clean: cells with outputs or execution counts."""
    import nbformat  # seconds to import (jsonschema's format checks): --help and bad options do not wait for it

    try:
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    except Exception as exc:  # a broken notebook is reported, not raised: the check lists every problem
        return [f"{path}: not a readable notebook ({exc})"]
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            found.append(f"{path}: cell {index} has {len(cell.outputs)} output(s)")
        if cell.get("execution_count") is not None:
            found.append(f"{path}: cell {index} has execution count {cell.execution_count}")
    return found


def _files(tree: Path) -> set[str]:
    """Relative paths of the files under tree, checkpoints and caches left out."""
    skip = {".ipynb_checkpoints", "__pycache__"}
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and not skip & set(p.parts)}


def tree_differences(committed: Path, generated: Path, label: str) -> list[str]:
    """Files that differ byte for byte, are missing or are extra in committed compared with generated."""
    if not committed.exists():
        return [f"{label}: missing (not generated)"]
    have, want = _files(committed), _files(generated)
    found = [
        f"{label}/{name}: differs from the generated release"
        for name in sorted(have & want)
        if (committed / name).read_bytes() != (generated / name).read_bytes()
    ]
    found += [f"{label}/{name}: not produced by generation (remove it)" for name in sorted(have - want)]
    found += [f"{label}/{name}: missing (not generated)" for name in sorted(want - have)]
    return found


README = "README.md"
TABLE_START = "<!-- the lessons: written by `python -m grader generate` from lessons.txt; do not edit -->"
TABLE_END = "<!-- end of the lessons -->"


def lesson_table(course: Course) -> str:
    """The README's table of lessons, in the list's order: the title, the command, the summary (each lesson's page.md,
    read by labcore.lessons without importing the lesson)."""
    rows = ["| lesson | run it | what it measures |", "|---|---|---|"]
    for name in course.assignments():
        found = page(course.root / name / PAGE)
        rows.append(f"| {found.title} | `python -m {name}` | {found.summary} |")
    return "\n".join(rows)


def _with_table(text: str, table: str) -> str | None:
    """README text with its lesson table replaced; None when it has no table markers."""
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        return None
    return text[: start + len(TABLE_START)] + "\n" + table + "\n" + text[end:]


def write_lesson_table(course: Course) -> bool:
    """Write the README's lesson table from the list; False when the README has no table markers."""
    path = course.root / README
    if not path.is_file():
        return False
    text = path.read_text()
    new = _with_table(text, lesson_table(course))
    if new is None:
        return False
    if new != text:
        path.write_text(new)
    return True


def lesson_table_problems(course: Course) -> list[str]:
    path = course.root / README
    if not path.is_file():
        return []
    text = path.read_text()
    new = _with_table(text, lesson_table(course))
    return [] if new is None or new == text else [f"{README}: its lesson table is not what {LIST_NAME} lists"]


def check(course: Course, assignments: list[str], progress: Callable[[str], None] | None = None) -> list[str]:
    """Every problem with the committed release: differences from a fresh generation, outputs anywhere."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="grader-check-") as tmp:
        for name in assignments:
            generate(course, name, into=Path(tmp))
            rel = f"{RELEASE_DIR}/{name}"
            problems += tree_differences(course.release / name, Path(tmp) / name, rel)
            if progress:
                progress(name)
    if course.release.exists():
        problems += [
            f"{RELEASE_DIR}/{p.name}: not a lesson of {LIST_NAME} (remove it)"
            for p in sorted(course.release.iterdir())
            if p.is_dir() and p.name not in course.assignments()
        ]
    problems += lesson_table_problems(course)
    for tree in [*(course.source_of(n) for n in assignments), course.release]:
        for path in course.notebooks(tree):
            problems += [p.replace(str(course.root) + "/", "") for p in outputs_in(path)]
    for name in assignments:
        problems += [
            f"{name}/{SOURCE_DIR}/{clash}: named like a student's run file ({run_files_glob(name)}): "
            "autograde would overwrite students' files with it; remove it"
            for clash in run_file_clashes(course.source_of(name), name)
        ]
    return problems


def run_file_clashes(source: Path, assignment: str) -> list[str]:
    """Files of an assignment's source folder named like students' run files, which autograde would overwrite."""
    pattern = run_files_glob(assignment)
    return sorted(str(p.relative_to(source)) for p in source.rglob("*") if fnmatch.fnmatch(p.name, pattern))
