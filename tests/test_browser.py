"""The release as a reader meets it: JupyterLab in headless Chromium, Run All from the Run menu, on the offline
readers' path (the README's `JUPYTER_CONFIG_PATH=jupyter-config`, which turns nbgrader's extensions off).

For each release notebook, untouched: Run All reaches the last code cell (the graded test cells and the stubs that
raise are tagged `raises-exception`, so JupyterLab goes on past them), every lesson plot is drawn, and a failed check
shows a verdict of a few lines. The page shows none of nbgrader's instructor UI (no Nbgrader menu, no Create
Assignment, no Formgrader, no Assignment List errors); a control server started without `jupyter-config/` shows its
Nbgrader menu, so the check can fail. Playwright (the test extra) drives Debian's `chromium` (`.ci/run` installs it),
never a browser of Playwright's own. Set DATAMOVE_SCREENSHOT=site/_static/shots/verdict.png to write the
verdict's screenshot.
About a minute on 2 cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from grader.bundle import CONFIG_NAME, JUPYTER_CONFIG_DIR, jupyter_config
from labcore.lessons import names

from browser_fixture import CHROMIUM_ARGS
from installed import draws_plot

pytestmark = [pytest.mark.browser, pytest.mark.slow(seconds=100)]  # JupyterLab runs every lesson in Chromium
ROOT = Path(__file__).resolve().parents[1]
LESSONS = names()
CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")  # Debian's, then whatever PATH has
RUN_ALL_S = 900  # the untouched release offline runs in seconds; live on a GPU in a few minutes
INSTRUCTOR_UI = (
    "Nbgrader",
    "Create Assignment",
    "Formgrader",
    "Assignment List",
    "Error fetching",
    "exchange directory",
)


def chromium() -> str | None:
    """A Chromium to drive: $CHROMIUM, else Debian's."""
    found = [os.environ.get("CHROMIUM", "")] + [shutil.which(name) or "" for name in CHROMIUM]
    return next((path for path in found if path and os.access(path, os.X_OK)), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium through Playwright; skipped, saying why, where either is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="no browser: Playwright (the test extra) is missing")
    path = chromium()
    if path is None:
        pytest.skip("no browser: no chromium on this machine (Debian's `chromium`; .ci/run installs it)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, headless=True, args=list(CHROMIUM_ARGS))
        yield launched
        launched.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(root: Path, home: Path, config_path: Path | None) -> Iterator[SimpleNamespace]:
    """JupyterLab on a free port of 127.0.0.1 with a fresh token, serving root; its own user config and runtime."""
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    env.pop("JUPYTER_CONFIG_PATH", None)
    if config_path is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config_path)
    argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1"]
    argv += [f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
    argv += ["--LabApp.news_url=", "--ServerApp.port_retries=0"]
    log = open(home / f"server-{port}.log", "w")  # closed below, after the server
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers(f"{url}/api/status?token={token}"):
            assert server.poll() is None and time.monotonic() < deadline, (home / log.name).read_text()[-3000:]
            time.sleep(0.3)
        while _answers(f"{url}/api/kernelspecs?token={token}") != 200:  # the list the page asks for first, ready
            assert server.poll() is None and time.monotonic() < deadline, (home / log.name).read_text()[-3000:]
            time.sleep(0.3)
        yield SimpleNamespace(url=url, token=token, log=home / log.name, root=root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _answers(url: str) -> int:
    """The HTTP status a GET gets, 0 when nothing answers; redirects are not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(url, timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def kernel_state(lab: SimpleNamespace, path: str) -> str | None:
    """What the server says the kernel of the notebook at `path` is doing; None while it has no session."""
    with urllib.request.urlopen(f"{lab.url}/api/sessions?token={lab.token}", timeout=10) as reply:
        sessions = json.load(reply)
    return next((s["kernel"]["execution_state"] for s in sessions if s["path"] == path and s.get("kernel")), None)


def open_notebook(page, lab: SimpleNamespace, path: str) -> None:
    """The notebook alone in a fresh workspace of its own (no tab of another page restored), its kernel idle.

    JupyterLab asked which kernel to start once, on a loaded 2-core CI machine (likely its list of kernels had not
    come from the server yet; not reproduced here): the reader's answer, the notebook's own kernel, is given; any
    other question fails the test, quoted.
    """
    workspace = Path(path).stem
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{path}?reset&token={lab.token}")
    wait_for_kernel(page, lab, path)


def wait_for_kernel(page, lab: SimpleNamespace, path: str) -> None:
    """Until the notebook's kernel is idle, page and server agreeing; a Select Kernel dialog answered with its own."""
    kernel = nbformat.read(lab.root / path, as_version=4).metadata.kernelspec.display_name
    deadline = time.monotonic() + 90
    while True:
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            asked = dialog.first.inner_text()
            assert asked.startswith("Select Kernel"), f"JupyterLab asks something opening {path}: {asked!r}"
            offered = dialog.first.locator("select option").all_inner_texts()
            assert kernel in offered, f"{path}: JupyterLab asks for a kernel and offers {offered}, not {kernel!r}"
            dialog.first.locator("select").select_option(label=kernel)
            dialog.first.locator(".jp-mod-accept").click()
        elif page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count():
            if kernel_state(lab, path) == "idle":
                return
        assert time.monotonic() < deadline, f"{path}: no idle kernel after 90 s (server says {kernel_state(lab, path)})"
        time.sleep(0.3)


PROMPTS = "Array.from(document.querySelectorAll('.jp-InputPrompt')).map(e => e.textContent.trim())"


def menu(page, title: str, command: str) -> None:
    """Choose a menu bar item, then the entry running `command`; again (three tries) when the menu closed first."""
    for attempt in range(3):
        dialog = page.locator(".jp-Dialog")
        if dialog.count():  # JupyterLab asks something first (seen in a loaded CI run): say what, not a click timeout
            asked = dialog.first.inner_text()
            raise AssertionError(f"a JupyterLab dialog is open before {title} > {command}: {asked!r}")
        page.locator(".lm-MenuBar-item", has_text=title).first.click()
        entry = page.locator(f".lm-Menu-item[data-command='{command}']")
        try:
            entry.click(timeout=10_000)
            return
        except Exception:  # playwright's TimeoutError: the menu was closed by a focus change, or never opened
            page.keyboard.press("Escape")
            if attempt == 2:
                raise


def _click_run_all(page) -> None:
    menu(page, "Run", "runmenu:run-all")


def _started(prompts: list[str]) -> bool:
    return any(p == "[*]:" or p[1:-2].isdigit() for p in prompts)


def run_all(page) -> float:
    """Run > Run All Cells, then wait until the kernel is idle and no cell is queued; the seconds it took."""
    started = time.monotonic()
    _click_run_all(page)
    while not _started(page.evaluate(PROMPTS)):
        if time.monotonic() - started > 20:  # the menu closed before the click landed: once more
            _click_run_all(page)
            started = time.monotonic()
        time.sleep(0.3)
    quiet = 0
    while quiet < 4:  # no [*] prompt and the kernel idle, four polls running: Run All is over (or stopped)
        assert time.monotonic() - started < RUN_ALL_S, f"Run All did not finish: {page.evaluate(PROMPTS)}"
        time.sleep(0.5)
        running = "[*]:" in page.evaluate(PROMPTS)
        states = page.locator(".jp-Notebook-ExecutionIndicator").evaluate_all("es => es.map(e => e.dataset.status)")
        quiet = quiet + 1 if states and set(states) == {"idle"} and not running else 0
    return time.monotonic() - started - 2


def save(page, path: Path) -> nbformat.NotebookNode:
    """Save the notebook from the page (File > Save) and read what JupyterLab wrote."""
    before = path.stat().st_mtime_ns
    menu(page, "File", "docmanager:save")
    deadline = time.monotonic() + 30
    while path.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.2)
    time.sleep(0.5)  # the contents manager writes to a temporary file and renames it: read the finished file
    return nbformat.read(path, as_version=4)


def is_exercise(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade"))


def images(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


@pytest.fixture(scope="module")
def reader_lab(browser, tmp_path_factory) -> Iterator[SimpleNamespace]:
    """A copy of course/ served by JupyterLab on the offline readers' path, one page per lesson run all."""
    base = tmp_path_factory.mktemp("browser")
    root = base / "course"
    shutil.copytree(ROOT / "course", root)
    with jupyterlab(root, base, ROOT / JUPYTER_CONFIG_DIR) as lab:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        ran = {}
        for lesson in LESSONS:
            page = context.new_page()
            open_notebook(page, lab, f"{lesson}/{lesson}.ipynb")
            seconds = run_all(page)
            ran[lesson] = SimpleNamespace(page=page, seconds=seconds, nb=save(page, root / lesson / f"{lesson}.ipynb"))
        yield SimpleNamespace(lab=lab, ran=ran, context=context)
        context.close()


@pytest.mark.parametrize("lesson", LESSONS)
def test_run_all_reaches_the_last_code_cell(reader_lab, lesson, capsys):
    """Every code cell of the untouched release ran, the last one included; the graded tests failed, as stubs do."""
    ran = reader_lab.ran[lesson]
    code = [c for c in ran.nb.cells if c.cell_type == "code"]
    assert code[-1].execution_count is not None, "Run All stopped before the last code cell"
    not_run = [c.get("id") for c in code if c.execution_count is None]
    assert not not_run, f"{lesson}: cells Run All never ran: {not_run}"
    failed_lesson = [
        c.get("id") for c in code if not is_exercise(c) and any(o.output_type == "error" for o in c.outputs)
    ]
    assert not failed_lesson, f"{lesson}: lesson cells raised: {failed_lesson}"
    with capsys.disabled():
        print(f"\n{lesson}: Run All in JupyterLab took {ran.seconds:.1f} s ({len(code)} code cells)")


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_plot_is_drawn(reader_lab, lesson):
    """As many pictures as lesson cells that draw one (the pitfall timelines of the exercises' part included)."""
    cells = reader_lab.ran[lesson].nb.cells
    plot_cells = [c for c in cells if c.cell_type == "code" and not is_exercise(c) and draws_plot(c.source)]
    assert plot_cells
    assert sum(images(c) > 0 for c in plot_cells) == len(plot_cells), [c.get("id") for c in plot_cells if not images(c)]


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_failed_check_is_a_verdict_on_the_page(reader_lab, lesson):
    """The first failed graded test cell of each lesson shows its verdict (a few lines, no traceback); a screenshot
    of the first lesson's on request."""
    page = reader_lab.ran[lesson].page
    cell = page.locator(".jp-CodeCell", has_text="✗ not passed").first
    cell.scroll_into_view_if_needed()
    text = cell.locator("[data-mime-type='application/vnd.jupyter.stderr']", has_text="✗ not passed").text_content()
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].startswith("✗ not passed: ") and lines[-1].lstrip().startswith("next:") and len(lines) <= 5
    assert "Traceback" not in text and ".py" not in text
    target = os.environ.get("DATAMOVE_SCREENSHOT")
    if target and lesson == LESSONS[0]:
        page.wait_for_timeout(500)  # off-screen cells are laid out (content-visibility) once scrolled to
        cell.screenshot(path=str(Path(target).resolve()), animations="disabled")


def test_the_offline_readers_lab_shows_no_instructor_ui(reader_lab):
    """No Nbgrader menu, no Create Assignment or Validate, no Assignment List errors, on any lesson's page; the
    formgrader is not served."""
    for lesson, ran in reader_lab.ran.items():
        menus = ran.page.locator(".lm-MenuBar-item").all_inner_texts()
        assert "Run" in menus and "Nbgrader" not in menus, (lesson, menus)
        body = ran.page.locator("body").inner_text()
        assert not [word for word in INSTRUCTOR_UI if word in body], lesson
    assert _answers(f"{reader_lab.lab.url}/formgrader?token={reader_lab.lab.token}") == 404
    assert (
        "nbgrader.server_extensions.formgrader | extension was successfully loaded"
        not in reader_lab.lab.log.read_text()
    )


def test_without_the_readers_config_nbgrader_shows_itself(browser, tmp_path):
    """The control: the same environment without jupyter-config/ shows nbgrader's menu and serves the formgrader
    (where nbgrader is installed, as in the test extra), so the check above can fail."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: nothing to turn off")
    root = tmp_path / "course"
    lesson = LESSONS[0]
    shutil.copytree(ROOT / "course" / lesson, root / lesson)
    with jupyterlab(root, tmp_path, None) as lab:
        page = browser.new_page()
        open_notebook(page, lab, f"{lesson}/{lesson}.ipynb")
        assert "Nbgrader" in page.locator(".lm-MenuBar-item").all_inner_texts()
        assert _answers(f"{lab.url}/formgrader?token={lab.token}") in (200, 302)
        page.close()


def test_the_readers_config_is_the_bundles():
    """jupyter-config/ holds exactly what the student bundle installs into etc/jupyter/ (grader.bundle)."""
    shipped = {
        str(p.parent.relative_to(ROOT / JUPYTER_CONFIG_DIR)): json.loads(p.read_text())
        for p in sorted((ROOT / JUPYTER_CONFIG_DIR).rglob("*.json"))
    }
    assert shipped == jupyter_config()
    assert {p.name for p in (ROOT / JUPYTER_CONFIG_DIR).rglob("*") if p.is_file()} == {CONFIG_NAME}


@pytest.mark.gpu
def test_run_all_is_live_on_a_gpu(reader_lab):
    """On a GPU the release measures live: the mode line of each lesson says 'live on'."""
    for lesson, ran in reader_lab.ran.items():
        text = "".join(o.get("text", "") for c in ran.nb.cells for o in c.get("outputs", []))
        assert f"{lesson}: live on" in text, lesson
