"""docs/guide/halt.md's Python example runs as pasted and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from doc_pages import blocks


def test_the_python_example_runs_as_pasted(tmp_path: Path) -> None:
    [code] = blocks("docs/guide/halt.md", "In Python")
    out, here = io.StringIO(), Path.cwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "halt.md", "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(here)
    assert out.getvalue().splitlines() == ["halted []", "refused by alice",
                                           "finished ['A-17']"]
