"""The MCP conformance suite's client scenario ``elicitation-sep1034-client-defaults``, run
against a driver built on tether's MCP client (``tests/mcp/conformance_elicitation_client.py``):
a tether Agent's tool call, the server's elicitation answered by the configured answerer with
the schema's defaults. The suite (``@modelcontextprotocol/conformance``, pinned in
``tests/mcp/package.json``) must be installed (``make mcp-deps``); under CI it must be there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import unavailable

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "mcp" / "conformance_elicitation_client.py"
SCENARIO = "elicitation-sep1034-client-defaults"


def conformance() -> str:
    if shutil.which("node") is None:
        unavailable("node is not installed; the MCP conformance suite needs it")
    exe = Path(os.environ.get("TETHER_CONFORMANCE")
               or ROOT / "tests" / "mcp" / "node_modules" / ".bin" / "conformance")
    if not exe.exists():
        unavailable(f"the MCP conformance suite is not installed at {exe}; run make mcp-deps")
    return str(exe)


def test_elicitation_defaults_scenario_passes(tmp_path: Path) -> None:
    exe = conformance()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [exe, "client", "--command", f"{sys.executable} {DRIVER}", "--scenario", SCENARIO,
         "--timeout", "60000", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "OVERALL: PASSED" in done.stdout + done.stderr
    assert "Passed: 5/5" in done.stdout + done.stderr
