"""The H200 figures the site quotes come from one source, the shipped profiles: computed at build time
(site/_ext/course_figures.py) by the lessons' own readers, the same numbers the replay commands print, and
retyped nowhere (neither the README nor the site's Markdown holds one)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from labcore.device import gpu_available
from labcore.lessons import names

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "site" / "_ext"))
course_figures = pytest.importorskip("course_figures", reason="the test extra (sphinx) is not installed")

NUMBER = re.compile(r"(?<![\d.])\d+\.\d+(?![\d.])")  # 19.580, 0.91, +0.0: not a version's pieces (580.159.04)
COMMANDS = {n: [sys.executable, "-m", n] for n in names()}
# a profile folder a page names: a lesson's own (day/profiles/<card>/, h200 or the one GPU's a lesson ships), or a
# dated log's (profiles/<card>/<folder>/, profiles/h200/... or profiles/h100/... when the device lent an H100)
PROFILE_FOLDER = re.compile(r"(?<![\w/])(?:([a-z_][a-z0-9_]*)/profiles/(h[0-9]+)/|profiles/(h[0-9]+)/([\w-]+)/)")


def figures(lesson: str) -> set[str]:
    """Every decimal number of a lesson's generated blocks, the lines naming the profile and versions aside."""
    text = "\n".join(course_figures.markdown(n) for n in course_figures.FIGURES if n.startswith(f"{lesson}-"))
    return set(NUMBER.findall("\n".join(line for line in text.splitlines() if "shipped profile" not in line)))


@pytest.mark.skipif(gpu_available(), reason="the site quotes the replay, which a GPU machine does not print")
@pytest.mark.parametrize("lesson", sorted(COMMANDS))
def test_every_generated_figure_is_printed_by_the_replay(lesson) -> None:
    """Each number of the generated tables and verdicts appears in what `python -m <lesson>` prints offline."""
    numbers = figures(lesson)
    assert len(numbers) >= 5, sorted(numbers)
    done = subprocess.run(COMMANDS[lesson], cwd=ROOT, capture_output=True, text=True, check=True)
    missing = sorted(numbers - set(NUMBER.findall(done.stdout)))
    assert not missing, f"generated figures that `python -m {lesson}` does not print: {missing}"


def test_no_page_source_retypes_a_generated_figure() -> None:
    """The README and site/*.md quote the profiles' tables only through the directive: no 3-decimal figure of them
    (the milliseconds and ratios) is typed into a source, where it would go stale when a profile is re-recorded."""
    precise = {n for lesson in COMMANDS for n in figures(lesson) if len(n.split(".")[1]) == 3}
    assert len(precise) >= 15
    sources = [ROOT / "README.md", *sorted((ROOT / "site").glob("*.md"))]
    typed = {p.name: sorted(precise & set(NUMBER.findall(p.read_text()))) for p in sources}
    assert {name: found for name, found in typed.items() if found} == {}


def test_a_retyped_figure_would_be_caught() -> None:
    """The comparison above sees a table's figure typed into a page (a check that cannot fail is a defect)."""
    precise = sorted(n for lesson in COMMANDS for n in figures(lesson) if len(n.split(".")[1]) == 3)
    page = f"| measured naive | {precise[0]} |"
    assert precise[0] in set(NUMBER.findall(page))


def blocks_naming_profiles() -> list[str]:
    """Paragraphs and bullets of the site's pages that name a profile folder (PROFILE_FOLDER)."""
    blocks = [b for page in sorted((ROOT / "site").glob("*.md")) for b in re.split(r"\n\s*\n|\n- ", page.read_text())]
    return [b for b in blocks if PROFILE_FOLDER.search(b)]


def recorded_numbers(folders: list[Path]) -> list[float]:
    """Every decimal number in the text files of the profile folders."""
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in (".txt", ".md", ".json", ".csv"):
                found += [float(n) for n in NUMBER.findall(path.read_text(errors="replace"))]
    return found


def unrecorded(entry: str) -> list[str]:
    """The entry's decimal numbers that no file of the folders it names holds (to the entry's rounding)."""
    folders = [
        ROOT / own / "profiles" / own_card if own else ROOT / "profiles" / card / log
        for own, own_card, card, log in PROFILE_FOLDER.findall(entry)
    ]
    have = recorded_numbers(folders)
    return sorted(
        n
        for n in set(NUMBER.findall(entry))
        if not any(abs(v - float(n)) <= 0.5 * 10 ** -len(n.split(".")[1]) + 1e-9 for v in have)
    )


def test_every_block_that_names_a_profile_quotes_it() -> None:
    """A paragraph or bullet that names profiles/h200/<folder>/ (the dated log's entries among them) quotes only
    numbers recorded in that folder's files, rounded as written."""
    entries = blocks_naming_profiles()
    assert len(entries) >= 8
    wrong = {e.split(":", 1)[0][:60]: missing for e in entries if (missing := unrecorded(e))}
    assert wrong == {}


def test_a_number_no_profile_holds_is_caught() -> None:
    """An entry quoting a number its folder does not hold is named (the check above can fail)."""
    assert unrecorded("the autograde took 75.7 s (`profiles/h200/grading/`)") == []
    assert unrecorded("the autograde took 75.2 s (`profiles/h200/grading/`)") == ["75.2"]
    assert unrecorded("the corpus took 165.88 s (`profiles/h100/2026-12-05/`)") == []  # a run on a lent H100
    assert unrecorded("the corpus took 165.87 s (`profiles/h100/2026-12-05/`)") == ["165.87"]
    lesson = names()[0]
    held = NUMBER.findall((ROOT / lesson / "profiles" / "h200" / "results.json").read_text())[0]
    assert unrecorded(f"it took {held} s (`{lesson}/profiles/h200/`)") == []
    assert unrecorded(f"it took {held}7 s (`{lesson}/profiles/h200/`)") == [f"{held}7"]
