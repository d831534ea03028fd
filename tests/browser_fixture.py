"""A headless Chromium driven by Playwright: Debian's `chromium` (Playwright's own browser downloads are not used).

`.ci/run` installs the package where it runs as root with apt-get; anywhere else without one, browser tests skip
and say why.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")
# --no-sandbox: CI runs as root, where Chromium refuses its own sandbox; --disable-gpu: no GPU process rasterizing
# through SwiftShader beside the renderers (a tenth less CPU for tests/test_browser.py's JupyterLab pages)
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu")


def chromium_path() -> str | None:
    """The first Chromium found: Debian's path, then PATH."""
    for name in CHROMIUM:
        found = name if Path(name).is_file() else shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for the session (CHROMIUM_ARGS)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extra (playwright) is not installed")
    executable = chromium_path()
    if executable is None:
        pytest.skip("no browser: Debian's chromium is not installed (.ci/run installs it with apt-get as root)")
    with sync_api.sync_playwright() as playwright:
        found = playwright.chromium.launch(executable_path=executable, headless=True, args=list(CHROMIUM_ARGS))
        try:
            yield found
        finally:
            found.close()
