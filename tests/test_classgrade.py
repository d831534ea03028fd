"""A class graded on Dask (grader.classgrade, grader.cluster) with a local cluster of CPU workers, offline.

Nothing is lost: a worker killed while it grades a submission has that submission graded again on another worker;
a coordinator killed mid-class leaves every result it had stored, and the rerun grades only the rest; a notebook
nbgrader cannot read gets its reason in the table; a failed try never replaces a result that was recorded. The
toy assignment (tests/data/toy_assignment) keeps each submission to a second or two, but a few sleep on purpose.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("distributed", reason="the course extra (dask.distributed) is not installed")

from test_grader_cli import EXPECTED, TOY, grader, make_checkout  # noqa: E402

from grader.classgrade import STORE, Recorder, grade_answers, grade_class, store  # noqa: E402
from grader.cluster import Done, open_cluster, visible_device  # noqa: E402
from grader.grading import GradingDir  # noqa: E402
from grader.hops import HOPS_VERSION  # noqa: E402
from grader.layout import GRADEBOOK  # noqa: E402
from grader.warm import Job  # noqa: E402

pytestmark = pytest.mark.slow(seconds=210)  # grades toy classes on Dask, killing workers and a coordinator
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 20
FULL = sum(EXPECTED["correct"].values())  # 4 points


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    root = make_checkout(tmp_path_factory.mktemp("checkout"))
    assert grader("--repo", str(root), "generate").rc == 0
    return root


def slow(seconds: float) -> str:
    """A correct toy submission whose clamp answer cell sleeps first (it runs in the sandbox)."""
    return f"sleep:{seconds}"


def write_submission(folder: Path, like: str) -> None:
    """SUBS/<student>/ as a toy submission `like` (a folder of the toy's submissions), or a slow correct one."""
    if not like.startswith("sleep:"):
        shutil.copytree(TOY / "submissions" / like, folder)
        return
    shutil.copytree(TOY / "submissions" / "correct", folder)
    nb = nbformat.read(folder / "toy.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp")
    cell.source = f"import time\ntime.sleep({float(like.split(':')[1])})\n" + cell.source
    nbformat.write(nb, folder / "toy.ipynb")


def class_dir(checkout: Path, base: Path, students: dict[str, str]) -> Path:
    """A grading directory set up from the toy checkout, with `students` collected (none graded yet)."""
    subs, root = base / "submissions", base / "grading"
    for student, like in students.items():
        write_submission(subs / student, like)
    assert grader("--repo", str(checkout), "setup", str(root)).rc == 0
    assert grader("collect", str(root), str(subs)).rc == 0
    return root


def _scores(root: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    from grader.layout import COURSE_ID

    with Gradebook(GradingDir(root).db_url, COURSE_ID) as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("toy")}


def _stored(root: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (root / STORE / "toy").glob("*/toy.json")}


def test_a_worker_killed_mid_submission_has_it_graded_on_another(checkout, tmp_path):
    """The worker grading the slow submission is SIGKILLed while its sandbox runs: every grade is still right."""
    root = class_dir(checkout, tmp_path, {"slow": slow(6), "a": "correct", "b": "wrong", "c": "correct"})
    grading = GradingDir(root)
    killed: list[str] = []
    with grading.writer(), open_cluster("local", workers=2, gpus=[]) as client:

        def kill_the_slow_ones_worker() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                for worker, keys in client.processing().items():
                    if any(str(k).startswith("extract-toy/slow-") for k in keys):
                        pid = client.run(os.getpid, workers=[worker])[worker]
                        time.sleep(2.0)  # its sandbox is well into the sleeping cell
                        os.kill(pid, signal.SIGKILL)
                        killed.append(worker)
                        return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_the_slow_ones_worker)
        killer.start()
        outcomes = {o.student: o for o in grade_class(grading, "toy", client=client, timeout_s=TIMEOUT_S)}
        killer.join()
    assert killed, "the slow submission never reached a worker"
    why = {s: (o.failed, o.timed_out, o.reason) for s, o in outcomes.items()}
    assert {s: (o.score, o.recorded) for s, o in outcomes.items()} == {
        "slow": (FULL, True),
        "a": (FULL, True),
        "b": (sum(EXPECTED["wrong"].values()), True),
        "c": (FULL, True),
    }, why
    assert _scores(root)["slow"] == FULL


def test_the_recorder_records_students_while_the_rest_are_graded(checkout, tmp_path):
    """Batches of two: the fast students are in the gradebook before the slow one's result arrives, and every
    grade is right at the end."""
    root = class_dir(checkout, tmp_path, {"a": "correct", "b": "wrong", "slow": slow(12)})
    grading = GradingDir(root)
    seen_at_slow: dict[str, float] = {}

    def progress(student: str) -> None:
        if student == "slow":
            seen_at_slow.update(_scores(root))

    with grading.writer(), open_cluster("local", workers=2, gpus=[]) as client:
        recorder = Recorder(grading, batch=2)
        try:
            graded = grade_answers(
                grading, "toy", client=client, timeout_s=TIMEOUT_S, ready=recorder.ready, progress=progress
            )
            outcomes = {o.student: (o.score, o.recorded) for o in recorder.finish(graded)()}
        finally:
            recorder.close()
    wrong = sum(EXPECTED["wrong"].values())
    assert seen_at_slow == {"a": FULL, "b": wrong}, "the first batch was not recorded while the slow one graded"
    assert outcomes == {"a": (FULL, True), "b": (wrong, True), "slow": (FULL, True)}
    assert "record in 2 batches" in graded.phases, graded.phases
    assert _scores(root) == {"a": FULL, "b": wrong, "slow": FULL}


def test_a_killed_coordinator_loses_nothing_and_the_rerun_grades_only_the_rest(checkout, tmp_path):
    """`python -m grader autograde` SIGKILLed after its first stored result: the rerun keeps those, grades the rest."""
    students = {f"s{n}": slow(2) for n in range(5)}
    root = class_dir(checkout, tmp_path, students)
    command = [sys.executable, "-m", "grader", "autograde", str(root), "--jobs", "1", "--timeout", str(TIMEOUT_S)]
    first = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not any("result" in v for v in _stored(root).values()):
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    before = {s: v for s, v in _stored(root).items() if "result" in v}
    assert 1 <= len(before) < len(students), f"killed too late or too early: {sorted(before)} stored"
    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert "distributed." not in rerun.stderr, rerun.stderr[-2000:]  # no Dask worker logs its start or stop
    assert f"toy: {len(before)} already graded in {root / STORE}, kept" in rerun.stdout
    # one worker, one warm checker per run: each run's first submission started it, no other did
    starts = re.search(r"(\d+) of (\d+) submissions started a checker process", rerun.stdout)
    assert starts and 1 <= int(starts[1]) <= 2 and int(starts[1]) < int(starts[2]), rerun.stdout[-2000:]
    after = _stored(root)
    assert all(after[s] == v for s, v in before.items())  # the kept results were not graded again
    assert _scores(root) == dict.fromkeys(students, FULL)


# The quick students, graded as one class (one setup, collect and autograde, two sandboxes); each test below reads its
# own: notebooks nbgrader cannot read, notebooks that lost cells, and a cell that kills its sandbox.
UNREADABLE = {"good": "correct", "forged": "correct", "huge": "correct", "many": "correct"}
LOST = ("stripped", "bare", "deleted")
KILLED = {"killer": "quits", "a": "correct"}


@pytest.fixture(scope="module")
def quick_class(checkout, tmp_path_factory) -> SimpleNamespace:
    """The quick students set up, collected, changed as each test says, then autograded once: the grading root and
    what autograde said."""
    base = tmp_path_factory.mktemp("quick")
    root = class_dir(checkout, base, {**UNREADABLE, **dict.fromkeys(LOST, "correct"), **KILLED})
    _make_unreadable(root)
    _lose_cells(root)
    _kill_the_sandbox(root)
    done = grader("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S))
    return SimpleNamespace(root=root, base=base, done=done)


def _row(done, student: str) -> str:
    return next(line for line in done.lines if line.startswith(f"{student} "))


def _make_unreadable(root: Path) -> None:
    """A made-up test cell (a grade id the gradebook lacks) in forged's notebook; huge's past the size a notebook may
    be (put in the grading directory by hand, past collect); many's past its count of cells."""
    with open(root / "submitted" / "huge" / "toy" / "toy.ipynb", "r+b") as f:  # put there past collect's limit
        f.truncate(65 << 20)
    crowded = root / "submitted" / "many" / "toy" / "toy.ipynb"  # and past its count of cells
    nb = nbformat.read(crowded, as_version=4)
    nb.cells += [nbformat.v4.new_markdown_cell("") for _ in range(2_000)]
    nbformat.write(nb, crowded)
    path = root / "submitted" / "forged" / "toy" / "toy.ipynb"
    nb = nbformat.read(path, as_version=4)
    forged = nbformat.v4.new_code_cell("assert True", metadata={"nbgrader": {"grade": True, "grade_id": "mine"}})
    forged.metadata["nbgrader"].update(solution=False, locked=True, points=10, schema_version=3)
    nb.cells.append(forged)
    nbformat.write(nb, path)


def test_a_notebook_nbgrader_cannot_read_is_named_in_the_table(quick_class):
    """A made-up test cell (a grade id the gradebook lacks) makes that notebook unreadable, and one past the size a
    notebook may be (put in the grading directory by hand, past collect) is not read: each named; the others are
    graded."""
    done = quick_class.done
    assert done.rc == 1, done.out
    row = _row(done, "forged")
    assert "not graded" in row and "the nbgrader metadata may be corrupted" in row, row
    assert _row(done, "good").split()[1:4] == ["4", "/", "4"]
    row = _row(done, "huge")
    assert "not graded" in row and "toy.ipynb: 65 MiB, more than the 64 MiB a notebook may be" in row, row
    row = _row(done, "many")
    assert "not graded" in row and "toy.ipynb: 2,010 cells, more than a notebook may have" in row, row
    # nbgrader records the crowded one (every cell 0, saying why); the other two it cannot read, and no other student
    # of the class is left ungraded
    assert "2 submission(s) not graded (toy/forged, toy/huge): see the reasons above" in done.err


def _nbgrader_sanitized(grading: GradingDir, student: str, path: Path) -> str:
    """The notebook as nbgrader's own preprocessors sanitize it, each lookup a gradebook query (as grader.classgrade
    once did): what SourceCells must give the same of."""
    from nbgrader.preprocessors import ClearOutput, DeduplicateIds, OverwriteCells, OverwriteKernelspec

    from grader.program import drop_emptied_metadata

    nb = nbformat.read(path, as_version=4)
    resources = {"nbgrader": {"db_url": grading.db_url, "assignment": "toy", "notebook": path.stem, "student": student}}
    for step in (ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells):
        nb, resources = step().preprocess(nb, resources)
        if step is DeduplicateIds:
            nb.cells = [drop_emptied_metadata(cell) for cell in nb.cells]
    return nbformat.writes(nb)


def test_sanitizing_from_the_gradebook_read_once_is_nbgraders_own(checkout, tmp_path):
    """SourceCells answers every lookup of nbgrader's OverwriteKernelspec and OverwriteCells as the gradebook does:
    tampered notebooks (a locked cell edited or unlocked, points raised, a cell's type changed, a grade id the
    gradebook lacks, a task cell id, another kernelspec) come out byte for byte as nbgrader's own preprocessors
    leave them, and a notebook the gradebook does not know fails the same way."""
    from nbgrader.api import MissingEntry
    from nbgrader.preprocessors import ClearOutput

    from grader.preprocessors import DropDuplicateIds, SafeText, SourceKernelspec, SourceOverwriteCells
    from grader.sanitize import SourceCells, sanitized

    root = class_dir(checkout, tmp_path, {"plain": "correct", "tampered": "correct", "extra": "correct"})
    grading = GradingDir(root)
    path = root / "submitted" / "tampered" / "toy" / "toy.ipynb"
    nb = nbformat.read(path, as_version=4)
    by_id = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}
    by_id["test_clamp_hidden"].source = "assert True"
    by_id["test_clamp_visible"].metadata["nbgrader"]["locked"] = False
    by_id["test_chunk_count"].metadata["nbgrader"]["points"] = 50
    by_id["intro"].cell_type = "code"
    by_id["intro"].update(outputs=[], execution_count=None)
    by_id["clamp"].outputs = [nbformat.v4.new_output("stream", text="printed\n")]
    made_up = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "not_in_the_gradebook"}})
    made_up.metadata["nbgrader"].update(grade=False, solution=True, locked=False, schema_version=3)
    nb.cells.append(made_up)
    nb.metadata["kernelspec"] = {"name": "mine", "display_name": "Mine", "language": "python"}
    nbformat.write(nb, path)
    shutil.copyfile(path, root / "submitted" / "extra" / "toy" / "other.ipynb")
    source = SourceCells(grading.db_url, "toy")
    assert set(source.notebooks) == {"toy"} and ("test_chunk_count", "toy") in source.graded
    for student in ("plain", "tampered"):
        submitted = root / "submitted" / student / "toy" / "toy.ipynb"
        ours = nbformat.writes(sanitized(grading.db_url, "toy", student, submitted, source))
        assert ours == _nbgrader_sanitized(grading, student, submitted)
        # and as the recording pass's chain (grader.config) leaves it, its source records read by itself
        nb = nbformat.read(submitted, as_version=4)
        info = {"db_url": grading.db_url, "assignment": "toy", "notebook": "toy", "student": student}
        resources = {"nbgrader": info}
        for step in (SafeText, ClearOutput, DropDuplicateIds, SourceKernelspec, SourceOverwriteCells):
            nb, resources = step().preprocess(nb, resources)
        assert nbformat.writes(nb) == ours
    ours = nbformat.reads(nbformat.writes(sanitized(grading.db_url, "toy", "tampered", path, source)), as_version=4)
    restored = {
        c.metadata["nbgrader"]["grade_id"]: c for c in ours.cells if "grade_id" in c.metadata.get("nbgrader", {})
    }
    assert (
        restored["test_clamp_hidden"].source != "assert True"
        and restored["test_chunk_count"].metadata["nbgrader"]["points"] == 1
    )  # the checks above compare against nbgrader doing its job
    assert ours.metadata["kernelspec"]["name"] != "mine" and "not_in_the_gradebook" not in restored
    other = root / "submitted" / "extra" / "toy" / "other.ipynb"
    with pytest.raises(MissingEntry):
        _nbgrader_sanitized(grading, "extra", other)
    with pytest.raises(MissingEntry):
        sanitized(grading.db_url, "toy", "extra", other, source)


def _lose_cells(root: Path) -> None:
    """stripped's notebook saved without nbgrader's metadata, bare's without metadata or cell ids (format 4.4),
    deleted's with a test cell deleted."""
    for student in LOST:
        path = root / "submitted" / student / "toy" / "toy.ipynb"
        nb = json.loads(path.read_text())
        if student == "deleted":
            nb["cells"] = [
                c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "test_chunk_count"
            ]
        else:
            for cell in nb["cells"]:
                cell["metadata"].pop("nbgrader", None)
                if student == "bare":
                    cell.pop("id", None)
            nb["nbformat_minor"] = 4 if student == "bare" else nb["nbformat_minor"]
        path.write_text(json.dumps(nb))


def test_cells_lost_from_the_notebook_are_put_back_by_both_passes_and_graded(quick_class):
    """nbgrader finds a cell by its metadata alone, and grades a missing test cell 0 saying nothing. A notebook
    saved without nbgrader's metadata (the toy's cell ids are not its grade ids: each locked cell is found by its
    text as handed out, hidden tests cleared), one without metadata or cell ids (format 4.4), and one with a test
    cell deleted: both sanitizing passes leave the same bytes, every locked cell is back with the source's text
    and metadata, and each student gets full points, the table naming the graded cells put back."""
    from nbgrader.preprocessors import ClearOutput

    from grader.layout import RESTORED
    from grader.preprocessors import (
        DropDuplicateIds,
        SafeText,
        SourceKernelspec,
        SourceOverwriteCells,
        SourceRestoreCells,
    )
    from grader.sanitize import SourceCells, sanitized

    root, names = quick_class.root, LOST
    grading = GradingDir(root)
    source = SourceCells(grading.db_url, "toy")
    locked = {name for (name, _), cell in source.cells.items() if cell.locked}
    assert {"test_chunk_count", "test_clamp_hidden", "intro"} <= locked
    for student in names:
        path = root / "submitted" / student / "toy" / "toy.ipynb"
        ours = sanitized(grading.db_url, "toy", student, path, source)
        nb = nbformat.read(path, as_version=4)
        resources = {"nbgrader": {"db_url": grading.db_url, "assignment": "toy", "notebook": "toy", "student": student}}
        chain = (SafeText, ClearOutput, DropDuplicateIds, SourceRestoreCells, SourceKernelspec, SourceOverwriteCells)
        for step in chain:
            nb, resources = step().preprocess(nb, resources)
        assert nbformat.writes(nb) == nbformat.writes(ours), student
        found = {c.metadata["nbgrader"]["grade_id"]: c for c in ours.cells if "nbgrader" in c.metadata}
        assert locked <= set(found), (student, locked - set(found))
        for name in locked:
            assert found[name].source == source.cells[(name, "toy")].source
            want = source.metadata(name, "toy")
            got = found[name].metadata["nbgrader"]
            assert {k: got.get(k) for k in ("grade", "grade_id", "locked", "solution", "checksum", "points")} == {
                k: want.get(k) for k in ("grade", "grade_id", "locked", "solution", "checksum", "points")
            }, (student, name)
        back = {n for n, c in found.items() if RESTORED in c.metadata}
        assert back == ({"test_chunk_count"} if student == "deleted" else locked), (student, back)
    done = quick_class.done
    scores = _scores(root)
    assert {s: scores[s] for s in names} == dict.fromkeys(names, FULL), done.out[-3000:]
    row = _row(done, "deleted")
    assert "graded cells put back as the course has them (lost from the notebook): test_chunk_count" in row, row


def _kill_the_sandbox(root: Path) -> None:
    """killer's chunk_count cell SIGKILLs its sandbox's parent (the warm sandbox) rather than itself."""
    path = root / "submitted" / "killer" / "toy" / "toy.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "chunk_count")
    cell.source = cell.source.replace("os.kill(os.getpid(), signal.SIGKILL)", "os.kill(os.getppid(), signal.SIGKILL)")
    nbformat.write(nb, path)


def test_a_sandbox_killed_mid_notebook_keeps_the_earlier_cells_in_the_table_and_the_export(quick_class):
    """A cell SIGKILLs its sandbox's parent (the warm sandbox): the cells before keep their points, and the table and
    the CSV say so, with the cell and the reason, not "not graded" with a blank score."""
    root, done = quick_class.root, quick_class.done
    row = _row(done, "killer")
    assert row.split()[1:4] == ["3", "/", "4"], row
    # the reason in the brackets is the sandbox's own words (grader.warm): how it ended
    assert re.search(r"the sandbox was killed in cell test_chunk_count \(.+\); earlier cells kept", row), row
    scores = _scores(root)
    assert {s: scores[s] for s in KILLED} == {"killer": 3.0, "a": FULL}
    csv_path = quick_class.base / "grades.csv"
    assert grader("export", str(root), "--to", str(csv_path)).rc == 0
    exported = {r["student_id"]: r for r in csv.DictReader(csv_path.open()) if r["assignment"] == "toy"}
    assert exported["killer"]["status"] == "graded, written answers pending", exported["killer"]
    assert float(exported["killer"]["raw_score"]) == 3.0


def _job(student: str) -> Job:
    return Job("toy", student, {}, {"cells": [], "placeholders": []}, {"cells": [], "placeholders": []}, 7, 5, (), "c")


def test_a_failed_try_never_replaces_a_recorded_result(tmp_path):
    """A result replaces anything; an error replaces an error or another key's result, never the same key's result."""
    where = tmp_path / "toy.json"
    result = {"extracted": {"cells": {}}, "checked": {"verdicts": {}}}
    store(where, "k1", Done(_job("ann"), result))
    store(where, "k1", Done(_job("ann"), None, "its grading worker died on every try"))
    assert json.loads(where.read_text()) == {
        "version": HOPS_VERSION,
        "key": "k1",
        "seed": 7,
        "result": {**result, "timeout_s": 5, "whole": False},
    }
    store(where, "k2", Done(_job("ann"), None, "KilledWorker"))  # the submission changed: its old grade is stale
    assert json.loads(where.read_text()) == {"version": HOPS_VERSION, "key": "k2", "error": "KilledWorker"}
    store(where, "k2", Done(_job("ann"), result))
    assert json.loads(where.read_text())["result"]["extracted"] == {"cells": {}}


def test_a_wrong_cluster_is_one_line(checkout, tmp_path):
    """--cluster with a wrong word, or a scheduler address where none answers: exit 2 and one line naming it."""
    root = class_dir(checkout, tmp_path, {"a": "correct"})
    done = grader("autograde", str(root), "--cluster", "nonsense")
    assert done.rc == 2 and "'nonsense': expected local, slurm, pbs or a scheduler address" in done.err, done.err
    done = grader("autograde", str(root), "--cluster", "tcp://127.0.0.1:9")
    assert done.rc == 2 and "--cluster tcp://127.0.0.1:9: no scheduler answered" in done.err, done.err
    assert len(done.err.strip().splitlines()) == 1


def test_a_gpu_worker_sees_the_gpu_its_index_stands_for(monkeypatch):
    """With CUDA_VISIBLE_DEVICES=2,3 the coordinator's GPU 1 is the machine's GPU 3; without it, the index."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert [visible_device(i) for i in (0, 1)] == ["0", "1"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3")
    assert [visible_device(i) for i in (0, 1)] == ["2", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f2c,GPU-11ab")  # UUIDs pass through as they are
    assert visible_device(1) == "GPU-11ab"


FORKED_WORKER = """
import contextlib, logging, os, socket, sys
from grader import runner
taken = socket.socket()  # the dashboard's usual port, taken (another class graded on this machine)
with contextlib.suppress(OSError):
    taken.bind(("127.0.0.1", 8787))
    taken.listen()
from grader.cluster import open_cluster
os.environ["GRADER_TEST_DROPPED"] = "the server's"
runner.start_forkserver()  # the server starts with GRADER_TEST_DROPPED in its environment
del os.environ["GRADER_TEST_DROPPED"]
os.environ["GRADER_TEST_ADDED"] = "the coordinator's"
def seen_there():
    from grader import warm
    dropped, added = os.environ.get("GRADER_TEST_DROPPED"), os.environ.get("GRADER_TEST_ADDED")
    logging.getLogger("distributed.worker").error("a worker's shutdown noise")
    import dask
    quiet = dask.config.get("distributed.worker.profile.enabled") is False
    return os.getppid(), dropped, added, str(warm._library()), quiet
with open_cluster("local", workers=2, gpus=[]) as client:
    seen = client.run(seen_there)
from grader import warm
for parent, dropped, added, library, quiet in seen.values():
    print(parent != os.getpid(), dropped, added, library == str(warm._library()), quiet)
"""


def test_a_local_worker_is_forked_with_the_coordinators_environment(tmp_path):
    """A local cluster's workers come from the forkserver (not this process), with this process's environment as it
    is when the cluster starts: a variable set since is there, one dropped since is not; they share the sandbox
    library this process wrote; they run without Dask's profiler (grader.cluster.QUIET, given by their Nanny); and
    neither they nor the scheduler write on stderr (a worker's Dask errors, the dashboard's port taken)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", FORKED_WORKER], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-2:] == ["True None the coordinator's True True"] * 2, done.stdout[-2000:]
    assert done.stderr == "", done.stderr[-2000:]


# -- what a student prints, or a result that cannot be recorded, is that student's alone ------------------------

# the clamp answer cell of these submissions, before the correct answer; CELLS is where the sandbox files outputs
FORGE = (
    "import os\n"
    "CELLS = os.path.join(os.getcwd().replace('/sandbox/work/', '/sandbox/out/'), 'cells.jsonl')\n"
    "def forge(text):\n"
    "    with open(CELLS, 'ab') as f:\n"
    '        f.write(b\'{"cell": CLAMP, "outputs": [{"output_type": "stream", "name": "stdout", "text": "\''
    " + text + b'\"}]}\\n')\n"
)
PRINTS = {
    # a lone surrogate, undecodable bytes as Python decodes them (surrogateescape), a pair, controls XML refuses
    "surrogate": (
        "print('lone \\ud800 bytes', b'\\xff\\xfe'.decode('utf-8', 'surrogateescape'), '\\ud83d\\ude00 \\x00\\x0c')\n"
    ),
    # raw bytes that are not UTF-8 (and JSON escapes of lone surrogates) where the sandbox files outputs
    "bytes": FORGE + "forge(b'raw \\xff\\xfe\\xc3 bytes \\\\udcff \\\\ud800 end')\n",
    # 50 MB printed, and 50 MB filed directly past the sandbox's own cut
    "flood": FORGE + "print('x' * 50_000_000)\nforge(b'y' * 50_000_000)\n",
}


def write_printing(folder: Path, prints: str) -> None:
    """A correct toy submission whose clamp answer cell prints `prints` (CLAMP: that cell's index) first."""
    shutil.copytree(TOY / "submissions" / "correct", folder)
    nb = nbformat.read(folder / "toy.ipynb", as_version=4)
    index, cell = next(
        (i, c) for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp"
    )
    cell.source = prints.replace("CLAMP", str(index)) + cell.source
    nbformat.write(nb, folder / "toy.ipynb")


def _clamp_text(root: Path, student: str) -> str:
    nb = nbformat.read(root / "autograded" / student / "toy" / "toy.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp")
    return "".join(o.get("text", "") for o in cell.outputs)


def test_what_a_student_prints_or_breaks_is_recorded_as_theirs_alone(checkout, tmp_path):
    """Lone surrogates (printed, or in the notebook handed in), bytes that are not UTF-8 and 50 MB of output are
    recorded, cleaned and cut, with full points; a submission nbgrader refuses as a whole (an old metadata schema)
    and a stored result that does not make a notebook are named "could not be recorded" in the table, the exit line
    and the CSV; everyone else is recorded."""
    from grader.outputs import MAX_CELL_CHARS, cut_note

    subs = tmp_path / "submissions"
    for student, prints in PRINTS.items():
        write_printing(subs / student, prints)
    for student, like in {"honest": "correct", "wrong": "wrong", "old": "correct", "broken": "correct"}.items():
        write_submission(subs / student, like)
    # lone surrogates in the notebook's own JSON (its source, metadata and outputs): graded, written as U+FFFD
    write_submission(subs / "handed", "correct")
    path = subs / "handed" / "toy.ipynb"
    raw = json.loads(path.read_text())
    clamp = next(c for c in raw["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "clamp")
    clamp["source"] = "# a comment \ud800 UTF-8 cannot hold\n" + "".join(clamp["source"])
    clamp["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "\udfff"}]
    raw["metadata"]["key \ud801"] = "value \udc00"
    path.write_text(json.dumps(raw))  # ASCII escapes: valid JSON, the surrogates only once decoded
    path = subs / "old" / "toy.ipynb"
    nb = nbformat.read(path, as_version=4)
    next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp").metadata["nbgrader"][
        "schema_version"
    ] = 1
    nbformat.write(nb, path)
    root = tmp_path / "grading"
    assert grader("--repo", str(checkout), "setup", str(root)).rc == 0
    assert grader("collect", str(root), str(subs)).rc == 0

    done = grader("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S))
    assert done.rc == 1, done.out + done.err
    assert "1 submission(s) not graded (toy/old): see the reasons above" in done.err, done.err
    row = next(line for line in done.lines if line.startswith("old "))
    assert "not graded" in row and "could not be recorded: One or more notebooks" in row, row
    wrong = sum(EXPECTED["wrong"].values())
    full = dict.fromkeys([*PRINTS, "honest", "broken", "handed"], FULL)
    assert _scores(root) == {**full, "wrong": wrong, "old": 0.0}
    handed = nbformat.read(root / "autograded" / "handed" / "toy" / "toy.ipynb", as_version=4)
    clamp = next(c for c in handed.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp")
    assert clamp.source.startswith("# a comment \ufffd UTF-8 cannot hold") and handed.metadata["key \ufffd"]
    assert "lone \ufffd bytes \ufffd\ufffd \U0001f600 \ufffd\ufffd" in _clamp_text(root, "surrogate")
    assert "raw \ufffd\ufffd\ufffd bytes \ufffd \ufffd end" in _clamp_text(root, "bytes")
    flood = _clamp_text(root, "flood")
    assert flood == "y" * MAX_CELL_CHARS + cut_note(MAX_CELL_CHARS), flood[-200:]
    assert (root / STORE / "toy" / "flood" / "toy.json").stat().st_size < 2 * MAX_CELL_CHARS
    feedback = grader("feedback", str(root))
    assert feedback.rc == 0, feedback.out + feedback.err
    page = root / "feedback" / "flood" / "toy" / "toy.html"
    assert page.stat().st_size < 2_000_000 and "output cut at 100,000 characters" in page.read_text()

    where = root / STORE / "toy" / "broken" / "toy.json"  # a stored result that does not make a notebook
    stored = json.loads(where.read_text())
    where.write_text(json.dumps({**stored, "result": {**stored["result"], "checked": 7}}))
    done = grader("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S))
    assert done.rc == 1, done.out + done.err
    assert "2 submission(s) not graded (toy/broken, toy/old): see the reasons above" in done.err, done.err
    row = next(line for line in done.lines if line.startswith("broken "))
    assert "not graded" in row and "could not be recorded: " in row, row
    assert _scores(root) == {
        **dict.fromkeys([*PRINTS, "honest", "handed"], FULL),
        "wrong": wrong,
        "broken": 0.0,
        "old": 0.0,
    }
    assert grader("export", str(root), "--to", str(tmp_path / "grades.csv")).rc == 0
    status = {r["student_id"]: r["status"] for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert status["old"].startswith("not graded: could not be recorded: One or more notebooks"), status
    assert "could not be recorded: " in status["broken"] and status["honest"].startswith("graded"), status


def test_a_batch_that_fails_as_a_whole_is_its_students_failure(monkeypatch, tmp_path):
    """Recording that raises for a batch names its students ("could not be recorded: ...") and the thread carries
    on; the grading directory's own fault (a UsageError: its configuration does not load) still stops the class."""
    from grader import classgrade
    from labcore.errors import UsageError

    items = [classgrade.Ready("toy", s, (), "") for s in ("ann", "bob")]
    sqlite3.connect(tmp_path / GRADEBOOK).close()  # a gradebook to keep a copy of, as the Recorder does first
    recorder = Recorder(GradingDir(tmp_path, must_exist=False))
    try:
        monkeypatch.setattr(classgrade, "record_batch", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
        assert recorder._record(items) == (
            {},
            dict.fromkeys(["ann", "bob"], "could not be recorded: OSError: disk full"),
        )
        monkeypatch.setattr(classgrade, "record_batch", lambda *a: (_ for _ in ()).throw(UsageError("no config")))
        with pytest.raises(UsageError, match="no config"):
            recorder._record(items)
    finally:
        recorder.close()
