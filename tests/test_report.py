"""python -m grader report: the class report's numbers, read off the page of a small real class graded offline.

The class: four day54 submissions from the corpus (the reference, the untouched release twice, a schedule that
synchronizes the device after every chunk) graded once for the module, and one zero_copy submission collected but
not graded. The parsing of the checks' lines and the grouping of failure reasons are also tested on their own.
"""

from __future__ import annotations

import html.parser
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from corpus import CORPUS, POINTS

from grader.report import measured_in, reason, scrub
from labcore.device import gpu_available

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
    """Exit 0; the page, the two day54 PNGs of scores and ratios; the headline names the top failure."""
    assert graded.run.rc == 0, graded.run.err
    lines = graded.run.out.splitlines()
    assert lines[0] == f"grader report: {graded.root} -> {graded.page}"
    assert lines[1].startswith("day54: 4 of 5 students graded (1 not submitted); most common failure: ")
    assert (
        lines[2] == "zero_copy: 0 of 5 students graded (4 not submitted, 1 not graded (autograde has not recorded it))"
    )
    for name in ("scores-day54.png", "day54-ratio-64MiB-2buffers.png", "day54-challenge.png"):
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
    ratio = table["day54 pipelined/naive at 64 MiB with 2 buffers"]
    students, passed, _, low, high, threshold, reference = ratio[:7]
    assert (students, passed, threshold) == ("2", "1", "<= 0.7")
    assert float(low) < 0.7 < float(high) and float(high) == pytest.approx(1.0, abs=0.02)
    assert float(reference) == pytest.approx(float(low), abs=2e-3)  # the reference student is the reference pipeline
    assert table["day54 pipelined/naive at 4 MiB with 2 buffers"][:2] == ["1", "1"]  # the hidden check, after a pass
    challenge = table["day54 challenge: your time / the link floor"]
    assert challenge[:2] == ["2", "2"] and challenge[5:7] == ["<= 1.05", "1.000"]


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


@pytest.mark.parametrize(
    "line, panel, value, threshold, reference, how",
    [
        (
            "[check] pipelined/naive = 0.600 <= 0.70, 1.040x the reference pipeline <= 1.05x at 64 MiB with 2 buffers "
            "(live, medians of 3 rounds, every timed output verified)",
            "day54 pipelined/naive at 64 MiB with 2 buffers",
            0.6,
            0.7,
            0.6 / 1.04,
            "live",
        ),
        (
            "your schedule takes 1.200x the reference pipeline's time at 4 MiB with 2 buffers (from your run's nsys "
            "exports (day54_run_*.csv), the operation sequence checked against your schedule): more than 1.05x; "
            "something in it serializes what the reference overlaps",
            "day54 your time / the reference pipeline's at 4 MiB with 2 buffers",
            1.2,
            1.05,
            1.0,
            "exports",
        ),
        (
            "your schedule takes 30.00 ms, 1.340x the link floor (22.38 ms) at 8 MiB windows (128 chunks), 2 buffers, "
            "2 streams (live, median of 7 rounds); the challenge asks for at most 1.05x",
            "day54 challenge: your time / the link floor",
            1.34,
            1.05,
            1.0,
            "live",
        ),
        (
            "live, medians of 5: your gather 1.100 ms = 46.5 GB/s, the pinned copy of the same 51.2 MB 0.930 ms = "
            "55.1 GB/s: 0.85 of it, below 0.85",
            "zero_copy gather / the pinned copy of the same 51.2 MB batch",
            0.85,
            0.85,
            None,
            "live",
        ),
    ],
)
def test_the_checks_lines_are_read(line, panel, value, threshold, reference, how):
    """Each check's pass or fail line gives its number, threshold, the reference's value and how it measured."""
    found = measured_in(line, None)[0]
    assert (found.panel.title, found.value, found.threshold, found.how) == (panel, value, threshold, how)
    assert found.reference == (pytest.approx(reference) if reference is not None else None)
    assert measured_in("[check] ratios: 4 MiB 0.559, 64 MiB 0.582, 256 MiB 0.643", None) == []
