"""The course's website: built offline from the release, public, and whole in a real browser.

The site is built once per session (tests/site_fixture.py) by the README's command; a headless Chromium
(tests/browser_fixture.py) opens every page. The pages are public: no line of a solution region, a hidden test
or a withheld reference (`@reference` bodies, `BEGIN REFERENCE` CUDA regions) may appear in any built file, and
no solution or hidden-test region whole either, however it is laid out (tests/site_fixture.py's region scan).
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import urllib.request
from collections import deque
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_project import readme_command_lines

from grader.cli import parse_args
from grader.feedback import MIN_LEAK_CHARS, html_text, split_hidden
from grader.withhold import CUDA_REGION, withhold_python
from labcore.errors import UsageError
from labcore.lessons import lesson, names

from browser_fixture import browser  # noqa: F401 (a fixture)
from installed import draws_plot
from site_fixture import PIPELINE, ROOT, fold, region_needles, regions_quoted, site_build  # noqa: F401 (a fixture)

LESSONS = names()
FIRST = LESSONS[0]  # the README's screenshot shows the first lesson
AUDIENCES = ("students", "instructors", "offline")
PAGES = ("index", "lessons", *AUDIENCES, "measured", "architecture", "choices", "tests")
REGIONS = (("### BEGIN SOLUTION", "### END SOLUTION"), ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"))
REFERENCE_PACKAGES = names()
sys.path.insert(0, str(ROOT / "site" / "_ext"))  # the figures directive (course_figures)
SHOTS = {f"{FIRST}.png": f"course/{FIRST}/{FIRST}.html", "measured.png": "site/measured.html"}


def _normal(text: str) -> str:
    return " ".join(text.split())


def _cells(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text())["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def release_text() -> str:
    """The release notebooks' text: public by design, so a secret line that it also holds (even inside a longer
    line of prose, as the API each exercise is written against) tells nothing."""
    cells = [cell for lesson in LESSONS for cell in _cells(ROOT / "course" / lesson / f"{lesson}.ipynb")]
    # Markdown as a page shows it: `code` without its backticks
    return "\n".join(
        _normal(_source(c).replace("`", "") if c["cell_type"] == "markdown" else _source(c)) for c in cells
    )


def solution_lines() -> set[str]:
    """Solution regions, hidden tests and written answers of every lesson's solutions notebook."""
    found = set()
    for notebook in (lesson(n).solutions for n in names()):
        for cell in _cells(notebook):
            text = _source(cell)
            if cell["cell_type"] == "markdown" and cell["metadata"].get("nbgrader", {}).get("solution"):
                found.update(text.splitlines())  # a written answer: the whole cell
            for begin, end in REGIONS:
                found.update(split_hidden(text, begin, end)[1])
    return found


def reference_lines() -> set[str]:
    """Lines that the grading sandbox withholds: @reference function bodies and BEGIN REFERENCE CUDA regions."""
    found = set()
    for package in REFERENCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            withheld, names = withhold_python(text, str(path))
            if names:
                matcher = difflib.SequenceMatcher(a=text.splitlines(), b=withheld.splitlines(), autojunk=False)
                for op, a0, a1, _, _ in matcher.get_opcodes():
                    found.update(text.splitlines()[a0:a1] if op in ("replace", "delete") else [])
        for path in sorted((ROOT / package).rglob("*.cu")):
            for region in CUDA_REGION.finditer(path.read_text()):
                found.update(region.group(0).splitlines()[1:-1])
    return found


@functools.cache
def secrets() -> frozenset[str]:
    """The lines worth looking for: long enough to say something, and not also in the public release."""
    public = release_text()
    lines = {_normal(line) for line in solution_lines() | reference_lines()}
    return frozenset(line for line in lines if len(line) >= MIN_LEAK_CHARS and line not in public)


def quoted_secrets(out: Path) -> dict[str, list[str]]:
    """Built files (as a reader sees their text) that quote a secret line, with the lines they quote. The theme's
    own files (_static/, copied from Sphinx and MyST-NB) are not the course's; the search index is."""
    found = {}
    built = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".html", ".js", ".txt", ".ipynb")]
    for path in sorted(p for p in built if p.relative_to(out).parts[0] != "_static"):
        text = _normal(html_text(path) if path.suffix == ".html" else path.read_text(errors="replace"))
        quoted = sorted(line for line in secrets() if line in text)
        if quoted:
            found[str(path.relative_to(out))] = quoted
    return found


def test_the_secrets_are_found_in_the_sources() -> None:
    """Each kind of secret is collected (a collector that finds nothing would pass every scan)."""
    assert len(solution_lines()) > 50 and len(reference_lines()) > 20
    assert any("BEGIN REFERENCE" not in x and x.strip() for x in reference_lines() if "__global__" not in x)
    assert len(secrets()) > 50


def test_the_scan_finds_a_planted_secret(tmp_path) -> None:
    """A page quoting one secret line, split by highlighting spans and escaped as HTML, is found; a clean one is not."""
    line = sorted(secrets(), key=len)[len(secrets()) // 2]
    words = line.split(" ")
    planted = " ".join(f'<span class="n">{w.replace("&", "&amp;").replace("<", "&lt;")}</span>' for w in words)
    (tmp_path / "leak.html").write_text(f"<html><body><pre>{planted}</pre></body></html>")
    (tmp_path / "clean.html").write_text("<html><body><p>nothing here</p></body></html>")
    assert quoted_secrets(tmp_path) == {"leak.html": [line]}


def test_no_built_file_quotes_a_solution_hidden_test_or_reference(site_build) -> None:  # noqa: F811
    """The public site holds none of the withheld lines, in any page, script or index."""
    assert quoted_secrets(site_build.out) == {}


def test_the_region_scan_finds_a_region_shown_as_a_page_shows_code(tmp_path) -> None:
    """Day 54's pipeline as a highlighted code block shows it (every token its span, entities, the page's own
    indentation and a comment of its own) is found; the same lines with one left out are not."""
    needles = region_needles()
    pipeline = fold("\n".join(PIPELINE))
    assert pipeline in needles

    def page(lines: list[str]) -> str:
        spans = [" ".join(f'<span class="n">{w.replace("%", "&#37;")}</span>' for w in line.split()) for line in lines]
        return '<html><body><div class="highlight"><pre>' + "\n  ".join(spans) + "</pre></div></body></html>"

    shown = [PIPELINE[0] + "  # each chunk", *PIPELINE[1:]]
    (tmp_path / "leak.html").write_text(page(shown))
    (tmp_path / "clean.html").write_text(page([PIPELINE[0], *PIPELINE[2:]]))
    assert regions_quoted(tmp_path, needles) == ([("leak.html", pipeline)], 0)


def test_no_built_file_quotes_a_solution_region_whole(site_build) -> None:  # noqa: F811
    """No solution or hidden-test region of two lines or more is in any built file (theme files included),
    whitespace folded, with or without `#` comments: its lines may each be public, all of them together are not."""
    needles = region_needles()
    hits, _ = regions_quoted(site_build.out, needles)
    assert hits == [], "\n".join(f"{f}: {n!r} ({'; '.join(needles[n])})" for f, n in hits)


def test_the_build_is_clean(site_build) -> None:  # noqa: F811
    """Sphinx and MyST-NB warn about nothing (a broken reference, a failed cell output, a missing figure)."""
    assert site_build.warnings == []


def test_every_page_exists(site_build) -> None:  # noqa: F811
    """A page per audience and per topic, each lesson's release as a page, and the front door at OUT/index.html."""
    out = site_build.out
    missing = [p for p in PAGES if not (out / "site" / f"{p}.html").is_file()]
    missing += [x for x in LESSONS if not (out / "course" / x / f"{x}.html").is_file()]
    assert missing == []
    assert 'href="site/index.html"' in (out / "index.html").read_text()


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_pages_replay_and_ask(site_build, lesson) -> None:  # noqa: F811
    """A lesson page shows the replay's mode line, the exercises' stubs, and no error output (stubs are quiet)."""
    page = (site_build.out / "course" / lesson / f"{lesson}.html").read_text()
    text = html_text(site_build.out / "course" / lesson / f"{lesson}.html")
    assert "replay of" in text and "no GPU here" in text
    assert "YOUR CODE HERE" in text
    assert "traceback" not in page and "output error" not in page


def test_no_page_names_a_path_of_the_building_machine(site_build) -> None:  # noqa: F811
    """Outputs name the profiles by their path in the repository, never the checkout's folder."""
    roots = {str(ROOT), str(site_build.root)}  # this checkout, and the copy the README's test built it in
    assert [p.name for p in site_build.out.rglob("*.html") if any(r in p.read_text() for r in roots)] == []


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the crawl's requests are not the test's output
        pass


@pytest.fixture(scope="module")
def served(site_build):  # noqa: F811
    """The built site on a local HTTP server (a browser's file:// hides 404s): its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site_build.out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def plot_cells(lesson: str) -> int:
    """Lesson cells of the release that draw a plot (the measure test_release_runs.py holds them to)."""
    return sum(
        1
        for cell in _cells(ROOT / "course" / lesson / f"{lesson}.ipynb")
        if cell["cell_type"] == "code"
        and not {"solution", "grade"} & {k for k, v in cell["metadata"].get("nbgrader", {}).items() if v}
        and draws_plot(_source(cell))
    )


@pytest.fixture(scope="module")
def crawled(browser, served):  # noqa: F811
    """Every page reachable from the front page, opened in Chromium: what each showed, linked and loaded."""
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    outside, failed = [], []
    page.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(served)
            else (outside.append(route.request.url), route.abort())
        ),
    )
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: failed.append(f"failed {r.url}") if r.url.startswith(served) else None)
    pages, queue = {}, deque([served + "site/index.html"])
    while queue:
        url = queue.popleft()
        if url in pages:
            continue
        response = page.goto(url, wait_until="load")
        pages[url] = {
            "status": response.status if response else None,
            "images": page.eval_on_selector_all("img", "els => els.map(e => [e.src, e.naturalWidth])"),
            "plots": page.eval_on_selector_all(".cell_output img", "els => els.filter(e => e.naturalWidth > 0).length"),
            "ids": set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")),
            "links": page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"),
        }
        for link in pages[url]["links"]:
            target = link.split("#", 1)[0]
            if target.startswith(served) and target.endswith(".html") and target not in pages:
                queue.append(target)
    page.goto(served + "index.html", wait_until="load")
    page.wait_for_url(served + "site/index.html")  # OUT/index.html sends a reader to the front page
    front_door = page.url
    shots = {}
    for name, path in SHOTS.items():
        page.goto(served + path, wait_until="load")
        if name == f"{FIRST}.png":
            page.locator(".cell_output img").first.scroll_into_view_if_needed()
        shots[name] = page.screenshot()
    page.close()
    return {
        "pages": pages,
        "outside": outside,
        "failed": failed,
        "base": served,
        "shots": shots,
        "front_door": front_door,
    }


def test_every_page_loads_in_a_browser(crawled) -> None:
    """Each page answers 200; every page of the site is reached from the front page; nothing failed to load."""
    base = crawled["base"]
    statuses = {url: info["status"] for url, info in crawled["pages"].items() if info["status"] != 200}
    assert statuses == {} and crawled["failed"] == []
    assert crawled["front_door"] == base + "site/index.html"
    reached = {url.removeprefix(base) for url in crawled["pages"]}
    assert {f"site/{p}.html" for p in PAGES} | {f"course/{x}/{x}.html" for x in LESSONS} <= reached


def test_the_site_reads_offline(crawled) -> None:
    """No page asks for anything outside the site (fonts, scripts, trackers): it reads with no network."""
    assert crawled["outside"] == []


def test_every_image_loads(crawled) -> None:
    """Every <img> of every page decoded to a picture (naturalWidth > 0)."""
    broken = [(url, src) for url, info in crawled["pages"].items() for src, width in info["images"] if width == 0]
    assert broken == []
    assert sum(len(info["images"]) for info in crawled["pages"].values()) >= sum(plot_cells(x) for x in LESSONS)


def test_no_internal_link_is_broken(crawled) -> None:
    """Every link inside the site reaches a file, and every #anchor an element of its page."""
    base, pages, broken = crawled["base"], crawled["pages"], []
    for url, info in pages.items():
        for link in info["links"]:
            if not link.startswith(base):
                continue
            target, _, anchor = link.partition("#")
            if target in pages:
                if anchor and anchor not in pages[target]["ids"]:
                    broken.append(f"{url} -> {link} (no #{anchor})")
                continue
            try:
                with urllib.request.urlopen(target) as answer:
                    ok = answer.status == 200
            except OSError:
                ok = False
            if not ok:
                broken.append(f"{url} -> {link}")
    assert broken == []


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_page_shows_its_plots(crawled, lesson) -> None:
    """A lesson page shows a decoded picture for every plot cell of its release (the pitfall timelines among them)."""
    info = crawled["pages"][f"{crawled['base']}course/{lesson}/{lesson}.html"]
    assert plot_cells(lesson) >= 1
    assert info["plots"] >= plot_cells(lesson)


def test_screenshots_are_pictures(crawled) -> None:
    """Two pages photographed; with SITE_SHOTS=DIR the PNGs are kept there (site/_static/shots/ for the README)."""
    for name, png in crawled["shots"].items():
        assert png.startswith(b"\x89PNG") and len(png) > 10_000, name
    if os.environ.get("SITE_SHOTS"):
        keep_shots(crawled["shots"], Path(os.environ["SITE_SHOTS"]))


def keep_shots(shots: dict[str, bytes], folder: Path) -> None:
    """Write the screenshots as small palette PNGs (the README shows them; the repository keeps them)."""
    import io

    from PIL import Image  # matplotlib's dependency; only when keeping screenshots

    folder.mkdir(parents=True, exist_ok=True)
    for name, png in shots.items():
        image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64)
        image.save(folder / name, optimize=True)


def test_the_readme_shows_the_kept_screenshots() -> None:
    """The README's pictures are the kept screenshots, small enough for a repository."""
    text = (ROOT / "README.md").read_text()
    for name in SHOTS:
        path = ROOT / "site" / "_static" / "shots" / name
        assert f"(site/_static/shots/{name})" in text and path.is_file() and path.stat().st_size < 200_000, name


def test_the_measured_page_shows_the_generated_figures(site_build) -> None:  # noqa: F811
    """Every line the figures directive generates reaches the built page (the profile's numbers, not typed ones)."""
    course_figures = pytest.importorskip("course_figures", reason="the test extra (sphinx) is not installed")
    text = _normal(html_text(site_build.out / "site" / "measured.html"))
    for name in course_figures.FIGURES:
        cells = [c.strip() for line in course_figures.markdown(name).splitlines() for c in line.strip("|- ").split("|")]
        shown = [re.sub(r"\*(\S[^*]*)\*", r"\1", c.replace("`", "")) for c in cells if c and c != "---"]
        missing = [c for c in shown if _normal(c) not in text]
        assert missing == [], f"{name}: {missing}"


@pytest.mark.parametrize("out", ["site/pages", "README.md", "."])
def test_a_bad_out_is_one_line_and_exit_2(out) -> None:
    """OUT inside the sources, a file, or the checkout itself: one line naming it, exit status 2, nothing built."""
    done = subprocess.run([sys.executable, "site/build.py", out], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and out.rstrip(".") in done.stderr
    assert not (ROOT / "site" / "pages").exists()


@pytest.mark.gpu
@pytest.mark.parametrize("lesson", LESSONS)
def test_a_gpu_machine_builds_the_recorded_run(site_build, lesson) -> None:  # noqa: F811
    """Built where CuPy sees a GPU, the lesson pages still replay the shipped profile (the site shows one run)."""
    text = html_text(site_build.out / "course" / lesson / f"{lesson}.html")
    assert "replay of" in text and "no GPU here" in text and ": live on" not in text


# -- the words and figures the pages generate: the list of lessons, their commands, the build's own measure ----------

# A build's own figures on the offline page, as site/build.py writes them
BUILD_LINE = re.compile(
    r"(\d+\.\d) MB in (\d+) files, built in (\d+) s of wall time and (\d+) s of CPU on a machine of (\d+) cores"
)
# Pages that say how the course is now (the dated log of the measured page and the choices' history excepted)
CURRENT = [ROOT / "README.md", *(ROOT / "site" / f"{p}.md" for p in ("index", "lessons", *AUDIENCES, "tests"))]
TYPED_COUNT = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|both)\s+(lessons|notebooks|releases)\b", re.I
)


def test_no_current_page_types_how_many_lessons_there_are() -> None:
    """The README and the pages that describe the course as it is say how many lessons there are only through the
    generated role ({course-lessons}`count`), never as a typed word that goes stale when a lesson is added."""
    typed = {p.name: TYPED_COUNT.findall(p.read_text()) for p in CURRENT}
    assert {name: found for name, found in typed.items() if found} == {}
    assert TYPED_COUNT.findall("the two notebooks and both lessons") == [("two", "notebooks"), ("both", "lessons")]


def test_the_pages_list_every_lesson(site_build) -> None:  # noqa: F811
    """The front page and the lessons page link every listed lesson's page under its title; the count word is the
    list's; the lessons page shows each lesson's own prose (its folder's page.md after the title and the summary,
    which it does not repeat); the students' page names every notebook; the offline page holds every lesson's --help
    (Lesson rule 12 on the architecture page)."""
    course_lessons = pytest.importorskip("course_lessons", reason="the test extra (sphinx) is not installed")
    out, word = site_build.out / "site", course_lessons.count_word(len(LESSONS))
    for page in ("index", "lessons"):
        html, text = (out / f"{page}.html").read_text(), _normal(html_text(out / f"{page}.html"))
        for name in LESSONS:
            assert f'href="../course/{name}/{name}.html"' in html and lesson(name).title in text, (page, name)
        assert f"{word} lessons" in text or f"{word} of them" in text, page
    lessons_html = (out / "lessons.html").read_text()
    lessons_page = _normal(html_text(out / "lessons.html"))
    for name in LESSONS:  # each lesson's own prose, from its folder's page.md; its title and summary not again
        found = lesson(name).page
        assert found.prose and _normal(found.prose.replace("`", "")) in lessons_page, name
        assert _normal(found.summary.replace("`", "")) not in lessons_page and f"# {found.title}" not in lessons_page
        assert not re.search(rf"<h\d[^>]*>[^<]*{re.escape(found.title)}", lessons_html), name
    students = _normal(html_text(out / "students.html"))
    assert all(f"{name}/{name}.ipynb" in students and f"{name}.ipynb" in students for name in LESSONS)
    offline = html_text(out / "offline.html")
    assert all(f"usage: python -m {name}" in offline for name in LESSONS)


def test_the_offline_page_quotes_this_builds_size_and_time(site_build) -> None:  # noqa: F811
    """The size, file count and build time the offline page quotes are this build's: the bytes and files of the
    built folder (to the page's rounding), a wall and a CPU time, this machine's cores; no page keeps the
    placeholder."""
    course_lessons = pytest.importorskip("course_lessons", reason="the test extra (sphinx) is not installed")
    text = _normal(html_text(site_build.out / "site" / "offline.html"))
    found = BUILD_LINE.search(text)
    assert found, "no build figures on the offline page"
    megabytes, files, wall_s, cpu_s, cores = found.groups()
    built = [p for p in site_build.out.rglob("*") if p.is_file()]
    assert int(files) == len(built)
    assert abs(float(megabytes) - sum(p.stat().st_size for p in built) / 1e6) <= 0.06
    assert int(wall_s) > 0 and int(cpu_s) > 0 and int(cores) == os.cpu_count()
    assert [p.name for p in site_build.out.rglob("*.html") if course_lessons.BUILD_FIGURES in p.read_text()] == []


# Commands the site's pages show that the README does not, each with what runs or checks it
SITE_ONLY_COMMANDS = {
    ".venv/bin/pip install -q -e '.[course]' && JUPYTER_CONFIG_PATH=\"$PWD/jupyter-config\" .venv/bin/jupyter lab "
    "course/": "tests/test_browser.py runs JupyterLab on course/ with JUPYTER_CONFIG_PATH=jupyter-config",
    "python3 -m venv --upgrade-deps .venv && .venv/bin/pip install -q './datamove-course-student[cuda13,course]' && "
    ".venv/bin/jupyter lab datamove-course-student/notebooks/": "tests/test_bundle.py: the bundle's README gives it",
    ".venv/bin/pip install -q -e '.[test]' pre-commit && .venv/bin/pre-commit install": "the contributors' hooks",
}
GRADER_LINE = re.compile(r"^python -m grader (.*?)(?:\s+#.*)?$")


def site_commands() -> list[str]:
    """Every command the site's pages show in a command block (a line indented by four spaces that starts with a
    command, after a blank line or another such line)."""
    found = []
    for page in sorted((ROOT / "site").glob("*.md")):
        previous = ""
        for line in page.read_text().splitlines():
            if line.startswith("    ") and (not previous.strip() or previous in found):
                command = line[4:]
                if re.match(r"(python3? -m |\.venv/bin/)", command):
                    found.append(command)
            previous = line[4:] if line.startswith("    ") else line
    return found


def test_every_site_command_is_run_or_checked() -> None:
    """Each `python -m grader ...` line of the site parses with the grader's own parser once its bracketed options
    are left out (a subcommand or option renamed would fail it); every other command is the README's (which
    tests/test_readme_commands.py runs) or one of SITE_ONLY_COMMANDS, and valid shell."""
    commands, readme = site_commands(), set(readme_command_lines())
    graders = [m.group(1) for c in commands if (m := GRADER_LINE.match(c))]
    assert len(graders) >= 10
    for line in graders:
        parse_args(shlex.split(re.sub(r"\[[^\]]*\]", "", line)))
    others = [c for c in commands if not GRADER_LINE.match(c)]
    assert sorted(c for c in others if c not in readme) == sorted(SITE_ONLY_COMMANDS)
    for command in others:
        assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0, command


def test_a_renamed_grader_command_is_caught() -> None:
    """The parse above fails for a subcommand the grader does not have (the check can fail)."""
    with pytest.raises((UsageError, SystemExit)):
        parse_args(["grade", "~/grading"])


# Counts the pages quote about the tests, each beside where the test holds it: (page, the quote with the count as
# its group, the test file, the code with the count as its group)
QUOTED_COUNTS = (
    ("tests.md", r"in one class with (\d+) more students", "tests/corpus_class.py", r"range\(\d+ if LIVE else (\d+)\)"),
    ("tests.md", r"with (\d+) reference copies", "tests/corpus_class.py", r"range\((\d+) if LIVE else \d+\)"),
    ("instructors.md", r"on ([\d,]+) random schedules", "tests/test_recording_races.py", r"range\((\d+)\)"),
)


@pytest.mark.parametrize(("page", "quote", "source", "code"), QUOTED_COUNTS)
def test_a_count_the_pages_quote_is_the_tests_own(page, quote, source, code) -> None:
    """What a page says a test does (how many students, copies, schedules) is the number in that test's code."""
    quoted = re.findall(quote, _normal((ROOT / "site" / page).read_text()))
    held = re.findall(code, (ROOT / source).read_text())
    assert len(quoted) == 1 and held, (quoted, held)
    assert int(quoted[0].replace(",", "")) in {int(n) for n in held}


def test_the_lessons_page_shows_every_exercise(site_build) -> None:  # noqa: F811
    """The lessons page holds, for every lesson, each prediction cell's name and each autograded test cell's
    docstring (what it checks), read here from the release notebooks by another route (Python's own parser)."""
    text = _normal(html_text(site_build.out / "site" / "lessons.html"))
    missing = []
    for name in LESSONS:
        for cell in _cells(ROOT / "course" / name / f"{name}.ipynb"):
            meta, source = cell["metadata"].get("nbgrader", {}), _source(cell)
            if cell["cell_type"] != "code":
                continue
            if meta.get("grade"):
                doc = ast.get_docstring(ast.parse(source))
                missing += [] if doc and _normal(doc) in text else [f"{name}: {meta.get('grade_id')}"]
            elif not meta.get("solution") and source.startswith("predictions_"):
                prediction = source.split("=", 1)[0].strip()
                missing += [] if prediction in text else [f"{name}: {prediction}"]
    assert missing == []
