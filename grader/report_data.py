"""The class report's data: why cells failed (reasons counted once however the numbers fell), the gradebook's
scores and states, what the checks measured (labcore.checking.Result, read from the test cells' outputs as data),
the leaderboard of a ranked result, and the CSV of every measured number.

Nothing here reads a number out of a sentence: a check records what it measured, the grader carries it into the
test cell's outputs (grader.cells), and `measured_in_cell` reads it back.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.grading import GradingDir, read_notebook
from grader.layout import COURSE_ID, GRADEBOOK, NOT_GRADED, PENDING_GPU, TIMED_OUT
from labcore.checking import Result, results_in
from labcore.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd
    from nbformat.notebooknode import NotebookNode

ANONYMOUS = "anonymous"  # how a student is named with --anonymous

# -- reasons -------------------------------------------------------------------------------------------------

PATH = re.compile(r"(?<![\w.~/])~?/(?:[\w.@+-]+/)*[\w.@+-]+/?|(?<![\w.])~(?=\s|$)")
HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
TIMESTAMP = re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")  # not the digits of a name (H200, day54)


def scrub(text: str, student: str = "") -> str:
    """A message as the page may show it: absolute paths, and the student's id where quoted, replaced.

    Only a quoted id ('ann', as nbgrader's messages name a student): a short id may also be a word of the message.
    """
    text = PATH.sub("<path>", text)
    return re.sub(rf"(['\"]){re.escape(student)}\1", r"\1<student>\1", text) if student else text


def first_line(text: str, student: str = "") -> str:
    """A message's first line for counting: scrubbed, and its numbers (times, addresses) as '#'."""
    lines = str(text).strip().splitlines()
    return NUMBER.sub("#", HEX.sub("#", TIMESTAMP.sub("#", scrub(lines[0], student)))) if lines else ""


def reason(ename: str, evalue: str, student: str = "") -> str:
    """The reason a cell failed, for counting: the error's name and its message's first line, numbers as '#'."""
    first = first_line(evalue, student)
    return f"{ename}: {first}" if first else ename


def cell_error(cell: NotebookNode) -> tuple[str, str] | None:
    """(ename, evalue) of the error that failed a cell: the timeout, not the interrupt that came with it."""
    errors = [
        (o.get("ename", ""), str(o.get("evalue", ""))) for o in cell.get("outputs", []) if o.output_type == "error"
    ]
    for ename, evalue in errors:
        if ename == TIMED_OUT:
            return ename, evalue
    errors = [e for e in errors if e[0] != "KeyboardInterrupt"] or errors
    return errors[0] if errors else None


# -- what the checks measured --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Measured:
    """One number a check measured for one student, and the test cell it came from."""

    assignment: str
    notebook: str
    cell: str
    student: str
    result: Result


def measured_in_cell(cell: NotebookNode) -> list[Result]:
    """Every result a test cell's checks recorded, in output order (labcore.checking.results_in)."""
    return results_in(cell.get("outputs", []))


def student_results(grading: GradingDir, assignment: str, notebook: str, student: str) -> list[Result]:
    """What the checks measured in one student's autograded notebook, test cells in order ([] without one)."""

    path = grading.root / "autograded" / student / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        return []
    cells = read_notebook(path).cells
    graded = [c for c in cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    return [r for c in graded if not c.metadata["nbgrader"].get("solution") for r in measured_in_cell(c)]


def result_words(result: Result) -> str:
    """One line for a student: the number, its threshold, the reference's value, the noise and the source."""
    parts = [f"{result.value:.3f} {result.quantity}"]
    if result.threshold is not None:
        side = "at most" if result.passes_below else "at least"
        parts.append(f"{'met' if result.passed else 'missed'}: {side} {result.threshold:g}")
    if result.reference is not None:
        parts.append(f"the reference {result.reference:.3f}")
    if result.noise is not None:
        parts.append(f"noise +-{result.noise:.1%}")
    parts.append(result.source)
    return f"{result.check} ({result.setting}): " + ", ".join(parts)


CSV_FIELDS = ["assignment", "notebook", "cell", "student", *(f.name for f in dataclasses.fields(Result)), "passed"]


def write_csv(found: list[Measured], path: Path, *, anonymous: bool = False) -> Path:
    """Every measured number, one row each, with the result's fields (what `read_csv` reads back)."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for m in found:
            row = {"assignment": m.assignment, "notebook": m.notebook, "cell": m.cell}
            row["student"] = ANONYMOUS if anonymous else m.student
            passed = m.result.passed
            row.update(m.result.to_dict(), passed="" if passed is None else str(passed).lower())
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return path


def read_csv(path: Path) -> list[Measured]:
    """The rows `write_csv` wrote, as measured numbers again."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    found = []
    for row in rows:
        data: dict[str, Any] = {f.name: row[f.name] for f in dataclasses.fields(Result)}
        for name in ("reference", "threshold", "noise"):
            data[name] = None if data[name] == "" else data[name]
        data["passes_below"] = data["passes_below"] == "True"
        data["ranked"] = data["ranked"] == "True"
        found.append(Measured(row["assignment"], row["notebook"], row["cell"], row["student"], Result.from_dict(data)))
    return found


# -- the leaderboard -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Standing:
    """A student's place on a leaderboard: places of students tied within the noise are equal."""

    place: int
    student: str
    result: Result
    tied: bool  # within the noise of another student's number
    others: tuple[Result, ...]  # what else the same cell measured for the student (the judged ratio)


def within_noise(a: Result, b: Result) -> bool:
    """Two numbers no measurement could tell apart: closer than the larger of their relative noises."""
    noise = max(a.noise or 0.0, b.noise or 0.0)
    return abs(a.value - b.value) <= noise * max(abs(a.value), abs(b.value))


def leaderboard(found: list[Measured], check: str, *, anonymous: bool = False) -> list[Standing]:
    """The students ranked by the results of `check`, best first (lowest when it passes below its threshold);
    each starts a new place unless it lies within the noise of the first of the place before it."""
    mine = [m for m in found if m.result.check == check]
    if not mine:
        return []
    lower = mine[0].result.passes_below
    ordered = sorted(mine, key=lambda m: (m.result.value if lower else -m.result.value, m.student))
    places: list[list[Measured]] = []
    for m in ordered:
        if places and within_noise(places[-1][0].result, m.result):
            places[-1].append(m)
        else:
            places.append([m])
    standings, ahead = [], 0
    for group in places:
        for m in group:
            others = tuple(
                o.result
                for o in found
                if (o.assignment, o.cell, o.student) == (m.assignment, m.cell, m.student) and o.result.check != check
            )
            name = ANONYMOUS if anonymous else m.student
            standings.append(Standing(ahead + 1, name, m.result, len(group) > 1, others))
        ahead += len(group)
    return standings


def ranked_checks(found: list[Measured]) -> list[str]:
    """The checks a leaderboard ranks by: those whose results say they rank (Result.ranked)."""
    return list(dict.fromkeys(m.result.check for m in found if m.result.ranked))


# -- reading a grading directory -----------------------------------------------------------------------------


def _ordered_grade_ids(grading: GradingDir, assignment: str, notebook: str) -> list[str]:
    """Grade ids in the order of the source notebook."""

    path = grading.root / "source" / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        return []
    nb = read_notebook(path)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


@dataclasses.dataclass
class ClassData:
    """What the report shows, read from the gradebook and the autograded notebooks."""

    cells: pd.DataFrame  # the Specs: assignment, notebook, cell, points, written, order
    grades: pd.DataFrame  # assignment, notebook, cell, student, score, by_hand, unanswered, failed, gpu (pending)
    states: pd.DataFrame  # assignment, student, state ('graded', 'not submitted', 'not graded (...)')
    failures: pd.DataFrame  # assignment, cell, student, reason, example
    measured: list[Measured]  # in the order of the cells that record them


def submission_state(
    grading: GradingDir, assignment: str, notebooks: list[str], student: str, in_gradebook: bool
) -> str:
    """'graded', 'not submitted' or 'not graded (why)' for one student and assignment."""

    submitted = (grading.root / "submitted" / student / assignment).is_dir()
    if not submitted and not in_gradebook:
        return "not submitted"
    paths = [grading.root / "autograded" / student / assignment / f"{n}.ipynb" for n in notebooks]
    if not in_gradebook or not all(p.is_file() for p in paths):
        return "not graded (autograde has not recorded it)"
    for path in paths:
        for cell in read_notebook(path).cells:
            error = cell_error(cell) if cell.cell_type == "code" else None
            if error and error[0] == NOT_GRADED:
                return f"not graded ({first_line(error[1], student)})"
    return "graded"


def pending_gpu(grading: GradingDir, assignment: str, notebooks: list[str], student: str) -> dict[str, float]:
    """{grade_id: points} of the test cells a check left pending a GPU (labcore.pending: PendingGPU in the
    autograded notebook's error output): 0 until graded on a GPU."""

    paths = [grading.root / "autograded" / student / assignment / f"{name}.ipynb" for name in notebooks]
    return pending_gpu_cells([read_notebook(path) for path in paths if path.is_file()])


def pending_gpu_cells(autograded: Iterable[Any]) -> dict[str, float]:
    """pending_gpu of autograded notebooks already read."""
    found = {}
    for nb in autograded:
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            error = cell_error(cell) if cell.cell_type == "code" and meta.get("grade") else None
            if error and error[0] == PENDING_GPU:
                found[meta["grade_id"]] = float(meta.get("points") or 0)
    return found


def pending_gpu_words(cells: dict[str, float]) -> str:
    """'pending a GPU: test_publish (3 points)': how every surface names such cells ('' when none)."""
    if not cells:
        return ""
    return f"pending a GPU: {', '.join(cells)} ({sum(cells.values()):g} points)"


@dataclasses.dataclass(frozen=True)
class Spec:
    """A graded cell of an assignment as the gradebook knows it."""

    assignment: str
    notebook: str
    cell: str
    points: float
    written: bool  # an answer graded by hand (a grade cell that is also a solution cell)
    order: int  # its place in the source notebook


def _specs(grading: GradingDir, assignment: Any) -> list[Spec]:
    """The grade cells of a gradebook assignment, in notebook order."""
    specs = []
    for nb in assignment.notebooks:
        written = {c.name for c in nb.solution_cells}
        order = _ordered_grade_ids(grading, assignment.name, nb.name)
        for c in nb.grade_cells:
            rank = order.index(c.name) if c.name in order else len(order)
            specs.append(Spec(assignment.name, nb.name, c.name, float(c.max_score or 0), c.name in written, rank))
    return sorted(specs, key=lambda s: (s.notebook, s.order))


def _graded(gb: Any, grading: GradingDir, student: str, specs: list[Spec]) -> tuple[list, list, list]:
    """One graded submission: its grade rows, failure rows and measured numbers ((place, index, Measured))."""

    grades, failures, measured = [], [], []
    for notebook in dict.fromkeys(s.notebook for s in specs):
        assignment = specs[0].assignment
        nb = read_notebook(grading.root / "autograded" / student / assignment / f"{notebook}.ipynb")
        shown = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
        scored = {g.name: g for g in gb.find_submission_notebook(notebook, assignment, student).grades}
        for spec in (s for s in specs if s.notebook == notebook and s.cell in scored):
            grade, cell = scored[spec.cell], shown.get(spec.cell)
            by_hand = grade.manual_score is not None
            unanswered = spec.written and not by_hand and not grade.needs_manual_grade  # nbgrader's 0 for no answer
            error = cell_error(cell) if cell is not None and not spec.written else None
            waiting = error is not None and error[0] == PENDING_GPU  # neither passed nor failed: not decided
            failed = not spec.written and not waiting and (error is not None or (grade.score or 0) < spec.points)
            row = (assignment, notebook, spec.cell, student, grade.score, by_hand, unanswered, failed, waiting)
            grades.append(row)
            if failed:
                ename, evalue = error or ("no error shown", f"scored {grade.score or 0:g} of {spec.points:g}")
                example = scrub(f"{ename}: {evalue.strip()}" if evalue.strip() else ename)
                failures.append((assignment, spec.cell, student, reason(ename, evalue, student), example))
            if cell is not None and not spec.written:
                place = (notebook, spec.order)
                found = measured_in_cell(cell)
                measured += [
                    (place, i, Measured(assignment, notebook, spec.cell, student, r)) for i, r in enumerate(found)
                ]
    return grades, failures, measured


def read_class(grading: GradingDir) -> ClassData:
    """Cells, grades, submission states, failure reasons and measured numbers of every assignment set up."""
    import pandas as pd  # a second to import: --help and the other commands do not wait for it
    from nbgrader.api import Gradebook, MissingEntry  # seconds to import: only once there is a gradebook to read

    if not (grading.root / GRADEBOOK).is_file():
        raise UsageError(f"{grading.root} has no {GRADEBOOK}: make it with python -m grader setup {grading.root}")
    specs, grades, states, failures, measured = [], [], [], [], []
    with Gradebook(grading.db_url, COURSE_ID) as gb:
        known = {a.name: a for a in gb.assignments}
        students = sorted({s.id for s in gb.students} | {p.name for p in (grading.root / "submitted").glob("*/")})
        for assignment in (a for a in grading.assignments() if a in known):
            mine = _specs(grading, known[assignment])
            specs += mine
            notebooks = list(dict.fromkeys(s.notebook for s in mine))
            for student in students:
                try:
                    in_gradebook = bool(gb.find_submission(assignment, student))
                except MissingEntry:
                    in_gradebook = False
                state = submission_state(grading, assignment, notebooks, student, in_gradebook)
                states.append((assignment, student, state))
                if state == "graded":
                    found = _graded(gb, grading, student, mine)
                    grades += found[0]
                    failures += found[1]
                    measured += [((assignment, *place), *rest) for place, *rest in found[2]]
    return ClassData(
        pd.DataFrame([dataclasses.astuple(s) for s in specs], columns=[f.name for f in dataclasses.fields(Spec)]),
        pd.DataFrame(
            grades,
            columns=["assignment", "notebook", "cell", "student", "score", "by_hand", "unanswered", "failed", "gpu"],
        ),
        pd.DataFrame(states, columns=["assignment", "student", "state"]),
        pd.DataFrame(failures, columns=["assignment", "cell", "student", "reason", "example"]),
        [m for *_, m in sorted(measured, key=lambda x: x[:2])],
    )


def failure_table(data: ClassData, assignment: str) -> pd.DataFrame:
    """(cell, reason) -> count, example and students, most common first; submissions not graded come in too."""
    import pandas as pd  # see read_class

    fails = data.failures[data.failures.assignment == assignment]
    states = data.states[(data.states.assignment == assignment) & (data.states.state != "graded")]
    rows = [fails] if not fails.empty else []
    if not states.empty:
        rows.append(states.assign(cell="(whole submission)", reason=states.state, example=""))
    if not rows:
        return pd.DataFrame(columns=["cell", "reason", "n", "example", "students"])
    both = pd.concat(rows, ignore_index=True)
    table = both.groupby(["cell", "reason"], sort=False).agg(
        n=("student", "size"), example=("example", "first"), students=("student", list)
    )
    cells = data.cells[data.cells.assignment == assignment]
    order = dict(zip(cells.cell, zip(cells.notebook, cells.order, strict=True), strict=True))
    table = table.reset_index()
    table["place"] = [order.get(c, ("", -1)) for c in table.cell]  # ties: whole submissions, then notebook order
    return table.sort_values(["n", "place"], ascending=[False, True], kind="stable").drop(columns="place")
