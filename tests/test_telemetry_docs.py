"""The telemetry page's example runs as written, and the README's trace is what
examples/telemetry.py prints (ids included: they are digests of the journal; only the run's
own clock-derived values may differ, and none is shown)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from doc_pages import ROOT, blocks, section


def test_the_traces_example_runs_and_prints_what_the_page_says(
        capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = blocks("docs/guide/telemetry.md", "Traces")
    exec(compile(block, "telemetry.md (Traces)", "exec"), {})
    printed = capsys.readouterr().out.strip()
    assert printed == ("['chat scripted', 'chat scripted', 'execute_tool calculator', "
                       "'invoke_agent math']")
    assert f"prints `{printed}`" in section("docs/guide/telemetry.md", "Traces")


def test_the_readme_shows_the_trace_the_example_receives() -> None:
    done = subprocess.run([sys.executable, "examples/telemetry.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    (shown,) = re.findall(r"^```text\n(.*?)^```", section(
        "README.md", "Telemetry: the journal, as a collector sees it"), re.S | re.M)
    assert done.stdout == shown
