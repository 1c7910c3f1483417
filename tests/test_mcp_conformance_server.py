"""The MCP conformance suite's server scenarios against ``tether mcp serve`` and ``tether mcp
proxy`` (@modelcontextprotocol/conformance, pinned in tests/mcp/package.json with the Node.js 22
it needs).

Each revision's required scenarios (``--requirements 2025-11-25``: the handshake protocol with
sessions; ``--requirements 2026-07-28``: the frozen set of the stateless revision, at its wire)
run one after another against each, over streamable HTTP on 127.0.0.1, and must pass but for
the scenarios (or single checks) the revision's expected-failures file lists, each with its
reason (tests/mcp/conformance/<serve|proxy>-<revision>.yml): a new failure fails the test, and
so does a listed one that passes. ``serve`` serves the suite's tools as tether tools
(tests/mcp/conformance_tools.py); ``proxy`` governs the same tools on the bare SDK
(tests/mcp/conformance_upstream.py), so what the upstream sends must reach the client intact,
and what it asks during a call (sampling, elicitation) must reach the client that made the call.
The proxy runs the suite once for each pairing of its client's era and its upstream's
(``--upstream-protocol``): the upstream asks on the back-channel in 2025 and by
``InputRequiredResult`` in 2026, and either way its asks reach the suite's client in that
client's era. Every call passes the chokepoint: the journals are checked after each run.
Without node or the packages the tests skip on a developer's machine and fail under CI
(``conftest.unavailable``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcp_peers import ROOT, http_server, journals
from mcp_servers import conformance_suite
from tether.journal.chain import verify_chain

MCP = ROOT / "tests" / "mcp"
POLICY = "tests/mcp/conformance/allow.yaml"
TOOLS = "tests/mcp/conformance_tools.py:tools"
SUITE_TIMEOUT = 600.0
REVISIONS = ("2025-11-25", "2026-07-28")


def expected_failures(target: str, revision: str, upstream: str | None, into: Path) -> Path:
    """``target``'s expected failures for ``revision`` as the suite reads them (``server:``):
    the file's ``server`` list, and for the proxy the entries its ``upstream-<era>`` list adds
    when its upstream speaks that era."""
    listed = yaml.safe_load((MCP / "conformance" / f"{target}-{revision}.yml").read_text())
    failing = list(listed["server"]) + list(listed.get(f"upstream-{upstream}") or [])
    into.write_text(yaml.safe_dump({"server": failing}))
    return into


def run_suite(url: str, target: str, revision: str, expected: Path
              ) -> subprocess.CompletedProcess[str]:
    """``conformance server`` (``revision``'s required scenarios, sequential) against ``url``,
    with the ``expected`` failures."""
    return subprocess.run(
        [*conformance_suite(), "server", "--url", url, "--requirements", revision,
         "--expected-failures", str(expected)],
        cwd=ROOT, capture_output=True, text=True, timeout=SUITE_TIMEOUT)


def explain(done: subprocess.CompletedProcess[str], log: list[str]) -> str:
    return (f"conformance exited {done.returncode}\n--- stdout (tail)\n{done.stdout[-6000:]}\n"
            f"--- stderr (tail)\n{done.stderr[-3000:]}\n--- tether's stderr\n{''.join(log)}")


def check_journals(db: Path) -> str:
    """Every client's session verifies; returns all journaled text (for what must not be in)."""
    sessions = journals(db)
    assert sessions, "no call reached the chokepoint"
    for events in sessions.values():
        assert verify_chain(events) is None
    return json.dumps([[e.type, e.data] for es in sessions.values() for e in es], default=str)


def parts_of(text: str) -> list[dict[str, object]]:
    found = []
    for event_type, data in json.loads(text):
        if event_type == "tool.result" and "parts" in data:
            found.extend(data["parts"])
    return found


@pytest.mark.parametrize("revision", REVISIONS)
def test_serve_passes_the_conformance_suite(tmp_path: Path, revision: str) -> None:
    db = tmp_path / "serve.db"
    args = ["serve", TOOLS, "--policy", POLICY, "--store", f"sqlite:///{db}"]
    expected = expected_failures("serve", revision, None, tmp_path / "expected.yml")
    with http_server(args) as (url, log):
        done = run_suite(url, "serve", revision, expected)
    assert done.returncode == 0, explain(done, log)
    journaled = check_journals(db)
    assert "iVBORw0KGgo" not in journaled and "UklGRiY" not in journaled  # no base64 inline
    kinds = {(p["type"], p.get("mime_type")) for p in parts_of(journaled)}
    assert {("image", "image/png"), ("audio", "audio/wav"),
            ("resource", "text/plain")} <= kinds
    assert all(len(str(p["sha256"])) == 64 for p in parts_of(journaled) if "bytes" in p)
    if revision == "2025-11-25":  # (sampling during a call: the handshake era's scenario)
        assert '"tool": "test_sampling"' in journaled and "LLM response: " in journaled


@pytest.mark.parametrize("upstream", REVISIONS)
@pytest.mark.parametrize("revision", REVISIONS)
def test_proxy_passes_the_conformance_suite(tmp_path: Path, revision: str,
                                            upstream: str) -> None:
    """The suite as the proxy's client at ``revision``, the upstream spoken to at
    ``upstream``: each pairing of the two eras."""
    db = tmp_path / "proxy.db"
    args = ["proxy", "--policy", POLICY, "--store", f"sqlite:///{db}", "--upstream-protocol",
            upstream, "--", sys.executable, str(MCP / "conformance_upstream.py")]
    expected = expected_failures("proxy", revision, upstream, tmp_path / "expected.yml")
    with http_server(args) as (url, log):
        done = run_suite(url, "proxy", revision, expected)
    assert done.returncode == 0, explain(done, log)
    journaled = check_journals(db)
    assert "iVBORw0KGgo" not in journaled and "UklGRiY" not in journaled
    kinds = {(p["type"], p.get("mime_type")) for p in parts_of(journaled)}
    assert {("image", "image/png"), ("audio", "audio/wav"),
            ("resource", "application/json")} <= kinds
    if revision != "2025-11-25":
        return
    # the upstream's sampling and elicitation went to the suite's client, each journaled with
    # its answer; its logs and progress reached the client (the suite checks them) unjournaled
    events = [event_type for event_type, _ in json.loads(journaled)]
    assert events.count("sampling.relayed") == 1 and events.count("sampling.answered") == 1
    assert events.count("elicitation.relayed") == 3
    assert events.count("elicitation.answered") == 3
    assert "sampling.refused" not in events and "elicitation.refused" not in events
