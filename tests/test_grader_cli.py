"""python -m grader with real nbgrader on a toy assignment: release generation and its CI check, validation
both ways, and a whole grading round (setup, collect, autograde, feedback, export) on nine submissions."""

from __future__ import annotations

import contextlib
import csv
import functools
import html
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed")

from grader.cli import main  # noqa: E402
from grader.feedback import html_text  # noqa: E402
from grader.layout import COURSE_ID, GRADEBOOK  # noqa: E402
from labcore.errors import UsageError, run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "data" / "toy_assignment"
MARKER = "HIDDEN_MARKER_7f3a"
TIMEOUT_S = 4  # per cell; the hanging submissions must be stopped by it
POINTS = {"test_clamp_visible": 1.0, "test_clamp_hidden": 2.0, "test_chunk_count": 1.0}
EXPECTED = {  # autograded score per test cell
    "correct": {"test_clamp_visible": 1.0, "test_clamp_hidden": 2.0, "test_chunk_count": 1.0},
    "untouched": {"test_clamp_visible": 0.0, "test_clamp_hidden": 0.0, "test_chunk_count": 0.0},
    "wrong": {"test_clamp_visible": 1.0, "test_clamp_hidden": 0.0, "test_chunk_count": 1.0},
    "raises": {"test_clamp_visible": 0.0, "test_clamp_hidden": 0.0, "test_chunk_count": 1.0},
    "hangs": {"test_clamp_visible": 0.0, "test_clamp_hidden": 0.0, "test_chunk_count": 1.0},
    "deaf": {"test_clamp_visible": 0.0, "test_clamp_hidden": 0.0, "test_chunk_count": 0.0},
    # the kernel exits (status 3) in the chunk_count answer cell, after the clamp tests passed
    "dies": {"test_clamp_visible": 1.0, "test_clamp_hidden": 2.0, "test_chunk_count": 0.0},
    # chunk_count SIGKILLs its own kernel when the test cell calls it
    "quits": {"test_clamp_visible": 1.0, "test_clamp_hidden": 2.0, "test_chunk_count": 0.0},
    # correct; clamp writes a progress line to stderr in both clamp test cells
    "stderr": {"test_clamp_visible": 1.0, "test_clamp_hidden": 2.0, "test_chunk_count": 1.0},
}


def grader(*argv: str) -> SimpleNamespace:
    """Run `python -m grader ARGV` in this process; its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli(main, list(argv))
    return SimpleNamespace(rc=rc, out=out.getvalue(), err=err.getvalue(), lines=out.getvalue().splitlines())


def make_checkout(path: Path) -> Path:
    """A course checkout holding the toy as its only assignment, with the repository's nbgrader_config.py."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", path / "nbgrader_config.py")
    shutil.copytree(TOY / "source" / "toy", path / "toy" / "solutions")
    (path / "lessons.txt").write_text("toy\n")
    return path


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A toy checkout after `generate`."""
    root = make_checkout(tmp_path_factory.mktemp("checkout"))
    done = grader("--repo", str(root), "generate")
    assert done.rc == 0, done.err
    return root


def copy_checkout(checkout: Path, dest: Path) -> Path:
    shutil.copytree(checkout, dest)
    return dest


# -- the release -------------------------------------------------------------------------------------


def test_generate_writes_a_clean_release_and_nothing_else(checkout):
    """course/toy/toy.ipynb has stubs, no hidden test, no outputs; no gradebook or other file appears."""
    assert files_under(checkout) == {
        "nbgrader_config.py",
        "lessons.txt",
        "toy/solutions/toy.ipynb",
        "course/toy/toy.ipynb",
    }
    text = (checkout / "course" / "toy" / "toy.ipynb").read_text()
    assert MARKER not in text and "BEGIN SOLUTION" not in text and "YOUR CODE HERE" in text
    nb = nbformat.read(checkout / "course" / "toy" / "toy.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 5 and all(c.outputs == [] and c.execution_count is None for c in code)


def test_check_passes_on_a_fresh_release(checkout):
    """--check: exit 0 and says so."""
    done = grader("--repo", str(checkout), "generate", "--check")
    assert done.rc == 0, done.out + done.err
    assert done.lines[0].startswith("grader generate --check:")
    assert done.lines[-1] == "course/ matches the lessons' solutions/ and no notebook carries outputs"


def test_check_lists_differences_extra_files_and_outputs(checkout, tmp_path):
    """An edited release, a stray file and outputs in both trees: exit 1, one line each."""
    root = copy_checkout(checkout, tmp_path / "c")
    release = root / "course" / "toy" / "toy.ipynb"
    nb = nbformat.read(release, as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    nbformat.write(nb, release)
    (root / "course" / "toy" / "notes.txt").write_text("stray\n")
    source = root / "toy" / "solutions" / "toy.ipynb"
    nb = nbformat.read(source, as_version=4)
    nb.cells[2].execution_count = 7
    nbformat.write(nb, source)
    (root / "toy" / "solutions" / "toy_run.json").write_text("{}\n")
    done = grader("--repo", str(root), "generate", "--check")
    assert done.rc == 1
    assert "course/toy/toy.ipynb: differs from the generated release" in done.lines
    assert (
        "toy/solutions/toy_run.json: named like a student's run file (toy_run*): autograde would overwrite "
        "students' files with it; remove it" in done.lines
    )
    assert "course/toy/notes.txt: not produced by generation (remove it)" in done.lines
    assert "course/toy/toy.ipynb: cell 2 has 1 output(s)" in done.lines
    assert "toy/solutions/toy.ipynb: cell 2 has execution count 7" in done.lines
    assert "run `python -m grader generate` and commit" in done.err


def test_the_repository_release_is_what_its_solutions_generate():
    """CI: this checkout's course/ equals a fresh generation from solutions/, and nothing carries outputs."""
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    done = grader("generate", "--check")
    assert done.rc == 0, done.out + done.err
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    assert after.stdout == before.stdout  # no gradebook, log or other file left in the checkout


def test_validate_solution_passes_and_release_fails_cleanly(checkout):
    """nbgrader validate passes on the source; --invert finds no passing test in the release."""
    done = grader("--repo", str(checkout), "validate", "--timeout", "20")
    assert done.rc == 0, done.out + done.err
    assert done.lines[1:] == [
        "ok   toy/solutions/toy.ipynb: passes (3 test cells)",
        "ok   course/toy/toy.ipynb: fails with stubs, cleanly (3 test cells)",
    ]


def test_validate_runs_notebooks_outside_the_checkout(checkout, tmp_path):
    """A notebook that writes a run file beside itself leaves nothing in solutions/ or course/."""
    root = copy_checkout(checkout, tmp_path / "c")
    for path in (root / "toy" / "solutions" / "toy.ipynb", root / "course" / "toy" / "toy.ipynb"):
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell('open("toy_run.json", "w").write("{}")'))
        nbformat.write(nb, path)
    before = files_under(root)
    assert grader("--repo", str(root), "validate", "--timeout", "20").rc == 0
    assert files_under(root) == before


def test_validate_fails_on_a_wrong_solution_and_a_release_that_passes(checkout, tmp_path):
    """A solution failing its tests and a 'release' holding answers: exit 1, each named."""
    root = copy_checkout(checkout, tmp_path / "c")
    shutil.copy(root / "toy" / "solutions" / "toy.ipynb", root / "course" / "toy" / "toy.ipynb")
    source = root / "toy" / "solutions" / "toy.ipynb"
    nb = nbformat.read(source, as_version=4)
    nb.cells[6].source = nb.cells[6].source.replace("-(-total_bytes // window_bytes)", "total_bytes // window_bytes")
    nbformat.write(nb, source)
    done = grader("--repo", str(root), "validate", "--timeout", "20")
    assert done.rc == 1
    assert done.lines[1].startswith('FAIL toy/solutions/toy.ipynb: test fails: """chunk_count rounds a partial')
    assert done.lines[2].startswith("FAIL course/toy/toy.ipynb: test passes with the stubs:")


def test_validate_reports_a_harness_crash(checkout, tmp_path):
    """A release whose test cell fails with an ImportError (not a stub's failure) is a crash."""
    from nbgrader.utils import compute_checksum

    root = copy_checkout(checkout, tmp_path / "c")
    release = root / "course" / "toy" / "toy.ipynb"
    nb = nbformat.read(release, as_version=4)
    cell = nb.cells[7]
    cell.source = cell.source.replace('"""\n', '"""\nimport no_such_harness_module\n', 1)
    cell.metadata.nbgrader["checksum"] = compute_checksum(cell)  # as if generated so: not a "changed" cell
    nbformat.write(nb, release)
    done = grader("--repo", str(root), "validate", "--timeout", "20")
    assert done.rc == 1
    assert done.lines[1] == "ok   toy/solutions/toy.ipynb: passes (3 test cells)"
    assert done.lines[2] == (
        "FAIL course/toy/toy.ipynb: the harness crashed: cell 7 (test_chunk_count) raised "
        "ModuleNotFoundError: No module named 'no_such_harness_module' (3 test cells)"
    )


# -- a grading round -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded(checkout, tmp_path_factory) -> SimpleNamespace:
    """setup, collect, autograde, feedback and export once, outside the checkout."""
    base = tmp_path_factory.mktemp("grading")
    subs = base / "submissions"
    shutil.copytree(TOY / "submissions", subs)
    (subs / "correct" / "scratch.txt").write_text("not part of the hand-in\n")
    root = base / "dir"
    run = SimpleNamespace(root=root, subs=subs)
    run.setup = grader("--repo", str(checkout), "setup", str(root))
    run.collect = grader("collect", str(root), str(subs))
    run.autograde = grader("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S))
    run.feedback = grader("feedback", str(root))
    run.export = grader("export", str(root), "--to", str(base / "grades.csv"))
    run.csv = base / "grades.csv"
    return run


def test_setup_makes_a_grading_directory(graded, checkout):
    """Config, gradebook, a copied source and a release equal to the checkout's; next steps printed."""
    assert graded.setup.rc == 0, graded.setup.err
    root = graded.root
    assert (root / "nbgrader_config.py").is_file() and (root / "gradebook.db").is_file()
    assert (root / "source" / "toy").is_dir() and not (root / "source" / "toy").is_symlink()
    assert (root / "release" / "toy" / "toy.ipynb").read_bytes() == (
        checkout / "course" / "toy" / "toy.ipynb"
    ).read_bytes()
    assert graded.setup.lines[0].startswith(f"grader setup: grading directory {root}")
    assert "next steps:" in graded.setup.lines and "warning" not in graded.setup.err
    assert files_under(checkout) == {
        "nbgrader_config.py",
        "lessons.txt",
        "toy/solutions/toy.ipynb",
        "course/toy/toy.ipynb",
    }


def test_setup_refuses_a_folder_inside_the_checkout(checkout):
    """One line, exit 2, nothing created."""
    done = grader("--repo", str(checkout), "setup", str(checkout / "grading"))
    assert done.rc == 2 and done.out == ""
    assert len(done.err.splitlines()) == 1 and "inside the course checkout" in done.err
    assert not (checkout / "grading").exists()


def test_collect_copies_notebooks_and_run_files(graded):
    """Each student's notebook and <a>_run* files land in submitted/<s>/toy/; other files are named, not copied."""
    assert graded.collect.rc == 0, graded.collect.err
    submitted = graded.root / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted(EXPECTED)
    assert files_under(submitted / "correct" / "toy") == {"toy.ipynb", "toy_run.json", "toy_run_nvtx_sum.csv"}
    assert (
        "warning: correct/scratch.txt: not collected (only <a>.ipynb and the <a>_run* files beside it are; "
        "a = toy)" in graded.collect.err
    )
    assert f"toy: {len(EXPECTED)} student(s) ({', '.join(sorted(EXPECTED))})" in graded.collect.lines
    assert graded.collect.lines[-1].startswith(f"{len(EXPECTED)} student(s) collected")


@functools.cache
def empty_gradebook() -> bytes:
    """An nbgrader gradebook with no one in it yet, made once: what setup leaves in a grading directory. Its schema
    revision is read as the grading process reads it (grader.runner; the same as the `alembic` script's, tested
    below), not by a process of its own (5 s of CPU)."""
    import nbgrader.api
    from nbgrader.api import Gradebook

    from grader import runner

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbgrader.api, "get_alembic_version", runner._alembic_head)
        book = Path(tmp) / GRADEBOOK
        with Gradebook(f"sqlite:///{book}", COURSE_ID):
            pass
        return book.read_bytes()


def grading_dir(path: Path) -> Path:
    """A bare grading directory holding the toy's source and an empty gradebook: what collect reads."""
    (path / "source" / "toy").mkdir(parents=True)
    (path / "nbgrader_config.py").write_text("")
    (path / GRADEBOOK).write_bytes(empty_gradebook())
    shutil.copy(TOY / "source" / "toy" / "toy.ipynb", path / "source" / "toy")
    return path


def test_collect_warns_per_file_it_did_not_take_with_the_name_it_expected(tmp_path):
    """Toy.ipynb and 'toy (1).ipynb' are not the toy's notebook: each gets a warning naming toy.ipynb; a student
    left with nothing is named as not submitted; the students taken are listed per assignment."""
    root, subs = grading_dir(tmp_path / "dir"), tmp_path / "subs"
    for student, name in (("ann", "toy.ipynb"), ("bob", "Toy.ipynb"), ("cy", "toy (1).ipynb"), ("dee", "x.ipynb")):
        (subs / student).mkdir(parents=True)
        shutil.copy(TOY / "source" / "toy" / "toy.ipynb", subs / student / name)
    done = grader("collect", str(root), str(subs))
    assert done.rc == 0, done.err
    warnings = [line for line in done.err.splitlines() if line.startswith("warning: ")]
    assert warnings[:3] == [
        "warning: bob/Toy.ipynb: not an assignment's notebook; expected toy.ipynb",
        "warning: cy/toy (1).ipynb: not an assignment's notebook; expected toy.ipynb",
        "warning: dee/x.ipynb: not an assignment's notebook; expected toy.ipynb",
    ]
    assert [w.split(":")[1] for w in warnings[3:]] == [" bob/", " cy/", " dee/"]
    assert all("nothing collected ('not submitted' everywhere)" in w for w in warnings[3:])
    assert "toy: 1 student(s) (ann)" in done.lines and done.lines[-1].startswith("1 student(s) collected")
    assert sorted(p.name for p in (root / "submitted").iterdir()) == ["ann"]


def test_collect_takes_no_link_whatever_it_points_to(tmp_path):
    """A notebook or run file handed in as a link (an archive can hold one) to the instructor's source or a host
    file, a student folder that is a link, a FIFO, a second notebook named as a run file, or a file past
    grader.layout's limits (bytes, a notebook's cells, run files) is not collected: each named in a warning; a
    student with real files beside them keeps the real ones, as data (mode 0644: no set-user-ID bit a root collect
    would keep)."""
    root, subs = grading_dir(tmp_path / "dir"), tmp_path / "subs"
    secret = tmp_path / "host-secret.txt"
    secret.write_text("the grading machine's secret\n")
    (subs / "ann").mkdir(parents=True)
    (subs / "ann" / "toy.ipynb").symlink_to(root / "source" / "toy" / "toy.ipynb")  # the reference, by a link
    (subs / "bob").mkdir()
    shutil.copy(TOY / "submissions" / "correct" / "toy.ipynb", subs / "bob" / "toy.ipynb")
    (subs / "bob" / "toy_run_tool").write_text("#!/bin/sh\nid\n")
    (subs / "bob" / "toy_run_tool").chmod(0o6755)  # set-user-ID and set-group-ID, executable
    (subs / "bob" / "toy_run_trace.csv").symlink_to(secret)
    for i in range(70):  # past the 64 run files an assignment may have: the first 64 by name are taken
        (subs / "bob" / f"toy_run_z{i:02d}.csv").write_text("x\n")
    os.mkfifo(subs / "bob" / "toy_run_fifo.csv")
    with open(subs / "bob" / "toy_run_big.csv", "wb") as f:  # sparse: 65 MiB to stat, nothing on the disk
        f.truncate(65 << 20)
    shutil.copy(TOY / "submissions" / "correct" / "toy.ipynb", subs / "bob" / "toy_run_copy.ipynb")
    (subs / "eve").mkdir()  # small in bytes, but each cell costs the one writer of the class's grades
    many = json.loads((TOY / "submissions" / "correct" / "toy.ipynb").read_text())
    many["cells"] += [{"cell_type": "markdown", "metadata": {}, "source": "", "id": f"m{i}"} for i in range(2_000)]
    (subs / "eve" / "toy.ipynb").write_text(json.dumps(many))
    (subs / "dee").mkdir()
    with open(subs / "dee" / "toy.ipynb", "wb") as f:
        f.truncate(65 << 20)
    elsewhere = tmp_path / "elsewhere" / "cy"
    elsewhere.mkdir(parents=True)
    shutil.copy(TOY / "submissions" / "correct" / "toy.ipynb", elsewhere / "toy.ipynb")
    (subs / "cy").symlink_to(elsewhere, target_is_directory=True)
    done = grader("collect", str(root), str(subs))
    assert done.rc == 0, done.err
    warnings = [line for line in done.err.splitlines() if line.startswith("warning: ")]
    link = "a link, not collected (only regular files are: a link could point anywhere on this machine)"
    assert f"warning: cy/: {link}" in warnings, warnings
    assert f"warning: ann/toy.ipynb: {link}" in warnings and f"warning: bob/toy_run_trace.csv: {link}" in warnings
    assert "warning: bob/toy_run_fifo.csv: not a regular file, not collected" in warnings, warnings
    big = "65 MiB, more than the 64 MiB a {} may be; not collected"
    assert f"warning: bob/toy_run_big.csv: {big.format('run file')}" in warnings, warnings
    assert f"warning: dee/toy.ipynb: {big.format('notebook')}" in warnings, warnings
    assert "warning: eve/toy.ipynb: 2,010 cells, more than the 2,000 a notebook may have; not collected" in warnings
    assert "warning: bob/toy_run_copy.ipynb: not an assignment's notebook; expected toy.ipynb" in warnings, warnings
    skipped = json.loads((root / "collect_skipped.json").read_text())
    assert skipped["dee"] == f"no notebook named toy.ipynb (the folder held toy.ipynb ({big.format('notebook')}))"
    assert "toy: 1 student(s) (bob)" in done.lines, done.lines
    assert sorted(p.name for p in (root / "submitted").iterdir()) == ["bob"]
    taken = root / "submitted" / "bob" / "toy"
    zs = [f"toy_run_z{i:02d}.csv" for i in range(63)]
    assert sorted(p.name for p in taken.iterdir()) == ["toy.ipynb", "toy_run_tool", *zs]
    past = "past the 64 run files and 256 MiB an assignment's run files may come to; not collected"
    assert [w for w in warnings if "toy_run_z" in w] == [
        f"warning: bob/toy_run_z{i}.csv: {past}" for i in range(63, 70)
    ]
    assert {p.stat().st_mode & 0o7777 for p in taken.iterdir()} == {0o644}  # data, whatever its mode was
    assert (taken / "toy_run_tool").stat().st_mtime_ns == (subs / "bob" / "toy_run_tool").stat().st_mtime_ns


def test_collect_takes_nbgraders_own_layout_too(tmp_path):
    """SUBMISSIONS/<student>/<assignment>/ (an nbgrader exchange's `submitted` folder) is collected as
    SUBMISSIONS/<student>/<assignment>.ipynb is, run files beside the notebook included, the rest named in warnings;
    a link in place of that folder is not followed."""
    root, subs = grading_dir(tmp_path / "dir"), tmp_path / "subs"
    (subs / "ann" / "toy" / ".ipynb_checkpoints").mkdir(parents=True)
    shutil.copy(TOY / "submissions" / "correct" / "toy.ipynb", subs / "ann" / "toy" / "toy.ipynb")
    (subs / "ann" / "toy" / "toy_run_notes.csv").write_text("x\n")
    (subs / "ann" / "toy" / "notes.txt").write_text("mine\n")
    (subs / "bob").mkdir()
    (subs / "bob" / "toy").symlink_to(subs / "ann" / "toy", target_is_directory=True)
    done = grader("collect", str(root), str(subs))
    assert done.rc == 0, done.err
    taken = root / "submitted" / "ann" / "toy"
    assert sorted(p.name for p in taken.iterdir()) == ["toy.ipynb", "toy_run_notes.csv"]
    assert (taken / "toy.ipynb").read_bytes() == (TOY / "submissions" / "correct" / "toy.ipynb").read_bytes()
    warnings = [line for line in done.err.splitlines() if line.startswith("warning: ")]
    assert any(w.startswith("warning: ann/toy/notes.txt: not collected") for w in warnings), warnings
    assert any(w.startswith("warning: ann/toy/.ipynb_checkpoints: not collected") for w in warnings), warnings
    assert any(w.startswith("warning: bob/toy: a link, not collected") for w in warnings), warnings
    assert not (root / "submitted" / "bob").exists()


def test_feedback_before_any_autograde_says_so_and_succeeds(tmp_path):
    """An assignment nothing was autograded for yet (a week whose notebooks are not in) is named and passed over:
    nbgrader's generate_feedback would fail on it and stop the feedback of every assignment after it."""
    root, subs = grading_dir(tmp_path / "dir"), tmp_path / "subs"
    (subs / "ann").mkdir(parents=True)
    shutil.copy(TOY / "submissions" / "correct" / "toy.ipynb", subs / "ann" / "toy.ipynb")
    assert grader("collect", str(root), str(subs)).rc == 0
    done = grader("feedback", str(root))
    assert done.rc == 0, done.err
    assert "toy: nothing autograded yet, no feedback" in done.out, done.out


def test_collect_fails_on_a_folder_with_no_student_folder(tmp_path):
    """An empty SUBMISSIONS (or one holding only loose files) is one line and exit 2, nothing written."""
    root, subs = grading_dir(tmp_path / "dir"), tmp_path / "subs"
    subs.mkdir()
    done = grader("collect", str(root), str(subs))
    assert done.rc == 2 and done.out == "" and len(done.err.splitlines()) == 1
    assert done.err.startswith(f"error: {subs} holds no student folder: expected {subs}/<student>/<assignment>.ipynb")
    (subs / "toy.ipynb").write_text("{}")
    assert grader("collect", str(root), str(subs)).rc == 2
    assert not (root / "submitted").exists()


def test_collect_fails_when_it_took_no_notebook(tmp_path):
    """Student folders but no assignment's notebook in any: warnings, then an error line and exit 1."""
    root, subs = grading_dir(tmp_path / "dir"), tmp_path / "subs"
    (subs / "bob").mkdir(parents=True)
    (subs / "bob" / "Toy.ipynb").write_text("{}")
    done = grader("collect", str(root), str(subs))
    assert done.rc == 1
    assert done.err.splitlines()[-1].startswith(f"error: no notebook collected from {subs}")
    assert "warning: bob/Toy.ipynb: not an assignment's notebook; expected toy.ipynb" in done.err


def test_collect_refuses_a_source_file_named_like_run_files(tmp_path):
    """source/toy/toy_run.json would overwrite students' files at autograde: UsageError."""
    from grader.grading import GradingDir, collect

    grading_dir(tmp_path)
    (tmp_path / "source" / "toy" / "toy_run.json").write_text("{}")
    with pytest.raises(UsageError, match=r"source/toy has toy_run.json: names matching toy_run\* are reserved"):
        collect(GradingDir(tmp_path), TOY / "submissions")


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_autograde_scores_each_test_cell(graded, student):
    """Full marks, zero, exactly the failing cells lost, and 0 only for the cells that raised or hung."""
    from grader.autograde import scores
    from grader.grading import GradingDir

    assert graded.autograde.rc == 0, graded.autograde.out + graded.autograde.err
    assert scores(GradingDir(graded.root), "toy", student) == EXPECTED[student]


def test_autograde_table_names_what_timed_out_and_what_failed(graded):
    """One row per student with the score; the hang's cells timed out; a lost kernel is named with its cell."""
    assert graded.autograde.lines[0].startswith(f"grader autograde: {graded.root}, toy (9 submitted); 2 at once")
    header = graded.autograde.lines.index(next(x for x in graded.autograde.lines if x.startswith("student")))
    assert graded.autograde.lines[header].split() == ["student", "score", "sandbox", "s", "checker", "s", "notes"]
    rows, waiting = {}, set()
    written = "written answers pending: why_two_buffers (2 points, by hand)"  # answered, not yet graded by hand
    table = graded.autograde.lines[header + 1 :]
    for line in table[: table.index("")]:  # the table ends at a blank line; where the time went follows
        student, got, _, total, sandbox_s, checker_s, *notes = line.split(maxsplit=6)
        assert float(sandbox_s) >= 0 and float(checker_s) >= 0  # both processes ran and were timed ("-" otherwise)
        note = " ".join(notes)
        if note.endswith(written):
            waiting.add(student)
            note = note.removesuffix(written).removesuffix("; ")
        rows[student] = (f"{got} / {total}", note)
    assert waiting == set(EXPECTED) - {"untouched"}  # nbgrader scores an unchanged written answer 0 by itself
    assert rows["correct"] == ("4 / 4", "") and rows["stderr"] == ("4 / 4", "")
    assert rows["wrong"][1] == "failed: test_clamp_hidden"
    assert rows["hangs"][1] == "timed out: test_clamp_visible, test_clamp_hidden"
    assert rows["deaf"] == (
        "0 / 4",
        f"cell test_clamp_visible ran past the {TIMEOUT_S} s limit and did not stop when interrupted; "
        "not run: test_clamp_hidden, test_chunk_count",
    )
    assert rows["dies"] == ("3 / 4", "the kernel died (exit status 3) in cell chunk_count; not run: test_chunk_count")
    assert rows["quits"] == ("3 / 4", "the kernel died (killed by SIGKILL) in cell test_chunk_count")


def test_hanging_cells_are_stopped_by_the_cell_timeout(graded):
    """The two cells calling the hanging function time out and are interrupted; the next cell still runs."""
    nb = nbformat.read(graded.root / "autograded" / "hangs" / "toy" / "toy.ipynb", as_version=4)
    timed_out = [
        c.metadata.nbgrader["grade_id"]
        for c in nb.cells
        if any(o.get("ename") == "CellTimeoutError" for o in c.get("outputs", []))
    ]
    assert timed_out == ["test_clamp_visible", "test_clamp_hidden"]
    assert not (graded.root / "autograded" / "hangs" / "toy" / "reason.txt").exists()


def test_student_run_files_survive_autograde(graded):
    """nbgrader copies the student's toy_run* files into autograded/ untouched."""
    for name in ("toy_run.json", "toy_run_nvtx_sum.csv"):
        assert (graded.root / "autograded" / "correct" / "toy" / name).read_bytes() == (
            TOY / "submissions" / "correct" / name
        ).read_bytes()


def _rows(lines: list[str]) -> dict[str, tuple[str, str]]:
    """The autograde table: {student: (score, notes)}, the seconds left out."""
    header = lines.index(next(x for x in lines if x.startswith("student")))
    table = lines[header + 1 :]
    rows = {}
    for line in table[: table.index("")]:
        student, got, _, total, _, _, *notes = line.split(maxsplit=6)
        rows[student] = (f"{got} / {total}", " ".join(notes))
    return rows


@pytest.fixture(scope="module")
def graded_now(checkout, tmp_path_factory) -> SimpleNamespace:
    """The same submissions in a grading directory of their own, graded with --feedback now."""
    base = tmp_path_factory.mktemp("now")
    root = base / "dir"
    assert grader("--repo", str(checkout), "setup", str(root)).rc == 0
    assert grader("collect", str(root), str(TOY / "submissions")).rc == 0
    run = SimpleNamespace(root=root)
    run.autograde = grader("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S), "--feedback", "now")
    run.feedback = grader("feedback", str(root))
    return run


def test_feedback_now_grades_as_autograde_does(graded, graded_now):
    """--feedback now runs the one engine: every student's points, timeouts, lost runs and their reasons, as
    autograde's table gives them (hangs, a deaf cell, a dying and a self-killing run among them)."""
    from grader.autograde import scores
    from grader.grading import GradingDir

    done = graded_now.autograde
    assert done.rc == 0, done.out + done.err
    assert f"2 at once, {TIMEOUT_S} s per cell, whole notebooks, cluster local" in done.lines[0]
    for student, expected in EXPECTED.items():
        assert scores(GradingDir(graded_now.root), "toy", student) == expected, student
    assert _rows(done.lines) == _rows(graded.autograde.lines)
    assert graded_now.feedback.rc == 0, graded_now.feedback.err


def test_feedback_never_shows_hidden_tests(graded):
    """No hidden-test source or marker in any HTML; a verdict line and the points instead."""
    assert graded.feedback.rc == 0, graded.feedback.err
    pages = {p.parent.parent.name: p.read_text() for p in (graded.root / "feedback").glob("*/toy/toy.html")}
    assert sorted(pages) == sorted(EXPECTED)
    assert MARKER in (graded.root / "autograded" / "wrong" / "toy" / "toy.ipynb").read_text()  # stock would leak
    for page in pages.values():
        assert MARKER not in page and "BEGIN HIDDEN TESTS" not in page and "11.5" not in page
        assert "# hidden tests: not shown" in page
    assert "hidden tests: passed -- score 2 / 2" in pages["correct"]
    assert "hidden tests: failed -- score 0 / 2" in pages["wrong"]
    assert (
        "hidden tests: not run (a visible check before them failed: AnswerRaised: clamp(10, 0, 10): your code raised "
        "ValueError: clamp is not finished)" in pages["raises"]
    )
    assert (
        f"hidden tests: not passed (cell test_clamp_hidden ran past the {TIMEOUT_S} s limit and was interrupted) "
        "-- score 0 / 2" in pages["hangs"]
    )
    assert (
        f"hidden tests: not run (cell test_clamp_visible ran past the {TIMEOUT_S} s limit and did not stop when "
        "interrupted) -- score 0 / 2" in pages["deaf"]
    )


def test_feedback_names_a_lost_kernel_and_shows_stderr(graded):
    """The cells after a death carry its reason; the points before it stay; stderr text is shown, not failed."""
    text = {s: html_text(graded.root / "feedback" / s / "toy" / "toy.html") for s in ("dies", "quits", "stderr")}
    died = "the kernel died (exit status 3) in cell chunk_count"
    assert f"DeadKernelError: {died}" in text["dies"] and f"NotRun: {died}" in text["dies"]
    assert "hidden tests: passed -- score 2 / 2" in text["dies"]
    assert "DeadKernelError: the kernel died (killed by SIGKILL) in cell test_chunk_count" in text["quits"]
    assert "progress: clamp(5, 0, 10)\nprogress: clamp(-1, 0, 10)" in text["stderr"]
    assert "hidden tests: passed -- score 2 / 2" in text["stderr"]


def test_leak_check_deletes_a_page_quoting_a_hidden_line(graded, tmp_path):
    """A feedback page that quotes a hidden test is caught, named and removed."""
    from grader.feedback import leaks
    from grader.grading import GradingDir

    root = tmp_path / "g"
    (root / "feedback" / "wrong" / "toy").mkdir(parents=True)
    (root / "nbgrader_config.py").write_text("")
    shutil.copytree(graded.root / "autograded", root / "autograded")
    page = root / "feedback" / "wrong" / "toy" / "toy.html"
    hidden = f'assert call("clamp", clamp, 11.5, 0, 10) == 10, {MARKER}'
    page.write_text(f'<pre><span class="k">assert</span> {html.escape(hidden[len("assert ") :])}</pre>')
    found = leaks(GradingDir(root), "toy")
    assert found == [f"feedback/wrong/toy/toy.html quoted a hidden test ({hidden!r}); deleted it"]
    assert not page.exists()


def test_export_writes_a_row_per_student(graded):
    """nbgrader's CSV: one row per student, autograded points in score, 6 points possible."""
    assert graded.export.rc == 0, graded.export.err
    rows = {r["student_id"]: r for r in csv.DictReader(graded.csv.open())}
    assert sorted(rows) == sorted(EXPECTED)
    for student, cells in EXPECTED.items():
        assert float(rows[student]["score"]) == sum(cells.values())
        assert float(rows[student]["max_score"]) == 6.0 and rows[student]["assignment"] == "toy"


def test_export_refuses_a_file_inside_the_checkout(graded):
    """Grades stay outside the repository."""
    done = grader("export", str(graded.root), "--to", str(ROOT / "grades.csv"))
    assert done.rc == 2 and "inside the course checkout" in done.err and not (ROOT / "grades.csv").exists()


# -- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["autograde", "/nonexistent/grading"], "/nonexistent/grading is not a grading directory"),
        (["autograde", "/tmp", "--jobs", "0"], "0 is too small: give 1 or more"),
        (["--repo", "/tmp", "generate"], "/tmp is not a course checkout"),
        (["collect"], "the following arguments are required: DIR, SUBMISSIONS"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message):
    """A user's mistake: one line on stderr naming it, exit status 2, nothing on stdout."""
    done = grader(*argv)
    assert done.rc == 2 and done.out == ""
    assert len(done.err.splitlines()) == 1 and message in done.err


def test_python_m_grader_exits_2_without_a_traceback():
    """The module entry point goes through run_cli."""
    done = subprocess.run(
        [sys.executable, "-m", "grader", "autograde", "/nonexistent/grading"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: /nonexistent/grading is not a grading directory")


def test_recording_keeps_the_gradebook_as_it_was_and_nbgrader_writes_without_syncing(tmp_path):
    """nbgrader's commands write the gradebook without waiting for the disk (grader.runner): before a recording, the
    Recorder keeps a consistent copy of the gradebook beside the stored results, from which it can be rebuilt."""
    import sqlite3

    from grader import runner
    from grader.classgrade import BEFORE_RECORDING, STORE, keep_gradebook
    from grader.grading import GradingDir

    with contextlib.closing(sqlite3.connect(tmp_path / GRADEBOOK)) as book:
        book.execute("create table grade (student, points)")
        book.execute("insert into grade values ('ana', 3.5)")
        book.commit()
    kept = keep_gradebook(GradingDir(tmp_path, must_exist=False))
    assert kept == tmp_path / STORE / BEFORE_RECORDING
    with contextlib.closing(sqlite3.connect(kept)) as copy:
        assert copy.execute("select * from grade").fetchall() == [("ana", 3.5)]
    (tmp_path / GRADEBOOK).write_bytes(b"overwritten")  # damaged: the remedy names the copy kept
    with pytest.raises(UsageError, match=f"restore {GRADEBOOK} from {kept} .kept before the last recording"):
        GradingDir(tmp_path, must_exist=False).check_gradebook()
    missing = tmp_path / "none"
    missing.mkdir()
    with pytest.raises(sqlite3.OperationalError):  # never an empty gradebook made where there was none
        keep_gradebook(GradingDir(missing, must_exist=False))
    assert not (missing / GRADEBOOK).exists()
    with contextlib.closing(sqlite3.connect(":memory:")) as connection:
        runner._no_sync(connection, None)
        assert connection.execute("PRAGMA synchronous").fetchone() == (0,)


def test_a_new_gradebook_gets_the_revision_alembic_names(tmp_path):
    """The schema revision nbgrader writes into a new gradebook, read in the grading process (grader.runner), is the
    one nbgrader's own way gets from the `alembic` script; and `grader setup` writes it."""
    from nbgrader.dbutil import _temp_alembic_ini

    from grader import runner

    alembic = Path(sys.executable).parent / "alembic"
    with _temp_alembic_ini(f"sqlite:///{tmp_path / 'probe.db'}") as ini:
        said = subprocess.run([str(alembic), "-c", ini, "heads"], capture_output=True, text=True, check=True).stdout
    head = said.splitlines()[0].split(" ")[0]
    assert runner._alembic_head() == head and len(head) == 12, said
    assert grader("setup", str(tmp_path / "grading")).rc == 0
    with contextlib.closing(sqlite3.connect(tmp_path / "grading" / GRADEBOOK)) as book:
        assert book.execute("select version_num from alembic_version").fetchall() == [(head,)]
