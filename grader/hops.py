"""What crosses each hop of grading a submission, as typed records (site/architecture.md, "What crosses each hop").

A submission's grade travels through processes that share no memory: the planner and the checker answer the
worker on a pipe, the sandbox's answers come back through the zygote, a worker's results cross Dask to the
coordinator, and the coordinator files them as JSON beside the grading directory before nbgrader records the
autograded notebook. Each of those is one record here: a TypedDict (JSON crosses the boundary, so a dict it stays),
made only by the functions below so that no hop invents a field, and the records that are filed carry `version`
(HOPS_VERSION): a stored result of another version is graded again rather than read as this one.

    planner    -> worker        Planned      the questions each test cell asks (labcore.answers.PlannedQuestion)
    sandbox    -> worker        answer lines (labcore.answers.AnswerLine), one per planned question, as data
    worker     -> worker/Dask   Extracted    what the sandbox ran: each cell's outputs, where it stopped, answers
    checker    -> worker        Judged       each test cell's outputs: what the checks decided
    worker     -> coordinator   Outcome      Extracted (less the answers) and Checked
    coordinator -> disk         Stored       the Outcome, the run's seed and the submission's key
    coordinator -> gradebook    the autograded notebook, its TIMES_KEY metadata a Times record (grader.preprocessors)
"""

from __future__ import annotations

from typing import Any, TypedDict

HOPS_VERSION = 1  # raised whenever a record below changes shape

Outputs = list[dict[str, Any]]  # a cell's outputs in nbformat's JSON form


class Lost(TypedDict, total=False):
    """Where the sandbox lost a run: the cell (its index; None before any), why (sandbox, stuck, disk, stopped, or
    the kernel's death) and the exit status in words."""

    cell: int | None
    why: str
    status: str


class Extracted(TypedDict, total=False):
    """What the sandbox extracted from one submission (grader.warm.WarmSandbox.run, grader.warm.extract)."""

    version: int
    cells: dict[str, Outputs]  # cell index -> what that cell printed and showed in the sandbox
    answers: str  # the answers file the checker reads (answer lines); dropped before the result leaves the worker
    timed_out: list[int]  # cells interrupted at the time limit
    lost: Lost | None  # where the run was lost, if it was
    reason: str  # the sandbox's own trouble ('' when none): the checker then judges no answer of this run
    answers_refused: str  # why the zygote refused this run's answers ('' when it did not)
    sandbox_s: float
    drawn: list[list[float]]  # the hidden questions' inputs, for the feedback scan (never sent to the sandbox)


class Planned(TypedDict):
    """The planner's reply (grader.checker.plan): each test cell's questions, by cell index."""

    questions: dict[str, list[dict[str, Any]]]


class Judged(TypedDict):
    """The checker's reply for one submission (grader.checker.judge): what each test cell's checks decided, as the
    cell's outputs (a verdict printed with `[check]`, the error that fails it, labcore.checking.Result outputs)."""

    cells: dict[str, Outputs]
    cells_s: dict[str, float]
    checker_s: float


class Checked(TypedDict, total=False):
    """What the trusted checker decided of one submission (grader.warm.WarmChecker.run)."""

    version: int
    verdicts: dict[str, Outputs]  # test cell index -> its outputs in the checker
    trouble: str  # why the checker could not judge ('' when it did): every test cell says so
    checker_s: float | None
    cells_s: dict[str, float]
    checker_cold: bool  # the checker process was started for this submission


class Outcome(TypedDict, total=False):
    """One submission's result as it crosses Dask to the coordinator (grader.warm.check), and as it is stored with
    the grading's time limit and which program the sandbox ran (grader.classgrade.store)."""

    version: int
    extracted: Extracted
    checked: Checked
    timeout_s: int
    whole: bool


class Stored(TypedDict, total=False):
    """DIR/.grading/<assignment>/<student>/<notebook>.json: a result, or the error of a try that has none."""

    version: int
    key: str  # digest of the sanitized notebook, run files, course code and feedback asked for
    seed: int
    result: Outcome
    error: str


class Times(TypedDict):
    """Where a submission's grading time went: the autograded notebook's TIMES_KEY metadata (grader.layout)."""

    sandbox_s: float | None
    checker_s: float | None
    waited_s: float
    checker_cold: bool
    checker_cells_s: dict[str, float]  # grade id -> seconds its checks took


def unextracted(reason: str) -> Extracted:
    """The sandbox ran nothing of this submission, and why."""
    return extracted({}, "", reason=reason)


def extracted(
    cells: dict[str, Outputs],
    answers: str,
    *,
    timed_out: list[int] | None = None,
    lost: Lost | None = None,
    reason: str = "",
    answers_refused: str = "",
    sandbox_s: float = 0,
) -> Extracted:
    """What the sandbox extracted, every field present."""
    return Extracted(
        version=HOPS_VERSION,
        cells=cells,
        answers=answers,
        timed_out=timed_out or [],
        lost=lost,
        reason=reason,
        answers_refused=answers_refused,
        sandbox_s=sandbox_s,
    )


def checked(judged: Judged | None, *, trouble: str = "", cold: bool = False) -> Checked:
    """What the checker decided: its reply, or the trouble that kept it from judging."""
    if judged is None:
        return Checked(version=HOPS_VERSION, verdicts={}, trouble=trouble, checker_s=None, cells_s={})
    return Checked(
        version=HOPS_VERSION,
        verdicts=judged["cells"],
        trouble="",
        checker_s=judged["checker_s"],
        cells_s=judged.get("cells_s", {}),
        checker_cold=cold,
    )


def outcome(extracted: Extracted, checked: Checked) -> Outcome:
    """The submission's result as it leaves the worker: the answers stay behind (the verdicts are what they came to,
    and the coordinator neither needs nor stores them)."""
    kept = Extracted(**{k: v for k, v in extracted.items() if k != "answers"})  # type: ignore[typeddict-item]
    return Outcome(version=HOPS_VERSION, extracted=kept, checked=checked)


def current(stored: Stored) -> bool:
    """Whether a stored record holds a result of this version (one of another is graded again)."""
    return "result" in stored and stored.get("version") == HOPS_VERSION
