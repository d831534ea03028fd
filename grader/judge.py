"""The trusted checker: the graded test cells run against the answers the sandbox brought back, as data.

It runs in a fresh kernel of its own that never runs a line of the student's: a notebook made of

1. the assignment's `setup` cell (locked; the imports the test cells use),
2. one cell binding every other name the test cells use to a placeholder, `labcore.answers.Answer(name)`:
   the student's functions and strings, and the lesson's variables such as `record`, which checks never
   take from the notebook while grading,
3. the test cells themselves, visible and hidden, exactly as nbgrader restored them from the gradebook,

executed with LABCORE_ANSWERS=judge:FILE (grader.execute, in a folder holding copies of the answers file and
the student's run files). Each check reads the student's answers back and judges them: it replays a schedule's
trace on the GPU, poisons and verifies its timed output and times it itself, compiles CUDA source to PTX, or,
without a GPU, replays the trace on the recording fake and the simulator or reads the student's exports.
Its outputs become the test cells' outputs in the autograded notebook, and so the gradebook's points.

Before the sandbox runs (`grade`, the whole-notebook path of `--feedback now`), the same cells run once in plan role
(`plan`: grader.checker, trusted, no GPU) to record the questions they ask; the sandbox gets the notebook with each
test cell replaced by one asking its planned questions (`asking_notebook`), so no test cell's text reaches it.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import dataclasses
import fcntl
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from grader.layout import KERNEL_DIED, KERNEL_STUCK, NOT_GRADED, NOT_RUN, TIMED_OUT, TIMES_KEY
from grader.outputs import error_output, safe_cells
from grader.program import SETUP_CELL, checker_program, grade_id, is_solution, is_test, names
from grader.runner import course_env, kill_tree
from grader.sandbox import SandboxRun, run_notebook
from labcore.answers import ENV, MAX_FILE_BYTES, SEED_ENV

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

STARTUP_S = 60  # a kernel's start and shutdown


@dataclasses.dataclass
class Checked:
    """What the checker gave back: its test cells by grade id, or the trouble; seconds waited for the GPU, run."""

    cells: dict[str, NotebookNode]
    trouble: str
    waited_s: float
    checker_s: float


@contextlib.contextmanager
def _held(lock: Path | None) -> Iterator[None]:
    if lock is None:
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def judge_notebook(nb: NotebookNode) -> NotebookNode:
    """The checker's notebook for one submission: setup, placeholders, the test cells (metadata kept)."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    setup = [
        c
        for c in nb.cells
        if c.cell_type == "code" and grade_id(c) == SETUP_CELL and c.metadata["nbgrader"].get("locked")
    ][:1]
    tests = [c for c in nb.cells if is_test(c)]
    _, defined = names("\n".join(c.source for c in setup))
    wanted: set[str] = set()
    for cell in tests:
        read, _ = names(cell.source)
        wanted |= read
    placeholders = sorted(wanted - defined - set(dir(builtins)))
    binding = "from labcore.answers import Answer as _Answer\n" + "".join(
        f"{name} = _Answer({name!r})\n" for name in placeholders
    )
    out = nbformat.v4.new_notebook(metadata=nb.metadata)
    out.cells = [
        *(nbformat.v4.new_code_cell(c.source) for c in setup),
        nbformat.v4.new_code_cell(binding),
        *(nbformat.v4.new_code_cell(c.source, metadata=c.metadata) for c in tests),
    ]
    return out


def plan(nb: NotebookNode, *, scratch: Path, limit_s: float, seed: int) -> dict[str, list]:
    """The questions nb's test cells ask, by cell index: a one-job grader.checker in plan role (trusted, no GPU)."""
    scratch.mkdir(parents=True, exist_ok=True)
    job = {"plan": True, "program": checker_program(nb).to_json(), "seed": seed}
    env = {**course_env(), "MPLBACKEND": "Agg", "CUDA_VISIBLE_DEVICES": ""}
    env.pop(ENV, None)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "grader.checker"],
            input=json.dumps(job) + "\n",
            capture_output=True,
            text=True,
            cwd=scratch,
            env=env,
            timeout=limit_s,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"planning the test cells' questions ran past {limit_s:.0f} s") from None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) < 2:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"planning the test cells' questions failed ({tail[:300]})")
    return json.loads(lines[1])["questions"]


ASK_CELL = "from labcore.answers import ask_filed as _ask_filed\n\n_ask_filed(__import__('json').loads({text!r}))\n"


def asking_notebook(nb: NotebookNode, questions: dict[str, list]) -> NotebookNode:
    """nb as the whole-notebook sandbox runs it: each test cell's source replaced by a cell asking its planned
    questions, so no test cell's text (hidden tests least of all) reaches the sandbox."""
    sent = copy.deepcopy(nb)
    for index, cell in enumerate(sent.cells):
        if is_test(cell):
            cell.source = ASK_CELL.format(text=json.dumps(questions.get(str(index), [])))
    return sent


def judge(
    nb: NotebookNode,
    *,
    answers: Path,
    run_files: list[Path],
    scratch: Path,
    timeout_s: int,
    limit_s: float,
    seed: int,
    lock: Path | None = None,
) -> Checked:
    """The checker's executed test cells by grade id, or why it did not finish, and how long it waited and ran.

    With `lock`, the checker runs only while it holds that file's lock: on a GPU, checkers of submissions graded
    side by side take turns, so that none disturbs another's timings (their sandboxes need no GPU and overlap).
    """
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    scratch.mkdir(parents=True)
    for path in run_files:
        shutil.copy2(path, scratch / path.name)
    copied = scratch / "answers.jsonl"
    if answers.is_file() and answers.stat().st_size <= MAX_FILE_BYTES:
        shutil.copyfile(answers, copied)
    nbformat.write(judge_notebook(nb), scratch / "judge.ipynb")
    env = {**course_env(), ENV: f"judge:{copied}", SEED_ENV: str(seed), "MPLBACKEND": "Agg"}
    argv = [sys.executable, "-m", "grader.execute", "judge.ipynb", "judged.ipynb", f"--timeout={timeout_s}"]
    asked = time.perf_counter()
    with open(scratch / "judge.log", "w") as log, _held(lock):
        began = time.perf_counter()  # the checker's own time starts here, after any wait for the GPU
        child = subprocess.Popen(
            argv, cwd=scratch, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = child.wait(limit_s)
        except subprocess.TimeoutExpired:
            kill_tree(child.pid)
            child.wait()
            code = None
        ended = time.perf_counter()
    checked = Checked({}, "", round(began - asked, 2), round(ended - began, 2))
    done = scratch / "judged.ipynb"
    if code is None:
        checked.trouble = f"the checker ran past its {limit_s:.0f} s budget"
    elif code != 0 or not done.is_file():
        tail = (scratch / "judge.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        checked.trouble = f"the checker failed ({tail[0][:300]})"
    else:
        checked.cells = {grade_id(c): c for c in nbformat.read(done, as_version=4).cells if is_test(c)}
    return checked


# -- one submission, both processes --------------------------------------------------------------------------

LOST = (KERNEL_DIED, KERNEL_STUCK, NOT_RUN, TIMED_OUT)  # the sandbox never reached, or never finished, the cell
WITHHELD_NOTE = (
    "(not run while grading: this lesson cell calls the lesson's reference answers, which are withheld from the "
    "sandbox that runs your notebook; your own run shows its output)\n"
)
STOPPED_NOTE = "(this lesson cell stopped while grading, {error}; lesson cells are not graded)\n"


def budget_s(nb: NotebookNode, timeout_s: int) -> float:
    """How long a run of this notebook may take in all: the per-cell limit for each code cell, and start-up."""
    return timeout_s * (sum(c.cell_type == "code" for c in nb.cells) + 1) + STARTUP_S


def grade(
    nb: NotebookNode,
    *,
    folder: Path,
    library: Path,
    scratch: Path,
    timeout_s: int,
    seed: int,
    checker_lock: Path | None = None,
) -> NotebookNode:
    """Fill nb's outputs: the sandbox's for the student's and the lesson's cells, the checker's for test cells."""
    run_files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".ipynb") if folder.is_dir() else []
    started = time.perf_counter()
    try:
        sent = asking_notebook(nb, plan(nb, scratch=scratch / "plan", limit_s=budget_s(nb, timeout_s), seed=seed))
    except RuntimeError as trouble:
        merge(nb, SandboxRun(None, scratch / "no-answers.jsonl", str(trouble)), {}, str(trouble))
        return nb
    run = run_notebook(
        sent,
        run_files=run_files,
        library=library,
        scratch=scratch / "sandbox",
        timeout_s=timeout_s,
        limit_s=budget_s(nb, timeout_s),
        seed=seed,
    )
    ran = time.perf_counter()
    checked = judge(
        nb,
        answers=run.answers,
        run_files=run_files,
        scratch=scratch / "judge",
        timeout_s=timeout_s,
        limit_s=budget_s(judge_notebook(nb), timeout_s),
        seed=seed,
        lock=checker_lock,
    )
    merge(nb, run, checked.cells, checked.trouble, sent=sent)
    # wall seconds of each process, the checker's without its wait for its turn on the GPU: only the checker
    # uses a GPU (`python -m grader autograde` reports both)
    nb.metadata[TIMES_KEY] = {
        "sandbox_s": round(ran - started, 2),
        "checker_s": checked.checker_s,
        "waited_s": checked.waited_s,
    }
    return nb


def _same_cells(ran: NotebookNode | None, nb: NotebookNode) -> bool:
    def shape(notebook: NotebookNode) -> list[tuple[str, str]]:
        return [(c.cell_type, c.source) for c in notebook.cells]

    return ran is not None and shape(ran) == shape(nb)


def merge(
    nb: NotebookNode,
    run: SandboxRun,
    judged: dict[str, NotebookNode],
    trouble: str,
    *,
    sent: NotebookNode | None = None,
) -> None:
    """The autograded notebook's outputs (see `grade`), safe to record; every test cell without a verdict says why.
    `sent`: the notebook the sandbox was given (test cells asking their questions), when it is not nb itself."""
    executed = run.executed if _same_cells(run.executed, nb if sent is None else sent) else None
    lost = run.reason or ("" if executed else "the notebook the sandbox wrote back is not the submission")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        ran = executed.cells[index] if executed else None
        cell.execution_count = ran.get("execution_count") if ran else None
        if not is_test(cell):
            cell.outputs = _shown(cell, ran.outputs) if ran else []
            continue
        stopped = [o for o in (ran.outputs if ran else []) if o.output_type == "error" and o.ename in LOST]
        verdict = judged.get(grade_id(cell))
        if stopped:
            cell.outputs = [stopped[-1]]
        elif trouble or verdict is None:
            why = trouble or "the checker gave no verdict for it"
            cell.outputs = [error_output(NOT_GRADED, f"this cell could not be judged: {why}")]
        elif lost and any(o.output_type == "error" and o.ename == "NoAnswer" for o in verdict.outputs):
            cell.outputs = [error_output(NOT_GRADED, f"no answer came back from running your notebook: {lost}")]
        else:  # what the student's code printed while it answered, then the verdict
            printed = [o for o in (ran.outputs if ran else []) if o.output_type == "stream"]
            cell.outputs = [*printed, *verdict.outputs]
    safe_cells(nb)  # whatever the student printed can be written, recorded and shown (grader.outputs)


def _shown(cell: NotebookNode, outputs: list[NotebookNode]) -> list[NotebookNode]:
    """A cell's outputs from the sandbox; in a lesson cell an error (but a lost kernel's) becomes a note.

    Lesson cells are not graded, and in the sandbox some cannot run: those that call withheld references, and
    those that use what such a cell would have made. Their errors are not the student's; the note says so.
    """
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    if is_solution(cell):
        return outputs
    shown = []
    for out in outputs:
        if out.output_type != "error" or out.get("ename") in LOST:
            shown.append(out)
            continue
        first = (str(out.get("evalue", "")).splitlines() or [""])[0]
        text = (
            WITHHELD_NOTE
            if out.get("ename") == "ReferenceWithheld"
            else STOPPED_NOTE.format(error=f"{out.get('ename')}: {first}")
        )
        shown.append(nbformat.v4.new_output("stream", name="stdout", text=text))
    return shown
