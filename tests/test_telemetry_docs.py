"""The telemetry page's example runs as pasted (tests/doc_blocks.py, with the otel extra its page
states), and the README's trace is what
examples/telemetry.py prints (ids included: they are digests of the journal; only the run's
own clock-derived values may differ, and none is shown)."""

from __future__ import annotations

import re
import subprocess
import sys

from doc_blocks import find, printed
from doc_pages import ROOT, section


def test_the_traces_example_runs_and_prints_what_the_page_says() -> None:
    (printed_line,) = printed(find("docs/guide/telemetry.md", "Traces"))
    assert printed_line == ("['chat scripted', 'chat scripted', 'execute_tool calculator', "
                            "'invoke_agent math']")
    assert f"prints `{printed_line}`" in section("docs/guide/telemetry.md", "Traces")


def test_the_readme_shows_the_trace_the_example_receives() -> None:
    done = subprocess.run([sys.executable, "examples/telemetry.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    (shown,) = re.findall(r"^```text\n(.*?)^```", section(
        "docs/tour.md", "Telemetry: the journal, as a collector sees it"), re.S | re.M)
    assert done.stdout == shown
