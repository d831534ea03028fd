"""python -m grader report on day 54: the class report's numbers, read off the page of a small real class graded
offline.

The class: four day-54 submissions from the corpus (the reference, the untouched release twice, a schedule that
synchronizes the device after every chunk) graded once for the module, and the reference of the next lesson of the
list collected but not graded. The report's parts without a graded class (the checks' results as data, the
leaderboard's ties, the grouping of failure reasons) are tests/test_report.py's.
"""

from __future__ import annotations

import html.parser
import re
import shutil
from types import SimpleNamespace

import pytest

from grader.report_data import read_csv
from grader.runner import REPO as ROOT
from labcore.device import gpu_available
from labcore.lessons import names
from tests.corpus import CORPUS, POINTS, Submission, full
from tests.installed import grader

DAY54 = ("d54-reference", "d54-untouched", "d54-device-sync")
UNTOUCHED_TWICE = "d54-untouched-2"  # a second student who handed in the release untouched
OTHER = next(name for name in names() if name != "day54")  # another lesson, handed in and never autograded
OTHER_REFERENCE = "other-lesson-reference"
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
        if sub.name in DAY54:
            sub.write(subs / sub.name)
    Submission(OTHER_REFERENCE, OTHER, "the reference", full(OTHER)).write(subs / OTHER_REFERENCE)
    shutil.copytree(subs / "d54-untouched", subs / UNTOUCHED_TWICE)
    for step in (("setup", str(root)), ("collect", str(root), str(subs))):
        done = grader(*step)
        assert done.rc == 0, (step, done.out[-2000:], done.err[-2000:])
    before = grader("report", str(root))
    done = grader("autograde", str(root), "--assignment", "day54", "--jobs", "1", "--timeout", str(TIMEOUT_S))
    assert done.rc == 0, (done.out[-3000:], done.err[-3000:])
    run = grader("report", str(root))
    page = root / "report" / "index.html"
    return SimpleNamespace(root=root, before=before, run=run, page=page, text=page.read_text() if page.exists() else "")


def test_nothing_graded_yet_is_one_line_and_exit_2(graded):
    """Before autograde: exit 2, one line naming the next step, no page."""
    assert graded.before.rc == 2 and graded.before.out.startswith("grader report:")
    assert len(graded.before.err.splitlines()) == 1
    assert "is graded yet: run python -m grader autograde" in graded.before.err


def test_the_report_is_written_and_summed_up(graded):
    """Exit 0; the page, the day54 PNGs of scores and ratios, the CSV; the headline names the top failure."""
    assert graded.run.rc == 0, graded.run.err
    lines = graded.run.out.splitlines()
    assert lines[0] == f"grader report: {graded.root} -> {graded.page}"
    assert lines[1].startswith("day54: 4 of 5 students graded (1 not submitted); most common failure: ")
    by_lesson = {line.split(":", 1)[0]: line for line in lines[1:] if ": " in line and " students graded" in line}
    assert (
        by_lesson[OTHER]
        == f"{OTHER}: 0 of 5 students graded (4 not submitted, 1 not graded (autograde has not recorded it))"
    )
    # the lessons nobody handed in are said too, each once (the list of lessons decides which are there)
    assert set(by_lesson) == set(names())
    figures = ("day54-pipelined-naive-64-mib-2-buffers", "day54-challenge-yours-the-course-s-best-your-settings")
    for name in ("scores-day54.png", *(f"{figure}.png" for figure in figures)):
        assert (graded.page.parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f'src="{name}"' in graded.text
    assert not list(graded.page.parent.glob(f"*{OTHER}*.png"))  # nothing graded there, nothing printed


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
    assert ["1", "(whole submission)", "not submitted", "", OTHER_REFERENCE] in found
    other = Tables(graded.text).tables[f"failures-{OTHER}"][1:]
    assert ["1", "(whole submission)", "not graded (autograde has not recorded it)", "", OTHER_REFERENCE] in other


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
    for student in (*DAY54, UNTOUCHED_TWICE, OTHER_REFERENCE):
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
