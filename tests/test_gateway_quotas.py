"""A gateway's calls count against the quotas on tool calls (issue 51): a quota is kept in the
store, so gateways on one store — replicas of an MCP server, the proxy's clients — share it,
where each gateway's budget is its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_peers import ROOT, http_server
from mcp_replicas import MODERN, stateless_body
from tether.errors import InvalidArgument
from tether.policy.quotas import Quota
from tether.policy.yaml_policy import load_policy
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.sqlite import SQLiteStore
from tether.tools import tool

ALLOW = ROOT / "tests" / "mcp" / "conformance" / "allow.yaml"


@tool
def ping() -> str:
    """Ping."""
    return "pong"


@tool
def pong() -> str:
    """Pong."""
    return "ping"


async def test_gateways_on_one_store_share_a_tool_call_quota(tmp_path: Path) -> None:
    quotas = [Quota("pings", 3, "1h", per="agent", tool="ping"),
              Quota("tokens", 10, "1h", per="agent", counts="tokens")]  # no model call here
    policy = load_policy(str(ALLOW))
    a, b = (Gateway([ping, pong], policy=policy, client="ide", quotas=quotas,
                    store=SQLiteStore(tmp_path / "j.db")) for _ in range(2))
    results = [await g.call("ping", {}) for g in (a, b, a, b, a)]
    assert [r.status for r in results] == ["ok", "ok", "ok", "skipped", "skipped"]
    assert "quota 'pings'" in results[3].content and "3 tool calls used" in results[3].content
    assert (await a.call("pong", {})).status == "ok"  # another tool's calls are not counted
    events = [e.type for e in a.journal.store.read(a.id)]  # type: ignore[union-attr]
    assert "quota.refused" in events


def test_a_gateway_with_quotas_needs_a_store() -> None:
    with pytest.raises(InvalidArgument, match="quotas are kept in the store"):
        Gateway([ping], policy=load_policy(str(ALLOW)), quotas=[Quota("q", 1, "1h")])


def test_the_proxy_counts_its_policys_quotas(tmp_path: Path) -> None:
    import httpx

    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\npolicy_id: p\ndefault: allow\nrules: []\nquotas:\n"
                      "  - id: echoes\n    tool: echo\n    limit: 2\n    window: 1h\n")
    db = tmp_path / "j.db"
    args = ["proxy", "--policy", str(policy), "--store", f"sqlite:///{db}", "--",
            sys.executable, str(ROOT / "tests" / "mcp" / "capability_upstream.py")]
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
    with http_server(args) as (url, _):
        answers = [httpx.post(url, json=stateless_body(n, "echo", "x"), headers=headers,
                              timeout=30).json()["result"] for n in range(3)]
    assert [a["_meta"]["tether/status"] for a in answers] == ["ok", "ok", "skipped"]
    assert "quota 'echoes'" in answers[2]["content"][0]["text"]
