"""The MCP conformance suite's client scenarios, run against tether's MCP client.

``conformance client --command "<python> tests/mcp/conformance_client.py" --scenario X
--spec-version R`` for every client scenario revision R requires (``REQUIRED``: 2025-11-25's,
the handshake protocol; 2026-07-28's frozen set, the stateless revision), one after another
(``--requirements`` runs them in parallel and ignores the client's exit code and timeouts; one
scenario at a time judges all three), and ``OTHERS``, an earlier revision's and two extensions'
scenarios tether's client also passes, at the suite's default. The suite starts a fake MCP
server (and, for ``auth/*``, a fake authorization server) on localhost and runs the driver,
which connects with ``tether.mcp.connect(MCPServer.http(..., auth=...))``
(``MCP_CONFORMANCE_PROTOCOL_VERSION`` tells it the revision).

The outcome is compared with ``tests/mcp/conformance/client-<revision>.yml``: a scenario listed
there must fail (each entry says why), every other one must pass. Needs node, npm and the
packages pinned in ``tests/mcp/package.json`` (the suite, and the Node.js 22 it runs on;
``make mcp-deps``); skipped without them, failed under CI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcp_servers import MCP_DIR, ROOT, conformance_suite

DRIVER = MCP_DIR / "conformance_client.py"
REQUIRED = {
    "2025-11-25": (
        "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
        "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2",
        "auth/metadata-var3", "auth/basic-cimd", "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
        "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
        "auth/pre-registration"),
    "2026-07-28": (
        "tools_call", "request-metadata", "auth/metadata-default", "auth/metadata-var1",
        "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
        "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none", "auth/pre-registration", "auth/resource-mismatch",
        "auth/offline-access-scope", "auth/offline-access-not-supported",
        "auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
        "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected",
        "auth/iss-normalized", "auth/metadata-issuer-mismatch", "sep-2322-client-request-state",
        "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
        "json-schema-ref-no-deref"),
}
# run at the suite's default revision, judged with 2025-11-25's expected failures
OTHERS = ("auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
          "auth/client-credentials-jwt", "auth/client-credentials-basic")
CASES = [*((r, s) for r, names in REQUIRED.items() for s in names),
         *((None, s) for s in OTHERS)]
TIMEOUT_MS = 30000


def expected(revision: str) -> dict[str, str]:
    """A revision's expected failures, each with its reason (the comment after it)."""
    path = MCP_DIR / "conformance" / f"client-{revision}.yml"
    text = path.read_text()
    listed = yaml.safe_load(text)["client"] or []
    reasons = dict(re.findall(r"^\s*-\s*(\S+)\s*#\s*(\S.*)$", text, re.M))
    return {name: reasons.get(name, "") for name in listed}


@pytest.fixture(scope="module")
def conformance() -> list[str]:
    return conformance_suite()


@pytest.mark.parametrize("revision", REQUIRED)
def test_expected_failures_are_known_scenarios_with_reasons(revision: str) -> None:
    known = {*REQUIRED[revision], *(OTHERS if revision == "2025-11-25" else ())}
    for name, reason in expected(revision).items():
        assert name in known, f"client-{revision}.yml lists {name!r}, not one of its scenarios"
        assert reason, f"client-{revision}.yml: {name!r} needs its reason after '#'"


@pytest.mark.parametrize("revision", REQUIRED)
def test_the_scenarios_are_the_suites(conformance: list[str], revision: str) -> None:
    listed = subprocess.run([*conformance, "list", "--requirements", revision],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    section = listed.split("Client scenarios", 1)[1].split("\n\n", 1)[0]
    names = tuple(re.findall(r"^\s*-\s*(\S+)\s*$", section, re.M))
    assert sorted(names) == sorted(REQUIRED[revision]), (
        f"the suite's client scenarios for {revision} changed (a new version?); update "
        f"REQUIRED and client-{revision}.yml: {names}")


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


@pytest.mark.parametrize(("revision", "scenario"), CASES,
                         ids=[f"{r or 'default'}:{s}" for r, s in CASES])
def test_client_scenario(conformance: list[str], revision: str | None, scenario: str,
                         tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                 "all_proxy"):
        env.pop(name, None)
    command = f"{sys.executable} {DRIVER}"
    assert " " not in sys.executable and " " not in str(DRIVER), (
        "the suite splits --command on spaces and cannot quote; run from a path without spaces")
    at = ["--spec-version", revision] if revision else []
    done = subprocess.run(
        [*conformance, "client", "--command", command, "--scenario", scenario, *at,
         "--timeout", str(TIMEOUT_MS), "-o", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_MS / 1000 + 60)
    passed = done.returncode == 0
    listed = f"client-{revision or '2025-11-25'}.yml"
    reason = expected(revision or "2025-11-25").get(scenario)
    if reason is None:
        assert passed, (f"conformance client scenario {scenario!r} ({revision or 'default'}) "
                        "failed:\n" + "\n".join(failures(tmp_path) or [done.stderr[-3000:]]))
    else:
        assert not passed, (f"conformance client scenario {scenario!r} passes now but is listed "
                            f"in {listed} ({reason}); remove it from the list")
