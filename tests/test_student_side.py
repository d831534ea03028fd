"""Where students work: the bundle `python -m grader bundle` writes, installed as a student installs it (a fresh venv,
`pip install BUNDLE[course]`, nothing of this checkout importable), every release notebook run with the answers of
solutions/ pasted in: each graded cell passes or says pending a GPU (offline) and passes (on a GPU); with the stubs
and with wrong answers each fails in a verdict of a few lines that says what it found and what to do next."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed: bundle regenerates course/")

from student_side import Verdict, stubs_then_answers, student_run

from labcore.device import gpu_available
from labcore.lessons import lesson as lesson_of
from labcore.lessons import names

from installed import copy_of, lazy_bytecode, the_bundle

pytestmark = pytest.mark.slow(seconds=205)  # installs the bundle in a fresh virtualenv, then runs every release
ROOT = Path(__file__).resolve().parents[1]
MAX_VERDICT_LINES = 5  # ✗ not passed, found (at most three lines), next


def _apart(path: Path) -> bool:
    """A folder on the path that is no part of this checkout (so nothing of the instructors' can be imported)."""
    return path.is_dir() and not path.resolve().is_relative_to(ROOT)


def student_env(extra_path: str = "") -> dict[str, str]:
    """The environment a student's kernel starts in: nothing of this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COURSE_PROFILES", "LABCORE_ANSWERS")}
    if extra_path:
        env["PYTHONPATH"] = extra_path
    return {**env, "MPLBACKEND": "Agg"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> SimpleNamespace:
    """The bundle, installed: offline in a fresh venv as a student does; on a GPU machine (which may reach no package
    index) into a folder of its own beside the packages already there."""
    tmp = tmp_path_factory.mktemp("student-side")
    bundle = copy_of(the_bundle(tmp_path_factory).out, tmp / "bundle")  # the run's bundle (tests/test_bundle.py's)
    if gpu_available():
        target = tmp / "site"
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target"]
        subprocess.run([*pip, str(target), str(bundle)], check=True, capture_output=True)
        others = [p for p in sys.path if p and _apart(Path(p)) and "site-packages" not in p]
        return SimpleNamespace(
            bundle=bundle, python=sys.executable, env=student_env(os.pathsep.join([str(target), *others]))
        )
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--upgrade-deps", str(venv)], check=True, capture_output=True)
    python = str(venv / "bin" / "python")
    env = lazy_bytecode(dict(os.environ))
    command = [python, "-m", "pip", "install", "-q", f"{bundle}[course]"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return SimpleNamespace(bundle=bundle, python=python, env=lazy_bytecode(student_env()))


def _run(installed: SimpleNamespace, lesson: str, answers: str, edits: dict[str, str] | None = None) -> list[Verdict]:
    return student_run(installed.bundle, installed.python, lesson, answers, env=installed.env, edits=edits)


def assert_a_verdict(verdict: Verdict) -> None:
    """A failed check in the student's kernel: a few lines saying what it checked, found and what to do next."""
    lines = [line for line in verdict.text.strip().splitlines() if line.strip()]
    shown = "\n".join(lines)
    assert verdict.state == "failed", f"{verdict.lesson} {verdict.cell}: {verdict.state}\n{shown}"
    assert lines[0].startswith("✗ not passed: "), shown
    assert any(line.lstrip().startswith("found:") for line in lines), shown
    assert lines[-1].lstrip().startswith("next:"), shown
    assert len(lines) <= MAX_VERDICT_LINES and "Traceback" not in shown, shown


@pytest.mark.parametrize("lesson", names())
def test_right_answers_pass_or_say_pending(installed, lesson):
    """Every graded cell of the installed bundle, with the answers of solutions/: passed, or (offline) one line
    saying it is pending a GPU; on a GPU, every cell passes."""
    found = _run(installed, lesson, "right")
    assert found, f"{lesson}: no graded cell ran"
    for verdict in found:
        shown = verdict.text.strip()
        if verdict.state == "pending":
            assert not gpu_available(), f"{verdict.cell} is pending on a GPU:\n{shown}"
            assert len(shown.splitlines()) == 1 and shown.startswith("⧗ pending a GPU: "), shown
            assert "✗" not in shown and "fix" not in shown and "Traceback" not in shown, shown
        else:
            assert verdict.state == "passed", f"{lesson} {verdict.cell} with the right answer:\n{shown}"
            assert "[check] " in shown, f"{lesson} {verdict.cell} passed without saying how it decided:\n{shown}"
            assert "ReferenceWithheld" not in shown, shown


@pytest.fixture(scope="module")
def stubs_then_wrong(installed) -> Callable[[str], tuple[list[Verdict], list[Verdict]]]:
    """Per lesson, once: the untouched release run whole, then its exercises answered wrong and run again in the same
    kernel, as a student who ran the release and then wrote answers (the right answers get a fresh kernel above)."""
    ran: dict[str, tuple[list[Verdict], list[Verdict]]] = {}

    def run(lesson: str) -> tuple[list[Verdict], list[Verdict]]:
        if lesson not in ran:
            wrong = runpy.run_path(str(lesson_of(lesson).tests / "wrong_answers.py"))["WRONG"]
            ran[lesson] = stubs_then_answers(installed.bundle, installed.python, lesson, wrong, installed.env)
        return ran[lesson]

    return run


@pytest.mark.parametrize("lesson", names())
def test_the_stubs_fail_in_verdicts(stubs_then_wrong, lesson):
    """The untouched release: every graded cell fails in a verdict that names the unanswered exercise."""
    stubs, _ = stubs_then_wrong(lesson)
    assert stubs, f"{lesson}: no graded cell ran"
    for verdict in stubs:
        assert_a_verdict(verdict)


@pytest.mark.parametrize("lesson", names())
def test_wrong_answers_fail_in_verdicts_that_help(stubs_then_wrong, lesson):
    """Every exercise of the lesson answered wrong (<lesson>/tests/wrong_answers.py: a race, off-by-a-term arithmetic,
    no fence, an answer that is no option), run after the stubs: every graded cell fails in a verdict that says what
    it found, never a traceback or ReferenceWithheld."""
    stubs, wrong = stubs_then_wrong(lesson)
    assert [v.cell for v in wrong] == [v.cell for v in stubs], lesson  # every graded cell ran again
    for verdict in wrong:
        assert_a_verdict(verdict)
        assert "ReferenceWithheld" not in verdict.text and "not answered yet" not in verdict.text, verdict.text


@pytest.mark.gpu
def test_on_a_gpu_every_right_answer_passes_live(installed, capsys, tmp_path):
    """Live, the installed bundle with the right answers: all graded cells of every lesson pass (none pending), and
    a lesson's record step (day 54's) leaves its results record (and nsys's exports where nsys is found); prints the
    verdicts."""
    found = [
        verdict
        for lesson in names()
        for verdict in student_run(installed.bundle, installed.python, lesson, "right", tmp_path, installed.env)
    ]
    with capsys.disabled():
        print("\n" + "\n".join(verdict.line() for verdict in found))
    assert [v.cell for v in found if v.state != "passed"] == []
    assert list(tmp_path.glob("*/*_run.json")), sorted(p.name for p in tmp_path.glob("*/*"))  # a record step ran
