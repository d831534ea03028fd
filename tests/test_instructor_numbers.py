"""The instructor's numbers say what they are: a class of five on the toy assignment (one fully graded, one whose
written answer waits for grading by hand, one timing out, one misnamed notebook, one not submitting), through
setup, collect, autograde, grading by hand, feedback and export. The CSV, the autograde table and the feedback
pages tell a real 0 from a missing one and name no path of the grading machine."""

from __future__ import annotations

import csv
import re
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed")

from test_grader_cli import TOY, grader, make_checkout

from grader.feedback import html_text

TIMEOUT_S = 4
SKIP_REASON = "no notebook named toy.ipynb (the folder held Toy.ipynb)"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> SimpleNamespace:
    """The whole round once, outside any checkout."""
    from nbgrader.api import Gradebook

    from grader.grading import GradingDir, add_students
    from grader.layout import COURSE_ID

    base = tmp_path_factory.mktemp("class5")
    checkout = make_checkout(base / "checkout")
    assert grader("--repo", str(checkout), "generate").rc == 0
    subs = base / "submissions"
    for student, like in (("full", "correct"), ("written", "correct"), ("slow", "hangs"), ("misnamed", "correct")):
        shutil.copytree(TOY / "submissions" / like, subs / student)
    (subs / "misnamed" / "toy.ipynb").rename(subs / "misnamed" / "Toy.ipynb")
    for path in (subs / "misnamed").glob("toy_run*"):
        path.unlink()
    root = base / "dir"
    run = SimpleNamespace(root=root)
    run.setup = grader("--repo", str(checkout), "setup", str(root))
    add_students(GradingDir(root), ["absent"])  # on the roster, hands in nothing
    run.collect = grader("collect", str(root), str(subs))
    run.autograde = grader("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S))
    with Gradebook(GradingDir(root).db_url, COURSE_ID) as gb:  # grading one written answer as formgrader does
        grade = gb.find_grade("why_two_buffers", "toy", "toy", "full")
        grade.manual_score, grade.needs_manual_grade = 2.0, False
        gb.db.commit()
    run.feedback = grader("feedback", str(root))
    run.export = grader("export", str(root), "--to", str(base / "grades.csv"))
    run.csv = base / "grades.csv"
    return run


def test_csv_says_what_each_number_is(graded):
    """A status per row; raw_score and score empty where nothing was graded, numbers where something was."""
    assert graded.export.rc == 0, graded.export.err
    with graded.csv.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames[-1] == "status" and "raw_score" in reader.fieldnames
        rows = {r["student_id"]: r for r in reader}
    status = {s: r["status"] for s, r in rows.items()}
    assert status == {
        "absent": "not submitted",
        "full": "graded",
        "misnamed": f"not graded: skipped at collect: {SKIP_REASON}",
        "slow": "graded, written answers pending",
        "written": "graded, written answers pending",
    }
    for student in ("absent", "misnamed"):
        assert rows[student]["raw_score"] == rows[student]["score"] == ""
    assert float(rows["full"]["raw_score"]) == 6.0
    assert float(rows["written"]["raw_score"]) == 4.0
    assert float(rows["slow"]["raw_score"]) == 1.0


def _rows(lines: list[str]) -> dict[str, str]:
    header = lines.index(next(x for x in lines if x.startswith("student")))
    rows = lines[header + 1 :]
    return {line.split()[0]: line for line in rows[: rows.index("") if "" in rows else len(rows)]}


def test_autograde_table_says_it_in_words(graded):
    """Skipped at collect, not submitted, timed out and pending written answers each named in their row."""
    assert graded.autograde.rc == 0, graded.autograde.out + graded.autograde.err
    rows = _rows(graded.autograde.lines)
    assert sorted(rows) == ["absent", "full", "misnamed", "slow", "written"]
    assert re.fullmatch(r"absent\s+not submitted\s+-\s+-", rows["absent"])
    skipped = f"not graded: skipped at collect: {SKIP_REASON}"
    assert re.fullmatch(rf"misnamed\s+not graded\s+-\s+-\s+{re.escape(skipped)}", rows["misnamed"])
    pending = "written answers pending: why_two_buffers (2 points, by hand)"
    assert re.fullmatch(rf"written\s+4 / 4\s+[\d.]+\s+[\d.]+\s+{re.escape(pending)}", rows["written"])
    assert re.fullmatch(
        rf"slow\s+1 / 4\s+[\d.]+\s+[\d.]+\s+timed out: test_clamp_visible, test_clamp_hidden; {re.escape(pending)}",
        rows["slow"],
    )


def test_feedback_names_pending_written_answers(graded):
    """A page made before grading by hand says which written answers wait; a graded one says nothing of it."""
    assert graded.feedback.rc == 0, graded.feedback.err
    pages = {p.parent.parent.name: html_text(p) for p in (graded.root / "feedback").glob("*/toy/toy.html")}
    assert sorted(pages) == ["full", "slow", "written"]
    line = "Written answers not graded yet: 1 cell (why_two_buffers; 2 points)"
    assert line in pages["written"] and line in pages["slow"] and "not graded yet" not in pages["full"]
    assert pages["written"].lstrip().find(line) < pages["written"].find("clamp")  # at the top


def test_feedback_names_no_path_of_the_grading_machine(graded):
    """Neither the grading directory, the temporary folder nor the home folder appears in any page."""
    places = [str(graded.root), tempfile.gettempdir() + "/", str(Path.home()) + "/"]
    for page in (graded.root / "feedback").glob("*/toy/*.html"):
        text = page.read_text()
        assert [p for p in places if p in text] == [], page


def test_strip_paths_replaces_the_machines_paths_and_nothing_else():
    """Paths under the grading directory, the temporary folder or home become <path>; tags and URLs stay."""
    from grader.status import strip_paths

    places = ["/srv/grading", "/tmp", "/home/ann"]
    text = (
        '<div>File "/srv/grading/autograded/ann/toy/x.py", line 3</div>'
        "<pre>/tmp/grader-autograde-x1/_sandbox_library/labcore/answers.py /home/ann</pre>"
        '<a href="https://example.org/tmpfile">/tmpfile</a>'
    )
    assert strip_paths(text, places) == (
        '<div>File "&lt;path&gt;", line 3</div><pre>&lt;path&gt; &lt;path&gt;</pre>'
        '<a href="https://example.org/tmpfile">/tmpfile</a>'
    )


def test_the_bar_names_the_students_in_work():
    """On a terminal the autograde bar shows who is being graded; a log line names each one done."""
    import io

    from grader.cli import _in_work
    from labcore.progress import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    with progress(2, "toy", unit="nb", file=screen) as bar:
        calls = _in_work(bar)
        calls["started"]("ann")
        calls["started"]("bob")
        assert "grading ann, bob" in screen.getvalue()
        calls["progress"]("ann")
        assert screen.getvalue().rstrip().endswith("grading bob]")
    log = io.StringIO()
    with progress(1, "toy", unit="nb", file=log) as bar:
        calls = _in_work(bar)
        calls["started"]("ann")
        calls["progress"]("ann")
    assert log.getvalue().startswith("toy: 1/1 ann done (")
