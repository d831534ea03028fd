"""python -m grader report: the class report's numbers, read off the page of a small real class graded offline.

The class: four day54 submissions from the corpus (the reference, the untouched release twice, a schedule that
synchronizes the device after every chunk) graded once for the module, and one zero_copy submission collected but
not graded. The checks' results as data (their round trip through a cell's outputs and the CSV), the leaderboard
with its ties and the grouping of failure reasons are also tested on their own.
"""

from __future__ import annotations

import html.parser
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from corpus import CORPUS, POINTS

from grader.report_data import Measured, leaderboard, read_csv, reason, scrub, write_csv
from labcore.checking import Result, outputs, results_in
from labcore.device import gpu_available
from labcore.lessons import names

from installed import grader

ROOT = Path(__file__).resolve().parents[1]
DAY54 = ("d54-reference", "d54-untouched", "d54-device-sync")
UNTOUCHED_TWICE = "d54-untouched-2"  # a second student who handed in the release untouched
ZERO_COPY = "zc-reference"  # collected, never autograded
TIMEOUT_S = 20


class Tables(html.parser.HTMLParser):
    """{table id: rows of cell texts} of an HTML page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("id") or "", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def rows(page: str, table: str) -> dict[str, list[str]]:
    """A table's rows by their first cell (the header row left out)."""
    found = Tables(page).tables[table]
    return {row[0]: row[1:] for row in found[1:]}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> SimpleNamespace:
    """setup, collect, a report before grading, autograde day54, the report."""
    if gpu_available():
        pytest.skip("the expected numbers are those of the offline checks")
    base = tmp_path_factory.mktemp("report")
    subs, root = base / "submissions", base / "grading"
    for sub in CORPUS:
        if sub.name in (*DAY54, ZERO_COPY):
            sub.write(subs / sub.name)
    shutil.copytree(subs / "d54-untouched", subs / UNTOUCHED_TWICE)
    for step in (("setup", str(root)), ("collect", str(root), str(subs))):
        done = grader(*step)
        assert done.rc == 0, (step, done.out[-2000:], done.err[-2000:])
    before = grader("report", str(root))
    done = grader("autograde", str(root), "--assignment", "day54", "--jobs", "2", "--timeout", str(TIMEOUT_S))
    assert done.rc == 0, (done.out[-3000:], done.err[-3000:])
    run = grader("report", str(root))
    page = root / "report" / "index.html"
    return SimpleNamespace(root=root, before=before, run=run, page=page, text=page.read_text() if page.exists() else "")


def test_nothing_graded_yet_is_one_line_and_exit_2(graded):
    """Before autograde: exit 2, one line naming the next step, no page."""
    assert graded.before.rc == 2 and graded.before.out.startswith("grader report:")
    assert len(graded.before.err.splitlines()) == 1
    assert "is graded yet: run python -m grader autograde" in graded.before.err


def test_not_a_grading_directory_is_one_line_and_exit_2(tmp_path):
    """A folder without nbgrader_config.py: exit 2, one line, nothing on stdout or on disk."""
    done = grader("report", str(tmp_path))
    assert done.rc == 2 and done.out == ""
    assert len(done.err.splitlines()) == 1 and f"{tmp_path} is not a grading directory" in done.err
    assert list(tmp_path.iterdir()) == []


def test_the_report_is_written_and_summed_up(graded):
    """Exit 0; the page, the day54 PNGs of scores and ratios, the CSV; the headline names the top failure."""
    assert graded.run.rc == 0, graded.run.err
    lines = graded.run.out.splitlines()
    assert lines[0] == f"grader report: {graded.root} -> {graded.page}"
    assert lines[1].startswith("day54: 4 of 5 students graded (1 not submitted); most common failure: ")
    by_lesson = {line.split(":", 1)[0]: line for line in lines[1:] if ": " in line and " students graded" in line}
    assert (
        by_lesson["zero_copy"]
        == "zero_copy: 0 of 5 students graded (4 not submitted, 1 not graded (autograde has not recorded it))"
    )
    # the lessons nobody handed in are said too, each once (the list of lessons decides which are there)
    assert set(by_lesson) == set(names())
    figures = ("day54-pipelined-naive-64-mib-2-buffers", "day54-challenge-yours-the-course-s-best-your-settings")
    for name in ("scores-day54.png", *(f"{figure}.png" for figure in figures)):
        assert (graded.page.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f'src="{name}"' in graded.text
    assert not list(graded.page.parent.glob("*zero_copy*.png"))  # nothing graded there, nothing printed


def test_scores_per_cell(graded):
    """Full marks, zero and in between per autograded cell match the corpus's points; written answers say so."""
    table = rows(graded.text, "scores-day54")
    subs = {s.name: s for s in CORPUS}
    points = {name: subs[name].points for name in DAY54} | {UNTOUCHED_TWICE: subs["d54-untouched"].points}
    for cell, top in POINTS["day54"].items():
        if not top:
            continue
        got = [p[cell] for p in points.values()]
        full, zero = sum(g == top for g in got), sum(g == 0 for g in got)
        assert table[cell][:5] == [f"{top:g}", "4", str(full), str(zero), str(4 - full - zero)], cell
    assert table["test_pipelined_ratio"][2:4] == ["1", "3"]  # only the reference meets the ratio
    # optional, no points: passed / failed (the device-sync submission's challenge settings are the reference's)
    assert table["test_challenge (optional: passed / failed)"][:5] == ["0", "4", "2", "2", "0"]
    totals = sorted(sum(p.values()) for p in points.values())
    assert totals == [0, 0, 8, 11]
    assert table["autograded total"][:5] == ["11", "4", "1", "2", "1"]
    assert (
        table["answer_stream_order"][2] == "graded by hand: 0 of 2 graded so far; 2 left unanswered (0 from nbgrader)"
    )


def test_failure_reasons_most_common_first(graded):
    """The untouched stub's reason, counted twice with its numbers as #, tops the list with a real example."""
    found = Tables(graded.text).tables["failures-day54"][1:]
    count, cell, top, example, students = found[0]
    assert (count, cell) == ("2", "test_pipelined_correct")
    assert top.startswith("AnswerRaised: your schedule's calls at # chunks x # buffers, # MiB windows: not answered")
    assert "NotImplementedError" in top and re.search(r"\d", top) is None
    assert example.startswith("AnswerRaised: your schedule's calls at 16 chunks x 2 buffers, 64 MiB windows")
    assert students == f"d54-untouched, {UNTOUCHED_TWICE}"
    counts = [int(row[0]) for row in found]
    assert counts == sorted(counts, reverse=True)
    ratio = [row for row in found if row[1] == "test_pipelined_ratio" and row[4] == "d54-device-sync"]
    assert len(ratio) == 1 and ratio[0][2].startswith("AssertionError: pipelined/naive = # at # MiB with # buffers")
    assert ["1", "(whole submission)", "not submitted", "", ZERO_COPY] in found
    zero_copy = Tables(graded.text).tables["failures-zero_copy"][1:]
    assert ["1", "(whole submission)", "not graded (autograde has not recorded it)", "", ZERO_COPY] in zero_copy


def test_measured_ratios_against_the_reference(graded):
    """64 MiB: the reference's 0.578-ish ratio passes, the synchronizing schedule's 1.0 misses; threshold 0.70."""
    table = rows(graded.text, "measured-day54")
    ratio = table["day54 pipelined/naive (64 MiB, 2 buffers)"]
    students, passed, _, low, high, threshold, reference, noise, source = ratio[:9]
    assert (students, passed, threshold, noise, source) == ("2", "1", "<= 0.7", "", "2 simulated")
    assert float(low) < 0.7 < float(high) and float(high) == pytest.approx(1.0, abs=0.02)
    assert float(reference) == pytest.approx(float(low), abs=2e-3)  # the reference student is the reference pipeline
    assert table["day54 pipelined/naive (4 MiB, 2 buffers)"][:2] == ["1", "1"]  # the hidden check, after a pass
    challenge = table["day54 challenge: yours / the course's best (your settings)"]
    assert challenge[:2] == ["2", "2"] and challenge[5:7] == ["<= 1.03", "1.000"]


def test_the_csv_holds_every_measured_number(graded):
    """measured.csv beside the page: one row per number, read back as the page's results."""
    found = read_csv(graded.page.parent / "measured.csv")
    ratios = [m for m in found if m.result.check == "day54 pipelined/naive" and "64 MiB" in m.result.setting]
    assert len(ratios) == 2 and {m.result.source for m in ratios} == {"simulated"}
    assert {m.student for m in ratios} <= set(DAY54) | {UNTOUCHED_TWICE}
    assert all(m.assignment == "day54" and m.cell.startswith("test_") for m in found)


def test_the_challenge_leaderboard(graded):
    """The challenge ranks the class by yours over the link floor: the page's leaderboard, simulated offline."""
    board = Tables(graded.text).tables["leaderboard-day54"]
    assert board[0][:4] == ["place", "student", "x the link floor", "noise"]
    places = [row[0] for row in board[1:]]
    assert places and places[0].startswith("1")
    assert all(row[6] == "simulated" for row in board[1:])


def test_anonymous_names_no_student(graded, tmp_path):
    """--anonymous: the leaderboard by place, failures by count, the CSV without ids; the numbers the same."""
    done = grader("report", str(graded.root), "--anonymous", "--out", str(tmp_path))
    assert done.rc == 0, done.err
    text = (tmp_path / "index.html").read_text()
    for student in (*DAY54, UNTOUCHED_TWICE, ZERO_COPY):
        assert student not in text, student
    assert {m.student for m in read_csv(tmp_path / "measured.csv")} == {"anonymous"}
    assert len(read_csv(tmp_path / "measured.csv")) == len(read_csv(graded.page.parent / "measured.csv"))


def test_the_page_names_no_absolute_path(graded):
    """Neither the grading directory, the checkout nor any other absolute path appears on the page."""
    assert str(graded.root) not in graded.text and str(ROOT) not in graded.text
    assert re.search(r"(?<![\w.<])/(?:tmp|home|root|work|Users|var|opt|usr)/", graded.text) is None


def test_a_submission_that_could_not_be_graded_says_why(graded, tmp_path):
    """Every code cell marked not graded (as autograde does when phase 1 failed): counted with its reason, not zeros."""
    import nbformat

    from grader.preprocessors import mark_not_graded

    root = tmp_path / "grading"
    shutil.copytree(graded.root, root, ignore=shutil.ignore_patterns("report", "submitted", "release"))
    path = root / "autograded" / "d54-reference" / "day54" / "day54.ipynb"
    nb = nbformat.read(path, as_version=4)
    mark_not_graded(nb, f"it ran past its 900 s budget in {root}")
    nbformat.write(nb, path)
    done = grader("report", str(root))
    assert done.rc == 0, done.err
    text = (root / "report" / "index.html").read_text()
    found = Tables(text).tables["failures-day54"][1:]
    why = "not graded (this notebook could not be graded: it ran past its # s budget in <path>; every autograded cell "
    assert [row[4] for row in found if row[2].startswith(why)] == ["d54-reference"]
    assert rows(text, "scores-day54")["test_pipelined_correct"][1] == "3"  # three graded submissions left
    assert str(root) not in text


def test_out_inside_the_checkout_is_refused(graded):
    """The report names students: not inside the course checkout."""
    done = grader("report", str(graded.root), "--out", str(ROOT / "report.html"))
    assert done.rc == 2 and "inside the course checkout" in done.err and not (ROOT / "report.html").exists()


# -- the parts, without grading -------------------------------------------------------------------------------------


def test_one_reason_however_the_numbers_paths_and_student_fall():
    """Numbers become #, absolute paths <path>, the student's id <student>; names with digits stay."""
    one = reason(
        "UsageError",
        "/home/ann/g/autograded/ann/day54/day54_run_nvtx_sum.csv line 7: student 'ann', H200 export moved "
        "1,048,576 bytes\nmore",
        "ann",
    )
    other = reason(
        "UsageError",
        "/tmp/grader-autograde-x1/bob/day54/day54_run_nvtx_sum.csv line 12: student 'bob', H200 export moved "
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
        "day54 challenge: yours / the link floor",
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
    return Measured("day54", "day54", "test_challenge", student, result(value, **more))


def test_a_result_travels_through_a_cells_outputs_and_the_csv(tmp_path):
    """A check's result comes back equal from a test cell's outputs (JSON and back, as the checker sends them) and
    from the CSV; a malformed output is no result."""
    import json

    one = result(1.071, detail="16 MiB windows (64 chunks), 6 buffers, 6 streams: yours 24.1 ms")
    two = Result("zero_copy gather / the pinned copy", "51.2 MB batch", "fraction", 0.91, "fraction", "recorded")
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
    rows = [Measured("day54", "day54", "test_challenge", "ann", one), Measured("zero_copy", "zc", "test_g", "bob", two)]
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
            "day54",
            "day54",
            "test_challenge",
            "ann",
            Result(
                "day54 challenge: yours / the course's best", "your settings", "x", 1.005, "x", "live", threshold=1.03
            ),
        )
    )
    board = leaderboard(found, "day54 challenge: yours / the link floor")
    assert [(s.place, s.student, s.tied) for s in board] == [
        (1, "bob", True),
        (1, "ann", True),
        (3, "cy", False),
        (4, "dee", False),
    ]
    assert [o.value for o in board[1].others] == [1.005] and board[0].others == ()
    assert {s.student for s in leaderboard(found, "day54 challenge: yours / the link floor", anonymous=True)} == {
        "anonymous"
    }
    exact = leaderboard([measured("a", 1.06, noise=None), measured("b", 1.0601, noise=None)], found[0].result.check)
    assert [s.place for s in exact] == [1, 2]  # without a noise nothing ties but equal numbers
