"""What the student bundle's lesson shows from a withheld reference: the recorded result of that very call, only.

The instructors' checkout, with labcore.answers.RECORD_ENV set, files every reference call's result; the withheld
copy of the module (grader.withhold) answers a call with exactly those arguments from the record and raises
ReferenceWithheld for any other, and a `recordable=False` reference is never recorded.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from grader.withhold import withhold_python
from labcore import answers

MODULE = '''
import dataclasses

from labcore.answers import reference


@dataclasses.dataclass(frozen=True)
class Bound:
    value: float
    why: str


@reference
def model(h2d_ms, n_chunks=16):
    """The exercise's answer."""
    return Bound(h2d_ms * 2 + n_chunks, "fill")


@reference(recordable=False)
def key():
    return {"A": "pageable"}
'''


def load(path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """The checkout's module run with recording on, then its withheld copy reading that record."""
    folder = tmp_path / "recorded"
    monkeypatch.setenv(answers.RECORD_ENV, str(folder))
    (tmp_path / "lesson_m.py").write_text(MODULE)
    checkout = load(tmp_path / "lesson_m.py", "lesson_m")
    assert checkout.model(1.5) == checkout.Bound(19.0, "fill")  # recorded, n_chunks defaulted
    assert checkout.key() == {"A": "pageable"}
    monkeypatch.delenv(answers.RECORD_ENV)
    text, names = withhold_python(MODULE, "lesson_m.py", "lesson_m")
    assert names == ["model", "key"] and "* 2" not in text and "pageable" not in text
    (tmp_path / "lesson_m.py").write_text(text)
    monkeypatch.setattr(answers, "RECORDED_DIR", folder)
    answers._recorded_calls.cache_clear()
    yield load(tmp_path / "lesson_m.py", "lesson_m")
    answers._recorded_calls.cache_clear()
    sys.modules.pop("lesson_m", None)


def test_the_withheld_copy_answers_the_recorded_call_and_says_so(recorded, capsys):
    assert recorded.model(1.5, n_chunks=16) == recorded.Bound(19.0, "fill")
    assert "the course's recorded result" in capsys.readouterr().out
    assert answers.withheld(recorded.model)


def test_any_other_call_of_a_withheld_reference_raises(recorded):
    with pytest.raises(answers.ReferenceWithheld, match=r"lesson_m\.model"):
        recorded.model(1.5000001)
    with pytest.raises(answers.ReferenceWithheld, match=r"lesson_m\.key"):
        recorded.key()  # recordable=False: its answer never reaches the record


def test_the_student_answer_stands_in_only_while_inside(recorded):
    """standing_in replaces the reference in every module holding it, and puts it back."""
    original = recorded.model
    with answers.standing_in({original: lambda *a: "mine"}, ("lesson_m",)):
        assert recorded.model(1.0) == "mine"
    assert recorded.model is original
