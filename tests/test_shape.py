"""The lesson as a contract: one list (lessons.txt, labcore.lessons) that everything reads, one folder per lesson
with the shape's files, the same command-line options for the same ideas, and no code outside a lesson's folder
that names it."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from labcore import lessons
from labcore.errors import UsageError
from labcore.lessons import SHAPE_FILES, lesson, names, parse
from labcore.profiles import DEFAULT_GPU, OVERRIDE_ENV, RESULTS, recorded_gpus, shipped_profile

ROOT = Path(__file__).resolve().parents[1]
# The options every lesson's `python -m <lesson>` offers, one name per idea (site/architecture.md)
SHARED_OPTIONS = ("--window", "--plot", "--json", "--from-profile", "--device")
# Code and configuration outside the lesson folders: none of it may name a listed lesson
OUTSIDE = (
    "grader/**/*.py",
    "labcore/**/*.py",
    "tests/*.py",
    "site/*.py",
    "site/_ext/*.py",
    "benchmarks/*.py",
    "benchmarks/*.sh",
)
OUTSIDE_FILES = ("setup.py", "conftest.py", "nbgrader_config.py", "pyproject.toml", "profiles/record.sh", ".ci/run")
# Files outside the lesson folders that still name a lesson, each with its reason: none now. The list may only shrink:
# a file here that no longer names a lesson fails the test below, so it is taken off.
STILL_NAMING: dict[str, str] = {}
LESSON_NAME = re.compile(r"[a-z_][a-z0-9_]*")


# -- the list ------------------------------------------------------------------------------------------------------


def test_the_list_is_the_file_at_the_root():
    """labcore.lessons reads lessons.txt beside the lesson folders, in its order, comments and blank lines aside
    (Lesson rule 2 on the architecture page)."""
    assert lessons.list_file() == ROOT / "lessons.txt"
    assert names() == parse((ROOT / "lessons.txt").read_text()) and len(names()) >= 2
    assert parse("# the course\n\nfirst  # a comment\nsecond\n") == ("first", "second")


@pytest.mark.parametrize(
    ("text", "needle"),
    [("day-55\n", "is not a lesson name"), ("Shout\n", "is not a lesson name"), ("a\nb\na\n", "listed twice")],
)
def test_a_bad_list_is_one_clear_error(text, needle):
    """A line that is no lesson name, or a lesson listed twice, is one clear error (Lesson rule 2 on the architecture
    page)."""
    with pytest.raises(UsageError, match=needle):
        parse(text, "lessons.txt")


def test_an_unlisted_lesson_is_refused():
    """A name not on the list is no lesson (Lesson rule 2 on the architecture page)."""
    with pytest.raises(UsageError, match=r"no lesson 'nope' in .*lessons\.txt; the lessons are: "):
        lesson("nope")


def lesson_folders(root: Path) -> set[str]:
    """Folders at root shaped like a lesson (a package with __main__.py and checks.py), listed or not."""
    return {
        p.name
        for p in root.iterdir()
        if p.is_dir() and all((p / f).is_file() for f in ("__init__.py", "__main__.py", "checks.py"))
    }


def test_every_lesson_folder_is_listed():
    """A folder with the shape but no line in lessons.txt would be packaged, masked and graded by nobody (Lesson rule
    2 on the architecture page)."""
    assert lesson_folders(ROOT) == set(names())


def test_an_unlisted_lesson_folder_is_found(tmp_path):
    """Not vacuous: a shaped folder without its line is seen (and a half-shaped one is not a lesson): Lesson rule 2 on
    the architecture page."""
    for name, files in {"listed": SHAPE_FILES, "forgotten": SHAPE_FILES, "half": ("__init__.py",)}.items():
        (tmp_path / name).mkdir()
        for file in files:
            (tmp_path / name / file).write_text("")
    (tmp_path / "lessons.txt").write_text("listed\n")
    assert lesson_folders(tmp_path) - set(lessons.read_list(tmp_path)) == {"forgotten"}


# -- one folder per lesson -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", names())
def test_every_lesson_has_the_shape(name):
    """The shape's modules, the package's names, its page, its solutions notebook, its shipped profile, its tests
    (Lesson rules 1, 3, 5, 6, 8 and 12 on the architecture page)."""
    found = lesson(name)
    assert found.folder == ROOT / name
    have = {p.name for p in found.folder.glob("*.py")}
    assert set(SHAPE_FILES) <= have, f"{name} lacks {sorted(set(SHAPE_FILES) - have)}"
    package = found.module()
    assert package.LESSON == name and isinstance(package.DOMAIN, str) and package.DOMAIN
    assert not hasattr(package, "TITLE") and not hasattr(package, "SUMMARY"), "the title and summary are page.md's"
    assert found.title and "\n" not in found.title  # its page.md's heading, read by labcore.lessons.page
    assert found.summary.endswith(".") and found.summary.count(". ") == 0, "the summary is one sentence"
    assert found.prose, "page.md has prose for the site after its title and summary"
    assert found.solutions.is_file()
    assert recorded_gpus(name), f"{name} ships no GPU's recorded profile (profiles/<gpu>/results.json)"
    assert sorted(found.tests.glob("test_*.py")), f"{name}/tests/ holds no test"
    assert (ROOT / "course" / name / f"{name}.ipynb").is_file()  # generated from the solutions notebook


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "missing"),
        ("Tiny: no heading\n\nDoubles a number.\n", "does not open with the lesson's title"),
        ("## Tiny: a second-level heading\n\nDoubles a number.\n", "does not open with the lesson's title"),
        ("# Tiny: a title\nDoubles a number, on the title's paragraph.\n", "does not open with the lesson's title"),
        ("# Tiny: a title\n", "no summary"),
        ("# Tiny: a title\n\n## A heading, no summary\n", "no summary"),
        ("# Tiny: a title\n\nDoubles a number. Then halves it.\n", "not one sentence"),
        ("# Tiny: a title\n\nDoubles a number\n", "not one sentence"),
    ],
)
def test_a_page_without_its_title_or_one_sentence_summary_is_refused(tmp_path, text, problem):
    """A lesson's page.md opens with its title as a level-1 heading and its summary, one sentence, as the first
    paragraph; without them labcore.lessons.page refuses it with the file's name and what is wrong (Lesson rule 12
    on the architecture page)."""
    path = tmp_path / lessons.PAGE
    if text is not None:
        path.write_text(text)
    with pytest.raises(UsageError, match=re.escape(f"{path}: ") + ".*" + re.escape(problem)):
        lessons.page(path)


def test_a_page_gives_its_title_summary_and_prose(tmp_path):
    """The heading is the title, the first paragraph the summary (its lines joined) and the rest, as written, the prose
    the site shows (Lesson rule 12 on the architecture page)."""
    path = tmp_path / lessons.PAGE
    path.write_text("# Tiny: a title\n\nDoubles a number,\nthen stops.\n\nThe prose.\n\n- a list\n  of two lines\n")
    assert lessons.page(path) == lessons.Page(
        "Tiny: a title", "Doubles a number, then stops.", "The prose.\n\n- a list\n  of two lines"
    )


def test_a_replay_takes_the_default_gpus_profile_else_the_one_a_lesson_has(tmp_path, monkeypatch):
    """A lesson ships at least one GPU's profile: a replay takes DEFAULT_GPU's where there is one, else the one it
    has (a folder without results.json is no profile: a section's record beside it does not count). Lesson rule 6 on
    the architecture page."""
    monkeypatch.setenv(OVERRIDE_ENV, str(tmp_path))
    lone = names()[0]
    for gpu, file in (("a100", RESULTS), ("b200x2", "other.json")):
        (tmp_path / gpu / lone).mkdir(parents=True)
        (tmp_path / gpu / lone / file).write_text("{}")
    assert recorded_gpus(lone) == ["a100"] and shipped_profile(lone) == tmp_path / "a100" / lone
    (tmp_path / DEFAULT_GPU / lone).mkdir(parents=True)
    (tmp_path / DEFAULT_GPU / lone / RESULTS).write_text("{}")
    assert recorded_gpus(lone) == [DEFAULT_GPU, "a100"] and shipped_profile(lone) == tmp_path / DEFAULT_GPU / lone
    assert shipped_profile(lone, "a100") == tmp_path / "a100" / lone


def help_options(name: str) -> set[str]:
    """The options `python -m <name> --help` offers."""
    done = subprocess.run(
        [sys.executable, "-m", name, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", done.stdout)) - {"--help"}


@pytest.fixture(scope="module")
def options() -> dict[str, set[str]]:
    return {name: help_options(name) for name in names()}


def test_every_lesson_offers_the_shared_options(options):
    """The same idea has the same option in every lesson: the window (chunk) size, plots, the record, a profile to
    replay, the GPU (Lesson rule 4 on the architecture page)."""
    missing = {name: sorted(set(SHARED_OPTIONS) - have) for name, have in options.items()}
    assert {name: m for name, m in missing.items() if m} == {}


def test_no_lesson_spells_a_shared_idea_another_way(options):
    """Old spellings are not offered (a hidden alias may still work): --chunk is --window everywhere (Lesson rule 4 on
    the architecture page)."""
    assert {name: have & {"--chunk", "--plots", "--gpu", "--profile"} for name, have in options.items()} == {
        name: set() for name in options
    }


# -- nothing else names a lesson -----------------------------------------------------------------------------------


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_text(path: Path) -> list[tuple[int, str]]:
    """(line, text) of a file's code: a Python file's tokens without comments and docstrings; another file's lines
    without `#` comments."""
    text = path.read_text()
    if path.suffix != ".py":
        return [(n, line.split("#", 1)[0]) for n, line in enumerate(text.splitlines(), 1)]
    docs = _docstring_lines(ast.parse(text))
    return [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type != tokenize.COMMENT and not (tok.type == tokenize.STRING and tok.start[0] in docs)
    ]


def naming(path: Path, listed: tuple[str, ...]) -> list[str]:
    """'line: name' for every place a file's code names a listed lesson."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, listed)) + r")(?![\w])")
    return [f"{n}: {m[1]}" for n, text in code_text(path) for m in pattern.finditer(text)]


def outside_files(root: Path) -> list[Path]:
    found = [p for pattern in OUTSIDE for p in root.glob(pattern)] + [root / f for f in OUTSIDE_FILES]
    return sorted(p for p in set(found) if p.is_file() and "__pycache__" not in p.parts)


def test_no_code_outside_the_lesson_folders_names_a_lesson():
    """The grader, labcore, packaging, the site, the course's benchmarks and the cross-cutting tests read the list;
    they never spell a lesson (docstrings and comments may, as prose). STILL_NAMING is the list of test modules yet to
    be made generic. Lesson rules 10 and 11 on the architecture page."""
    named = {p.relative_to(ROOT).as_posix(): hits for p in outside_files(ROOT) if (hits := naming(p, names()))}
    assert {f: hits for f, hits in named.items() if f not in STILL_NAMING} == {}
    assert sorted(set(STILL_NAMING) - set(named)) == [], "take these off STILL_NAMING: they name no lesson now"


def test_the_naming_scan_sees_code_and_not_prose(tmp_path):
    """Not vacuous: a name in code or a string is found, the same name in a docstring or comment is not (Lesson rule
    11 on the architecture page)."""
    path = tmp_path / "m.py"
    path.write_text(
        '"""A module about lesson_x."""\n'
        "import lesson_x  # lesson_x\n"
        "def f():\n"
        '    """lesson_x again."""\n'
        '    return f"python -m {1} lesson_x", "lesson_x_run", "course/lesson_x/"\n'
    )
    assert naming(path, ("lesson_x",)) == ["2: lesson_x", "5: lesson_x", "5: lesson_x"]


def test_the_gpu_visit_runs_benchmarks_that_exist():
    """benchmarks/h200.sh runs the course's scripts by path and a lesson's benchmark by its file name (`bench NAME`,
    found in the lessons' benchmarks/ folders): each path is there, and each name is one lesson's (Lesson rule 10 on
    the architecture page)."""
    text = (ROOT / "benchmarks" / "h200.sh").read_text()
    paths = set(re.findall(r"python3 ((?:benchmarks|tests)/\w+\.py)", text))
    named = set(re.findall(r"\$\(bench (\w+\.py)\)", text))
    assert len(paths) >= 3 and len(named) >= 3
    assert sorted(p for p in paths if not (ROOT / p).is_file()) == []
    assert {n: len(list(ROOT.glob(f"*/benchmarks/{n}"))) for n in sorted(named)} == dict.fromkeys(sorted(named), 1)


@pytest.mark.parametrize("name", names())
def test_a_lessons_tests_import_no_other_lesson(name):
    """A lesson's own tests and benchmarks are about it alone: they import labcore, grader, the course's test helpers
    and their lesson, never another (Lesson rules 8 and 10 on the architecture page)."""
    others = tuple(n for n in names() if n != name)
    found = []
    for path in sorted([*lesson(name).tests.glob("*.py"), *(lesson(name).folder / "benchmarks").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.name}:{node.lineno} {m}" for m in modules if m.split(".")[0] in others]
    assert found == []
