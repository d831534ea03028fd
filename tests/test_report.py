"""python -m grader report, its parts without a graded class: a folder that is not a grading directory, the checks'
results as data (their round trip through a cell's outputs and the CSV), the leaderboard with its ties and the
grouping of failure reasons. The report of a real class graded offline is read in day 54's folder
(day54/tests/test_day54_report.py), a lesson whose checks measure, rank and fail in every way the page shows.
"""

from __future__ import annotations

import pytest

from grader.report_data import Measured, leaderboard, read_csv, reason, scrub, write_csv
from labcore.checking import Result, outputs, results_in

from installed import grader


def test_not_a_grading_directory_is_one_line_and_exit_2(tmp_path):
    """A folder without nbgrader_config.py: exit 2, one line, nothing on stdout or on disk."""
    done = grader("report", str(tmp_path))
    assert done.rc == 2 and done.out == ""
    assert len(done.err.splitlines()) == 1 and f"{tmp_path} is not a grading directory" in done.err
    assert list(tmp_path.iterdir()) == []


# -- the parts, without grading -------------------------------------------------------------------------------------


def test_one_reason_however_the_numbers_paths_and_student_fall():
    """Numbers become #, absolute paths <path>, the student's id <student>; names with digits stay."""
    one = reason(
        "UsageError",
        "/home/ann/g/autograded/ann/lesson/lesson_run_nvtx_sum.csv line 7: student 'ann', H200 export moved "
        "1,048,576 bytes\nmore",
        "ann",
    )
    other = reason(
        "UsageError",
        "/tmp/grader-autograde-x1/bob/lesson/lesson_run_nvtx_sum.csv line 12: student 'bob', H200 export moved "
        "2.5e6 bytes",
        "bob",
    )
    assert one == other == "UsageError: <path> line #: student '<student>', H200 export moved # bytes"
    assert reason("CellTimeoutError", "") == "CellTimeoutError"
    assert reason("AssertionError", "a device synchronize", "a") == "AssertionError: a device synchronize"
    assert scrub("in ~/grading/x and (/tmp/a.b) for 3 / 4 GB/s pipelined/naive") == (
        "in <path> and (<path>) for 3 / 4 GB/s pipelined/naive"
    )


def result(value: float, noise: float | None = 0.013, **more) -> Result:
    return Result(
        "lesson challenge: yours / the link floor",
        "your settings",
        "x the link floor",
        value,
        "x",
        more.pop("source", "live"),
        reference=1.065,
        noise=noise,
        ranked=True,
        **more,
    )


def measured(student: str, value: float, **more) -> Measured:
    return Measured("lesson", "lesson", "test_challenge", student, result(value, **more))


def test_a_result_travels_through_a_cells_outputs_and_the_csv(tmp_path):
    """A check's result comes back equal from a test cell's outputs (JSON and back, as the checker sends them) and
    from the CSV; a malformed output is no result."""
    import json

    one = result(1.071, detail="16 MiB windows (64 chunks), 6 buffers, 6 streams: yours 24.1 ms")
    two = Result("other gather / the pinned copy", "51.2 MB batch", "fraction", 0.91, "fraction", "recorded")
    cell = json.loads(json.dumps(outputs([one, two])))
    forged = [
        {"output_type": "display_data", "data": {"application/vnd.labcore.result+json": {"value": "x"}}},
        {
            "output_type": "display_data",
            "data": {"application/vnd.labcore.result+json": {**one.to_dict(), "source": "mine"}},
        },
        {"output_type": "stream", "name": "stdout", "text": "pipelined/naive = 0.100 <= 0.70"},
    ]
    assert results_in(cell + forged) == [one, two]  # a sentence is never read as a number
    rows = [Measured("lesson", "lesson", "test_challenge", "ann", one), Measured("other", "ot", "test_g", "bob", two)]
    assert read_csv(write_csv(rows, tmp_path / "m.csv")) == rows
    anonymous = read_csv(write_csv(rows, tmp_path / "a.csv", anonymous=True))
    assert {m.student for m in anonymous} == {"anonymous"} and [m.result for m in anonymous] == [one, two]
    assert one.passed is None and two.passed is None  # shown, not judged
    with pytest.raises(ValueError, match="source"):
        result(1.0, source="guessed")
    with pytest.raises(ValueError, match="finite"):
        result(float("nan"))


def test_the_leaderboard_ranks_by_the_floor_ratio_with_ties_within_the_noise():
    """1.060 and 1.070 lie within 1.3% of each other: one place, shown as a tie; 1.120 is the next place (3rd)."""
    found = [measured("cy", 1.12), measured("ann", 1.07), measured("bob", 1.06), measured("dee", 1.30, noise=None)]
    found.append(
        Measured(
            "lesson",
            "lesson",
            "test_challenge",
            "ann",
            Result(
                "lesson challenge: yours / the course's best", "your settings", "x", 1.005, "x", "live", threshold=1.03
            ),
        )
    )
    board = leaderboard(found, "lesson challenge: yours / the link floor")
    assert [(s.place, s.student, s.tied) for s in board] == [
        (1, "bob", True),
        (1, "ann", True),
        (3, "cy", False),
        (4, "dee", False),
    ]
    assert [o.value for o in board[1].others] == [1.005] and board[0].others == ()
    assert {s.student for s in leaderboard(found, "lesson challenge: yours / the link floor", anonymous=True)} == {
        "anonymous"
    }
    exact = leaderboard([measured("a", 1.06, noise=None), measured("b", 1.0601, noise=None)], found[0].result.check)
    assert [s.place for s in exact] == [1, 2]  # without a noise nothing ties but equal numbers
