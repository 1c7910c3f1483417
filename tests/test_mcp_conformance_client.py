"""The MCP conformance suite's client scenarios, run against tether's MCP client.

``conformance client --command "<python> tests/mcp/conformance_client.py" --scenario X`` for
every client scenario, one after another (``--suite`` runs them in parallel and ignores the
client's exit code and timeouts; one scenario at a time judges all three). The suite starts a
fake MCP server (and, for ``auth/*``, a fake authorization server) on localhost and runs the
driver, which connects with ``tether.mcp.connect(MCPServer.http(..., auth=...))``.

The outcome is compared with ``tests/mcp/conformance/client-expected.yml``: a scenario listed
there must fail (each entry says why), every other one must pass. Needs node and the suite pinned
in ``tests/mcp/package.json`` (``make mcp-deps``); skipped without them, failed under CI.
About 40 s for the 23 scenarios.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance_patch import is_patched
from mcp_servers import MCP_DIR, ROOT, npm_bin

from conftest import unavailable

DRIVER = MCP_DIR / "conformance_client.py"
EXPECTED_FILE = MCP_DIR / "conformance" / "client-expected.yml"
SCENARIOS = (
    "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/resource-mismatch", "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-jwt", "auth/client-credentials-basic",
)
TIMEOUT_MS = 30000


def expected() -> dict[str, str]:
    """The expected failures, each with its reason (the comment after it)."""
    text = EXPECTED_FILE.read_text()
    listed = yaml.safe_load(text)["client"] or []
    reasons = dict(re.findall(r"^\s*-\s*(\S+)\s*#\s*(\S.*)$", text, re.M))
    return {name: reasons.get(name, "") for name in listed}


@pytest.fixture(scope="module")
def conformance() -> str:
    if shutil.which("node") is None:
        unavailable("node is not installed; the MCP conformance suite needs it")
    binary = npm_bin("conformance")
    if not is_patched():  # else three auth scenarios fail on the suite's own issuer bug
        pytest.fail("the conformance suite's fixes to its authorization server are not applied: "
                    "run `make mcp-deps` (tests/conformance_patch.py)")
    return binary


def test_expected_failures_are_known_scenarios_with_reasons() -> None:
    for name, reason in expected().items():
        assert name in SCENARIOS, f"{EXPECTED_FILE.name} lists {name!r}, not a client scenario"
        assert reason, f"{EXPECTED_FILE.name}: {name!r} needs its reason after '#'"


def test_the_scenarios_are_the_suites(conformance: str) -> None:
    listed = subprocess.run([conformance, "list", "--client"], capture_output=True, text=True,
                            timeout=60, check=True).stdout
    names = tuple(re.findall(r"^\s*-\s*(\S+)\s*$", listed, re.M))
    assert sorted(names) == sorted(SCENARIOS), (
        "the suite's client scenarios changed (a new version?); update SCENARIOS and "
        f"{EXPECTED_FILE.name}: {names}")


def failures(out: Path) -> list[str]:
    lines = []
    for checks in sorted(out.rglob("checks.json")):
        for check in json.loads(checks.read_text()):
            if check.get("status") in ("FAILURE", "WARNING"):
                lines.append(f"{check['status']} {check['id']}: "
                             f"{check.get('errorMessage') or check.get('description', '')}")
    for stderr in sorted(out.rglob("stderr.txt")):
        tail = [line for line in stderr.read_text().splitlines() if line.startswith("error:")]
        lines += tail[-3:]
    return lines


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario(conformance: str, scenario: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                 "all_proxy"):
        env.pop(name, None)
    command = f"{sys.executable} {DRIVER}"
    assert " " not in sys.executable and " " not in str(DRIVER), (
        "the suite splits --command on spaces and cannot quote; run from a path without spaces")
    done = subprocess.run(
        [conformance, "client", "--command", command, "--scenario", scenario,
         "--timeout", str(TIMEOUT_MS), "-o", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_MS / 1000 + 60)
    passed = done.returncode == 0
    reason = expected().get(scenario)
    if reason is None:
        assert passed, (f"conformance client scenario {scenario!r} failed:\n"
                        + "\n".join(failures(tmp_path) or [done.stderr[-3000:]]))
    else:
        assert not passed, (f"conformance client scenario {scenario!r} passes now but is listed "
                            f"in {EXPECTED_FILE.name} ({reason}); remove it from the list")
