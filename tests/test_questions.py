"""Questions, not test cells, reach the sandbox; its answers reach the checker through the zygote alone.

labcore.answers' plan role records each question (key, asker, arguments) without computing; the sandbox's program
holds the student's cells and the questions, no test cell text; the zygote keeps only answers to planned
questions, once each and in order, and passes each on at once on its own protocol, from which the trusted side
writes the checker's answers file. The end-to-end tests run real bubblewrap through grader.warm, for both
sandbox programs (`--feedback later` and `now`).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grader import program, warm
from grader.checker import statements
from grader.program import answers_program, checker_program
from grader.zygote import Answering
from labcore import answers, checking

MARKER = "HIDDEN_MARKER_q9z"  # a string only the hidden region holds


# -- the roles ----------------------------------------------------------------------------------------------------


def test_the_plan_records_questions_with_the_students_names_and_computes_nothing(tmp_path, monkeypatch):
    """Role.plan(FILE) files key, asker and arguments ({"student": name} for a placeholder); the answer is UNANSWERED,
    which equals nothing but itself and has no truth value: a check that judged while planning would fail."""
    plan = tmp_path / "plan.jsonl"
    monkeypatch.setattr(answers, "role", answers.Role.plan(plan, 0))
    got = answers.call("clamp", answers.Answer("clamp"), 5, 0, 10)
    assert got is answers.UNANSWERED and got != 5 and got != got.__class__() and answers.collecting()
    with pytest.raises(TypeError, match="no truth value"):
        assert got
    (line,) = [json.loads(x) for x in plan.read_text().splitlines()]
    assert line["asker"] == "labcore.answers.ask_call"
    assert line["args"] == [{"student": "clamp"}, 5, 0, 10]
    assert line["key"] == answers.key_of("clamp(5, 0, 10)", ("call", "clamp", (5, 0, 10)))


def test_a_check_reads_the_same_in_every_role_and_labcore_does_what_each_needs(tmp_path):
    """One check, written once (ask, asked(), judge), in every role: planning and collecting it ends at asked() with
    its questions filed and nothing judged; judging it reads the answers back (parsed by `read`) and judges them
    against the key; in the student's own kernel it judges the fixed cases and, the key withheld, says so."""
    said = []

    def check_double(fn):
        cases = answers.asked_cases(lambda: [7, 11], [2])
        got = [
            answers.answer(f"double({x})", ("double", x), answers.ask_call, fn, x, read=lambda v: v // 2) for x in cases
        ]
        answers.asked()
        assert got == cases, f"halved, {got} is not {cases}"
        said.append(checking.answer_key(lambda: "the key", f"{len(cases)} cases"))

    namespace = {"__name__": "checks_under_test", "check_double": check_double}
    check_double.__module__ = "checks_under_test"
    checking.verdicts(namespace)
    check = namespace["check_double"]
    plan, filed = tmp_path / "plan.jsonl", tmp_path / "answers.jsonl"
    with answers.acting(answers.Role.plan(plan, 3)):
        assert check(answers.Answer("double")) is None
    assert [json.loads(x)["args"] for x in plan.read_text().splitlines()] == [
        [{"student": "double"}, 7],
        [{"student": "double"}, 11],
    ]
    with answers.acting(answers.Role.collect(filed, 3)):
        assert check(lambda x: 2 * x) is None
    assert said == [] and len(filed.read_text().splitlines()) == 2
    with answers.acting(answers.Role.collect(wrong := tmp_path / "wrong.jsonl", 3)):
        check(lambda x: x)  # collecting judges nothing: the wrong answers are filed all the same
    with answers.acting(answers.Role.judge(filed, 3)):
        check(answers.Answer("double"))
    assert said == ["the key"]
    with answers.acting(answers.Role.judge(wrong, 3)), pytest.raises(AssertionError, match="halved, \\[3, 5\\]"):
        check(answers.Answer("double"))  # judged on what came back
    with pytest.raises(AssertionError, match=r"halved, \[1\] is not \[2\]"):
        check(lambda x: x)  # the student's own kernel: the fixed case, computed here
    assert check(lambda x: 2 * x) is None and said == ["the key"]  # the key withheld: decided when graded


def test_no_environment_variable_changes_a_role(monkeypatch, tmp_path):
    """A role is passed explicitly (act, acting): what a process's environment says of answers files or seeds changes
    nothing; only the sandbox's own mark (SANDBOX_ENV=ask, set by the zygote) makes a process the sandbox."""
    monkeypatch.setattr(answers, "role", answers.OWN)
    monkeypatch.setenv(answers.SANDBOX_ENV, f"judge:{tmp_path / 'forged.jsonl'}")
    monkeypatch.setenv("LABCORE_SEED", "1")
    assert answers.call("clamp", lambda x, lo, hi: max(lo, min(x, hi)), 11, 0, 10) == 10  # computed: not judged
    assert not answers.grading() and answers.run_seed() is None
    with answers.acting(answers.Role.judge(tmp_path / "answers.jsonl", 5)) as judging:
        assert answers.grading() and answers.run_seed() == "5" and answers.role is judging
    assert answers.role is answers.OWN
    with pytest.raises(ValueError, match="needs an answers file"):
        answers.Role("judge")
    with pytest.raises(ValueError, match="not 'collect:x'"):
        answers.Role("collect:x")


def test_the_planner_runs_a_test_cell_one_statement_at_a_time():
    """Each top-level statement its own source (decorators with their function, a shared line together), so a plain
    assert that fails on an unanswered question keeps no later statement's question unasked; not Python: whole."""
    cell = "a = 1; b = 2\n@dec\ndef f():\n    return 1\nassert call('f', f, 5) == 5\nassert call('f', f, 6) == 6"
    assert statements(cell) == [
        "a = 1; b = 2",
        "@dec\ndef f():\n    return 1",
        "assert call('f', f, 5) == 5",
        "assert call('f', f, 6) == 6",
    ]
    assert statements("%time x = 1\ny = 2") == ["%time x = 1\ny = 2"]
    assert statements("# nothing to run") == ["# nothing to run"]


def test_ask_answers_a_planned_question_from_the_students_namespace(monkeypatch):
    """The sandbox resolves the student's names; a name never bound is the student's NameError, as data."""
    monkeypatch.setattr(answers, "role", answers.ASK)
    planned = {"key": "k1", "asker": "labcore.answers.ask_call", "args": [{"student": "clamp"}, 11, 0, 10]}
    assert answers.ask(planned, {"clamp": lambda x, lo, hi: max(lo, min(x, hi))}) == {"key": "k1", "value": 10}
    assert answers.ask(planned, {})["raised"] == "NameError: name 'clamp' is not defined"


def test_ask_runs_only_askers_of_the_course(monkeypatch):
    """A plan naming any other function (os.system) is refused as data, never called."""
    monkeypatch.setattr(answers, "role", answers.ASK)
    planned = {"key": "k", "asker": "os.system", "args": ["touch /tmp/pwned-by-plan"]}
    assert answers.ask(planned, {})["raised"].startswith("LookupError: os.system is not an asker")
    assert not Path("/tmp/pwned-by-plan").exists()


def test_the_students_own_kernel_judges_on_the_spot(monkeypatch):
    """Role unset: the asker runs now and the value comes back round-tripped; a stub's error says so."""
    monkeypatch.setattr(answers, "role", answers.OWN)
    assert answers.call("clamp", lambda x, lo, hi: max(lo, min(x, hi)), -1, 0, 10) == 0

    def stub(*args):
        raise NotImplementedError

    with pytest.raises(answers.AnswerRaised, match="not answered yet"):
        answers.call("clamp", stub, 1, 0, 10)


# -- the zygote's side of the pipe ------------------------------------------------------------------------------


def _answering(keys: list[str], forward=None) -> Answering:
    made = Answering({"program": {"cells": [[3, None, 2]], "questions": {"3": [{"key": k} for k in keys]}}}, forward)
    made.cell = 3  # the child said it started test cell 3
    return made


def _sent(made: Answering, *lines: object) -> None:
    """Lines as the child sends them on its report pipe."""
    for line in lines:
        made.line(line if isinstance(line, bytes) else json.dumps(line).encode())


@pytest.mark.parametrize(
    ("lines", "refused"),
    [
        ([{"key": "a", "value": 1}, {"key": "b", "value": 2}], ""),
        ([{"key": "b", "value": 2}], ""),  # a question left unanswered (its cell timed out) is no fault
        ([{"key": "b", "value": 2}, {"key": "a", "value": 1}], "not asked, or a second answer"),
        ([{"key": "a", "value": 1}, {"key": "a", "value": 1}], "not asked, or a second answer"),
        ([{"key": "z", "value": 1}], "not asked, or a second answer"),
        ([{"key": "a", "value": 1, "raised": "x"}], "not an answer"),
        ([b"not json"], "not an answer"),
        ([{"key": "a", "value": 1}], "cell 7"),  # sent while the child was in another cell
    ],
)
def test_the_zygote_keeps_only_planned_answers_once_in_order(lines, refused):
    """Any answer not asked, out of order or twice refuses the job's answers; what is passed on says so last."""
    forwarded: list[bytes] = []
    made = _answering(["a", "b"], forwarded.append)
    if refused == "cell 7":
        made.cell, refused = 7, "not asked, or a second answer"
    _sent(made, *lines)
    assert bool(made.refused) == bool(refused) and refused in made.refused
    passed = [json.loads(x) for x in forwarded]
    if refused:
        assert passed[-1] == {"refused": made.refused}
    else:
        assert passed == [{"answer": line} for line in lines]


# -- end to end, in bubblewrap ----------------------------------------------------------------------------------


def _cell(source: str, **meta: object) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if meta:
        cell.metadata["nbgrader"] = {"schema_version": 3, **meta}
    return cell


def notebook(student_cell: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("from labcore.answers import call", grade_id="setup", locked=True, grade=False, solution=False),
        _cell(student_cell, grade_id="clamp", solution=True, grade=False, locked=False),
        _cell(
            'assert call("clamp", clamp, 5, 0, 10) == 5\n'
            "### BEGIN HIDDEN TESTS\n"
            f'why = "{MARKER}"\n'
            'assert call("clamp", clamp, 11, 0, 10) == 10, why\n'
            "### END HIDDEN TESTS",
            grade_id="test_clamp",
            grade=True,
            solution=False,
            locked=True,
            points=1,
        ),
    ]
    return nb


def grade(student_cell: str, *, whole: bool = False, checker_plans: bool = False) -> dict:
    nb = notebook(student_cell)
    job = warm.Job(
        assignment="toy",
        student="s",
        run_files={},
        answers_program=answers_program(nb, whole=whole).to_json(),
        checker_program=checker_program(nb, whole=whole).to_json(),
        seed=11,
        timeout_s=20,
        lessons=(),
        code=warm.code_digest(),
    )
    assert MARKER not in json.dumps(job.answers_program)  # the sandbox's program holds no test text
    return warm.grade(job, checker_plans)


def errors(result: dict) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for o in result["checked"]["verdicts"]["2"] if o["output_type"] == "error"]


@pytest.fixture(scope="module", autouse=True)
def _warm_processes():
    yield
    warm.close()


HONEST = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))"
STUB = "def clamp(x, lo, hi):\n    raise NotImplementedError"


def test_an_honest_answer_passes_visible_and_hidden_questions():
    result = grade(HONEST)
    assert errors(result) == [] and result["extracted"]["answers_refused"] == ""


def test_a_checker_that_plans_too_gives_the_planners_verdicts():
    """Where no worker has a GPU (grader.cluster), a worker's checker plans the questions itself, and no planner
    process is started: an honest answer still passes, a wrong one fails the hidden question, as with the planner."""
    warm.close()
    honest = grade(HONEST, checker_plans=True)
    wrong = grade("def clamp(x, lo, hi):\n    return max(lo, x)", checker_plans=True)
    assert not [key for key in warm._WARM if key.startswith("planner:")]
    assert errors(honest) == [] and honest["extracted"]["answers_refused"] == ""
    assert errors(wrong) and errors(wrong) == errors(grade("def clamp(x, lo, hi):\n    return max(lo, x)"))


def test_the_sandbox_holds_no_hidden_test_text():
    """A cell that walks the gc and the stack for the hidden region finds nothing to print."""
    walker = STUB + (
        "\nimport gc, sys, base64\n"
        "marker = 'HIDDEN_' + 'MARKER_q9z'\n"
        "def strings(o):\n"
        "    if isinstance(o, (str, bytes)):\n"
        "        yield o if isinstance(o, str) else o.decode('latin-1')\n"
        "    elif isinstance(o, dict):\n"
        "        for k, v in list(o.items()):\n"
        "            yield from strings(k)\n"
        "            yield from strings(v)\n"
        "    elif isinstance(o, (list, tuple, set)):\n"
        "        for v in list(o):\n"
        "            if isinstance(v, (str, bytes)):\n"
        "                yield from strings(v)\n"
        "found = [s for o in gc.get_objects() for s in strings(o) if marker in s and s != marker]\n"
        "frame = sys._getframe()\n"
        "while frame:\n"
        "    found += [s for s in strings(dict(frame.f_locals)) if marker in s and s != marker]\n"
        "    frame = frame.f_back\n"
        "print('FOUND', len(found), base64.b64encode(repr(found).encode()).decode())"
    )
    result = grade(walker)
    printed = "".join(o.get("text", "") for o in result["extracted"]["cells"]["1"])
    assert "FOUND 0 " in printed, printed
    assert MARKER not in json.dumps(result["extracted"])


FORGER = (
    STUB
    + """
import json, os
from labcore.answers import key_of
lines = [json.dumps({"key": key_of(f"clamp({x}, 0, 10)", ("call", "clamp", (x, 0, 10))), "value": v}) + "\\n"
         for x, v in ((5, 5), (11, 10))]
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        os.write(fd, "".join(lines).encode())
    except OSError:
        pass
for folder in ("/sandbox/out", "."):
    for root, dirs, files in os.walk(folder):
        for name in dirs + ["."]:
            try:
                with open(os.path.join(root, name, "answers.jsonl"), "a") as out:
                    out.writelines(lines)
            except OSError:
                pass
"""
)


def test_forged_answers_on_every_fd_and_path_earn_nothing():
    """Untouched stub plus correct answers written to every open fd and every answers.jsonl it can reach: the
    genuine answers (the stub's error) follow the forged ones, so the zygote refuses them all: the cell fails."""
    result = grade(FORGER)
    assert "not asked, or a second answer" in result["extracted"]["answers_refused"]
    assert errors(result) and all("no answer of this run counts" in e for e in errors(result)), errors(result)


# -- the whole-notebook program (--feedback now) ----------------------------------------------------------------


@pytest.mark.parametrize("student", [HONEST, STUB, FORGER], ids=["honest", "stub", "forger"])
def test_whole_notebooks_get_the_same_verdicts_and_no_test_text(student):
    """--feedback now runs the lesson cells too, through the same questions, channel and checker: the same verdicts
    for an honest answer, a stub and a forger, and still no test text in the sandbox."""
    later, now = grade(student), grade(student, whole=True)
    assert MARKER not in json.dumps(now["extracted"])
    assert [e.split(":")[0] for e in errors(now)] == [e.split(":")[0] for e in errors(later)]
    assert now["extracted"]["answers_refused"] == later["extracted"]["answers_refused"]


def test_a_whole_notebook_keeps_what_its_lesson_cells_show():
    """A lesson cell's figure and last value come back as rich outputs (the answers-only program never runs it)."""
    nb = notebook(HONEST)
    lesson = _cell(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n6 * 7", grade_id="plot", locked=True, grade=False
    )
    nb.cells.insert(2, lesson)
    program = answers_program(nb, whole=True).to_json()
    job = warm.Job("toy", "s", {}, program, checker_program(nb, whole=True).to_json(), 3, 20, (), warm.code_digest())
    shown = warm.grade(job)["extracted"]["cells"]["2"]
    assert [o["output_type"] for o in shown] == ["execute_result", "display_data"]
    assert shown[0]["data"]["text/plain"] == "42" and shown[1]["data"]["image/png"].startswith("iVBOR")
    assert "2" not in [str(i) for i, _, _ in answers_program(nb).cells]


def test_a_cells_names_are_kept_for_short_sources_only():
    """The coordinator keeps a cell's names by its source, up to CACHED_SOURCE characters and CACHED_CELLS sources:
    the same names either way, and a student's pasted megabytes are read afresh, never kept."""
    program._names.cache_clear()
    short = "import numpy as np\nx = np.arange(n)\n%timeit x\n"
    assert program.names(short) == (frozenset({"np", "n"}), frozenset({"np", "x"}))  # the magic line left out
    assert program.names(short) is program.names(short)  # kept
    long = "y = z\n" + "#" * program.CACHED_SOURCE
    assert program.names(long) == (frozenset({"z"}), frozenset({"y"}))
    assert program._names.cache_info().currsize == 1  # the long source was never kept
    assert program._names.cache_info().maxsize * program.CACHED_SOURCE <= 16 << 20
