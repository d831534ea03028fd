"""Same work, same grade (labcore.measured): within a grading run identical work is timed once and every later
submission of it reads that measurement; nothing is shared outside grading, across runs, or through a folder that
is not the grader's own."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from labcore import answers, measured

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def grading(tmp_path, monkeypatch):
    """A grading run's checker: grading role, a seed of its own, a private temporary folder."""
    monkeypatch.setattr(answers, "role", answers.Role.judge(tmp_path / "answers.jsonl", time.time_ns()))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def counting(values: list[float]):
    def measure() -> float:
        values.append(len(values) + 1.0)
        return values[-1]

    return measure


def test_identical_work_is_measured_once_and_other_work_again(grading):
    runs: list[float] = []
    first = measured.once("check", "trace A", counting(runs), float, float)
    again = measured.once("check", "trace A", counting(runs), float, float)
    other = measured.once("check", "trace B", counting(runs), float, float)
    assert first == (1.0, False) and again == (1.0, True) and other == (2.0, False) and runs == [1.0, 2.0]
    assert measured.once("another check", "trace A", counting(runs), float, float) == (3.0, False)


def test_a_new_grading_run_measures_again(grading, monkeypatch):
    runs: list[float] = []
    measured.once("check", "trace A", counting(runs), float, float)
    monkeypatch.setattr(answers, "role", answers.Role.judge(grading / "answers.jsonl", "another run"))
    assert measured.once("check", "trace A", counting(runs), float, float) == (2.0, False)


def test_nothing_is_shared_in_a_students_own_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(answers, "role", answers.OWN)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runs: list[float] = []
    assert [measured.once("check", "A", counting(runs), float, float)[1] for _ in range(2)] == [False, False]
    assert not list(tmp_path.iterdir())


def test_a_folder_open_to_others_is_not_used(grading):
    runs: list[float] = []
    measured.once("check", "A", counting(runs), float, float)
    (folder,) = grading.iterdir()
    folder.chmod(0o777)  # a student who could write there could plant a measurement
    assert measured.once("check", "A", counting(runs), float, float) == (2.0, False)


# Two checkers of one run on the same work at once: the second waits for the first's measurement and reads it.
CHECKER = """
import sys, tempfile, time
from labcore import answers, measured
answers.act(answers.Role.judge(sys.argv[1] + "/answers.jsonl", sys.argv[3]))
tempfile.tempdir = sys.argv[1]
def measure():
    time.sleep(0.5)
    return float(sys.argv[2])
value, shared = measured.once("check", "trace A", measure, float, float)
print(value, shared)
"""


def test_a_second_checker_waits_for_the_first_measurement(grading):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    seed = answers.role.seed
    first = subprocess.Popen([sys.executable, "-c", CHECKER, str(grading), "1", seed], env=env, stdout=subprocess.PIPE)
    time.sleep(0.2)
    second = subprocess.Popen([sys.executable, "-c", CHECKER, str(grading), "2", seed], env=env, stdout=subprocess.PIPE)
    outs = [proc.communicate(timeout=30)[0].decode().split() for proc in (first, second)]
    assert len({value for value, _ in outs}) == 1 and sorted(shared for _, shared in outs) == ["False", "True"]
