"""The guide's "Serving tools over MCP" example runs as written, and the files its commands
name are valid (the served tools load, both example policies pass the linter)."""

from __future__ import annotations

import re
import subprocess
import sys

from doc_pages import section as doc_section
from mcp_peers import ROOT
from tether.cli.mcp import load_tools


def section() -> str:
    return doc_section("docs/guide/mcp.md", "Serving tools over MCP, and a governing MCP proxy")


def test_readme_serve_example_runs() -> None:
    (example,) = re.findall(r"```python\n(.*?)```", section(), re.S)
    done = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == ["saved note 'todo' (8 characters)", "True denied",
                                        "approval_required apr_"]
    assert "serving 5 tools" in done.stderr


def test_readme_commands_name_valid_files() -> None:
    commands = " ".join(re.findall(r"```bash\n(.*?)```", section(), re.S))
    assert "examples/mcp_notes.py:tools" in commands
    tools, policy = load_tools(str(ROOT / "examples/mcp_notes.py") + ":tools")
    assert len(tools) == 5 and policy is None
    for name in ("mcp_notes", "mcp_filesystem"):
        path = f"examples/policies/{name}.yaml"
        assert path in commands
        done = subprocess.run([sys.executable, "-m", "tether", "policy", "lint", path],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
