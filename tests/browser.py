"""Headless Chromium for the tests that read the documentation site as a reader sees it.

Playwright drives Debian's ``chromium`` (``/usr/bin/chromium``, which ``make unit`` installs via
``make browser-deps``), never a browser build of Playwright's own: that is a download from outside
the package registries, which neither CI nor a developer's machine can count on reaching. A missing
browser or library skips on a developer's machine and fails under ``CI=true`` (``unavailable``),
in one line that says what to install.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from conftest import unavailable

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = Path("/usr/bin/chromium")


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, closed (with Playwright's driver) when the block ends."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed: pip install -e '.[dev]'")
    if not CHROMIUM.is_file() or shutil.which(str(CHROMIUM)) is None:
        unavailable(f"{CHROMIUM} is missing: make browser-deps (or: sudo apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield browser
        finally:
            browser.close()
