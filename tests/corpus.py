"""An adversarial corpus of submissions for the real course: wrong answers, cheats, and correct but unusual ones.

A submission is one student's notebook of one assignment (and the `<a>_run*` files handed in beside it). Each is
data: the notebook is the student release with the reference solutions filled in (or the stubs left, `solved=False`)
and then some cells replaced (`edits`), an optional cell put in front of everything (`first_cell`), the run files
to write beside it, the points EVERY autograded cell must get, and one line saying what it tries.

The expected points are those of grading without a GPU (offline checks) in the grading pipeline where the
student's notebook runs in a sandbox that cannot read the instructor's files and whose lesson packages withhold the
reference answers (labcore.answers.reference), test cells only collect answers as data, and a separate trusted
process judges that data. So: nothing a kernel patches earns a point (at worst answers go missing); a schedule is
judged on its recorded trace (the same calls in every recording, or nothing); a dead kernel keeps the points of the
cells before it; stderr output does not zero a cell. tests/test_corpus.py grades them all end to end.

Each lesson's cases live in its own folder, as <lesson>/tests/corpus.py: POINTS (its graded cells and their points)
and submissions(corpus), which makes its submissions with this module (Submission, full, zero, and the builders below
that more than one lesson's cases use) and imports nothing of tests/. This module holds only that shared machinery
and gathers every lesson's cases through the list of lessons (labcore.lessons), so a lesson's cases join by its folder
alone; a listed lesson without a corpus file is missing from POINTS, which the coverage test names.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import nbformat

from labcore import lessons as _lessons

ROOT = Path(__file__).resolve().parents[1]

POINTS: dict[str, dict[str, float]] = {}  # every lesson's graded cells and their points, gathered below


def full(assignment: str, **points: float) -> dict[str, float]:
    """Every cell's full points, except those named."""
    unknown = set(points) - set(POINTS[assignment])
    assert not unknown, f"{assignment} has no graded cells {sorted(unknown)}"
    return {**POINTS[assignment], **points}


def zero(assignment: str, **points: float) -> dict[str, float]:
    """Zero for every cell, except those named."""
    return full(assignment, **{**dict.fromkeys(POINTS[assignment], 0), **points})


@dataclasses.dataclass(frozen=True)
class Submission:
    """One student's notebook of one assignment, what it tries, and what each autograded cell must score."""

    name: str  # the student id
    assignment: str
    tries: str  # one line: what it tries, and why it earns what it earns where that is not obvious
    points: Mapping[str, float]  # graded cell id -> points
    edits: Mapping[str, str] | None = dataclasses.field(default_factory=dict)  # cell id -> source; None: untouched
    solved: bool = True  # start from the reference solutions (else from the release's stubs)
    first_cell: str | None = None  # a code cell of the student's put before the first cell
    # code cells of the student's with nbgrader metadata of their own making, (metadata, source), put first
    made_up: tuple[tuple[Mapping[str, object], str], ...] = ()
    run_files: Callable[[Path], None] | None = None  # writes the `<a>_run*` files beside the notebook
    # cells whose points differ when the checker has a GPU (it measures instead of reading exports or the profile),
    # as measured on the H200 (profiles/h200/grading-2026-12-01/)
    live: Mapping[str, float] = dataclasses.field(default_factory=dict)
    # cells that offline are "pending a GPU" (labcore.pending: 0, said so everywhere; a GPU decides them)
    pending: tuple[str, ...] = ()
    # the handed-in notebook changed as a whole, after the edits (an editor that drops metadata, deleted cells)
    reshape: Callable[[nbformat.NotebookNode], None] | None = None

    def __post_init__(self) -> None:
        assert set(self.points) == set(POINTS[self.assignment]), f"{self.name}: points for every graded cell"
        assert set(self.live) <= set(self.points), f"{self.name}: live points only for graded cells"
        assert all(self.points[c] == 0 for c in self.pending), f"{self.name}: a cell pending a GPU scores 0 offline"

    def expected(self, *, gpu: bool) -> dict[str, float]:
        """The points of every graded cell offline, or with a GPU."""
        return {**self.points, **(self.live if gpu else {})}

    @property
    def total(self) -> float:
        return sum(self.points.values())

    def notebook(self) -> nbformat.NotebookNode:
        """The release, with the reference solutions filled in (when solved), then the edits applied."""
        release = nbformat.read(ROOT / "course" / self.assignment / f"{self.assignment}.ipynb", as_version=4)
        if self.edits is None:
            return release
        ids = {cell.get("id") for cell in release.cells}
        assert set(self.edits) <= ids, f"{self.name}: no cells {sorted(set(self.edits) - ids)} in the release"
        solutions = ROOT / self.assignment / "solutions" / f"{self.assignment}.ipynb"
        solved = {c["id"]: c for c in nbformat.read(solutions, as_version=4).cells}
        for cell in release.cells:
            if self.solved and cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = "\n".join(
                    line
                    for line in solved[cell["id"]].source.splitlines()
                    if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
                )
            cell.source = self.edits.get(cell["id"], cell.source)
        for index, (meta, source) in enumerate(reversed(self.made_up)):
            nbgrader = {"cell_type": "code", "schema_version": 3, "task": False, **meta}  # as a real cell's reads
            cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": nbgrader})
            cell["id"] = f"students-made-up-{index}"
            release.cells.insert(0, cell)
        if self.first_cell is not None:
            first = nbformat.v4.new_code_cell(self.first_cell)
            first["id"] = "students-first-cell"
            release.cells.insert(0, first)
        if self.reshape is not None:
            self.reshape(release)
        return release

    def write(self, folder: Path) -> None:
        """SUBMISSIONS/<student>/: the notebook and its run files, as a student hands them in."""
        folder.mkdir(parents=True)
        # JSON's ASCII escapes, as any editor may save them: a lone surrogate in a cell stays a valid notebook
        (folder / f"{self.assignment}.ipynb").write_text(json.dumps(self.notebook(), indent=1) + "\n")
        if self.run_files is not None:
            self.run_files(folder)


# -- builders that more than one lesson's cases use -----------------------------------------------------------------


def reads_solutions(assignment: str, anchor: str) -> str:
    """A cell defining _instructors(cell_id): the instructor's solution cell, searched for on this machine."""
    return f'''import json
import os
from pathlib import Path

import {anchor}


def _starts():
    yield Path.cwd()
    try:
        yield Path.home()
    except (KeyError, RuntimeError):
        pass
    yield Path("/work")
    yield Path({anchor}.__file__).resolve().parent
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            yield Path(entry).resolve()


def _candidates(assignment):
    for start in _starts():
        for folder in (start, *start.parents):
            for sub in ("solutions", "source"):
                yield folder / sub / assignment / f"{{assignment}}.ipynb"
            yield folder / assignment / "solutions" / f"{{assignment}}.ipynb"
    for base in ("/work", "/home", "/srv", "/opt"):
        yield from Path(base).glob(f"*/solutions/{{assignment}}/{{assignment}}.ipynb")
        yield from Path(base).glob(f"*/{{assignment}}/solutions/{{assignment}}.ipynb")


def _instructors(cell_id, assignment="{assignment}"):
    """The source of one solution cell of the instructor's notebook, wherever this machine keeps it."""
    for path in _candidates(assignment):
        try:
            cells = json.loads(path.read_text())["cells"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for cell in cells:
            text = "".join(cell.get("source", ""))
            if cell.get("id") == cell_id and "BEGIN SOLUTION" in text:
                return text
    return None'''


def stolen(cell_id: str, stub: str) -> str:
    """A cell that runs the instructor's solution of cell_id where reads_solutions found it, else the stub."""
    return f"""_found = _instructors("{cell_id}")
if _found:
    exec(_found)
else:
{"".join("    " + line + chr(10) for line in stub.splitlines())}"""


def release_source(assignment: str, cell_id: str) -> str:
    """The source of one cell of the student release, as handed out."""
    release = nbformat.read(ROOT / "course" / assignment / f"{assignment}.ipynb", as_version=4)
    return next(c.source for c in release.cells if c.get("id") == cell_id)


# A first cell's end: its forged answers (_forged, made at home) filed on every fd the cell can open and into every
# answers file it can name
FORGE_SEND = """
_text = "".join(_json.dumps({"key": k, "value": encode(v)}) + "\\n" for k, v in _forged).encode()
for _fd in map(int, _os.listdir("/proc/self/fd")):  # the report pipe, the logs: every fd the cell can find
    try:
        _os.write(_fd, _text)
    except OSError:
        pass
for _top in ("/sandbox/out", "/sandbox/work", "."):  # and every answers file it could name
    for _root, _dirs, _files in _os.walk(_top):
        for _where in [_root, *(_os.path.join(_root, d) for d in _dirs)]:
            try:
                with open(_os.path.join(_where, "answers.jsonl"), "a") as _out:
                    _out.write(_text.decode())
            except OSError:
                pass
"""

# A student's first cell: every failed check in its own kernel says it passed, and the checks lose their verdicts
VERDICT_SAYS_PASSED = """import labcore.checking as _checking

_checking.verdict = lambda *args, **kwargs: ["\u2713 passed"]
_checking.verdicts = lambda namespace, prefix="check_": None"""


# -- the course's cells lost from the notebook: nbgrader finds a cell by its metadata alone --------------------


def strip_metadata(nb: nbformat.NotebookNode) -> None:
    """As an editor that keeps only what it knows (VS Code's or Colab's save, a script): nbgrader's cell metadata
    gone, cell ids kept."""
    for cell in nb.cells:
        for key in ("nbgrader", "deletable", "editable"):
            cell.metadata.pop(key, None)


def strip_metadata_and_ids(nb: nbformat.NotebookNode) -> None:
    """Older still: format 4.4, no cell ids, no nbgrader metadata; the cells' text as handed out."""
    strip_metadata(nb)
    nb.nbformat_minor = 4
    for cell in nb.cells:
        cell.pop("id", None)


def deleting(*ids: str) -> Callable[[nbformat.NotebookNode], None]:
    def delete(nb: nbformat.NotebookNode) -> None:
        nb.cells = [cell for cell in nb.cells if cell.get("id") not in ids]

    return delete


def solution(assignment: str, cell_id: str) -> str:
    """The reference solution of one cell, as the corpus fills it in (markers dropped)."""
    cells = nbformat.read(ROOT / assignment / "solutions" / f"{assignment}.ipynb", as_version=4).cells
    source = next(c.source for c in cells if c.get("id") == cell_id)
    return "\n".join(
        line for line in source.splitlines() if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line
    )


# Every input a graded question hands my functions kept, and printed by a later cell of mine (a hidden test's cell
# shows only its verdict, mine show what they print): the hidden tests' drawn numbers among them. The feedback scan
# deletes a page that shows one; the points are the answers'
KEEPS_INPUTS = """

import builtins

_asked_inputs = builtins.__dict__.setdefault("_asked_inputs", [])


def _keeping(name, fn):
    def kept(*args):
        _asked_inputs.append((name, [f"{len(a)} ids" if hasattr(a, "__len__") else a for a in args]))
        return fn(*args)

    return kept
"""
PRINTS_INPUTS = """import builtins

print("asked with:", builtins.__dict__.get("_asked_inputs", []))

"""


# The student's side: what a student's own kernel checks against (each lesson's public.json, yardsticks of the same
# run) is no answer key. An answer that returns the shipped values at the visible cases, and anything elsewhere, passes
# its cell while the student works and scores 0 when graded (the hidden cases and the drawn ones); a correct schedule
# whose host issues all of one pair's chunks first loses the ratio at 4 MiB, offline (the simulator charges each call's
# enqueue) as live (1.16x the reference on an H100).
def public_only(lesson: str, table: str, signature: str, args: str, elsewhere: str = "1.0") -> str:
    """An exercise answered from the lesson's public.json alone: its value at a visible case, `elsewhere` otherwise."""
    return f"""import json
import pathlib

import {lesson}


def _shipped(name):
    try:
        rows = json.loads((pathlib.Path({lesson}.__file__).parent / "public.json").read_text())[name]
    except (OSError, KeyError, ValueError):
        return {{}}
    return {{json.dumps(case): value for case, value in rows}}


_SHIPPED = _shipped({table!r})


def {signature}:
    return _SHIPPED.get(json.dumps([{args}]), {elsewhere})"""


# -- every lesson's cases, through the list --------------------------------------------------------------------------

CORPUS: tuple[Submission, ...] = ()
for _lesson in _lessons.lessons():
    if not (_lesson.tests / "corpus.py").is_file():
        continue  # not in POINTS: the coverage test names the lesson
    _module = importlib.import_module(f"{_lesson.name}.tests.corpus")
    POINTS[_lesson.name] = dict(_module.POINTS)
    CORPUS = (*CORPUS, *_module.submissions(sys.modules[__name__]))
BY_NAME = {s.name: s for s in CORPUS}
assert len(BY_NAME) == len(CORPUS), "submission names are unique"
