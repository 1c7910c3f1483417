"""The MCP conformance suite's client scenario ``elicitation-sep1034-client-defaults``, run
against a driver built on tether's MCP client (``tests/mcp/conformance_elicitation_client.py``):
a tether Agent's tool call, the server's elicitation answered by the configured answerer with
the schema's defaults. The suite (``@modelcontextprotocol/conformance``, pinned in
``tests/mcp/package.json`` with the Node.js 22 it runs on) must be installed (``make
mcp-deps``); under CI it must be there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_servers import conformance_suite

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "mcp" / "conformance_elicitation_client.py"
SCENARIO = "elicitation-sep1034-client-defaults"


def test_elicitation_defaults_scenario_passes(tmp_path: Path) -> None:
    suite = conformance_suite()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [*suite, "client", "--command", f"{sys.executable} {DRIVER}", "--scenario", SCENARIO,
         "--timeout", "60000", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "OVERALL: PASSED" in done.stdout + done.stderr
    assert "Passed: 5/5" in done.stdout + done.stderr
