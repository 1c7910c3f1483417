"""The documentation site as a reader gets it, built once per test run for the tests that open it
(offline on ``file://``, every public name in the reference, code that fits its column).

Built the way ``make docs`` builds it (``mkdocs build --strict``), into a directory of the run's
own, so a test never reads a stale ``build/site`` left by an earlier checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from doc_pages import ROOT


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site's directory (its ``index.html`` is what the README says to open)."""
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(site)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"mkdocs build failed:\n{done.stderr[-4000:]}"
    return site
