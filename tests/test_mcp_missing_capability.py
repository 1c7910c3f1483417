"""A call that needs a client capability the request did not declare (issue 51).

A 2026-07-28 request declares its capabilities in its own ``_meta``; a tool that asks for one
it lacks fails, the failure is journaled as the call's result, and the client gets the spec's
MissingRequiredClientCapabilityError (-32021, HTTP 400, ``requiredCapabilities``). A handshake
(2025) client keeps an ``isError`` result. A proxied upstream's own -32021 reaches a 2026
client as -32021, only with a ``requiredCapabilities`` object MCP defines.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx

from mcp_peers import ROOT, http_peer, http_server, journals, status, text
from tether.journal.chain import verify_chain

MCP = ROOT / "tests" / "mcp"
POLICY = "tests/mcp/conformance/allow.yaml"
TOOLS = "tests/mcp/capability_tools.py:tools"
MODERN = "2026-07-28"


def call(url: str, name: str, arguments: dict[str, Any],
         capabilities: dict[str, Any] | None = None) -> httpx.Response:
    """One stateless 2026-07-28 ``tools/call``, its capabilities in its ``_meta``."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta}}
    return httpx.post(url, json=body, timeout=30, headers={
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call", "Mcp-Name": name})


def results(db: Path) -> list[dict[str, Any]]:
    """Every journaled tool result; every session's chain verifies."""
    found = []
    for events in journals(db).values():
        assert verify_chain(events) is None
        found += [e.data for e in events if e.type == "tool.result"]
    return found


def serve_args(db: Path) -> list[str]:
    return ["serve", TOOLS, "--policy", POLICY, "--store", f"sqlite:///{db}"]


def test_a_stateless_call_needing_an_undeclared_capability_is_refused_with_32021(
        tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve_args(db)) as (url, _):
        sampled = call(url, "summarize", {"text": "the quarterly report"})
        asked = call(url, "confirm", {"question": "delete it?"})
        later = call(url, "best_effort", {"text": "as it is"})
    for response, capability in ((sampled, "sampling"), (asked, "elicitation")):
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert response.json()["id"] == 7 and error["code"] == -32021
        assert error["data"] == {"requiredCapabilities": {capability: {}}}
        assert "journaled in tether session" in error["message"]
    # a tool that asked, was refused and did without succeeded: nothing required was missing
    assert later.status_code == 200 and later.json()["result"]["content"][0]["text"] == "as it is"
    # the calls passed the chokepoint: each failure is the call's journaled result
    journaled = results(db)
    text_of = json.dumps(journaled)
    assert [r["status"] for r in journaled] == ["error", "error", "ok"]
    assert "did not declare the sampling capability in this request's _meta" in text_of
    assert "did not declare the elicitation capability" in text_of


async def handshake_call(url: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """A 2025-11-25 client's call (initialize, then an MCP session), declaring neither sampling
    nor elicitation."""
    async with http_peer(url) as client:
        return await client.call_tool(name, arguments or {})


def test_a_handshake_client_without_the_capability_keeps_an_error_result(
        tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve_args(db)) as (url, _):
        result = anyio.run(handshake_call, url, "summarize", {"text": "x"})
    assert result.is_error and status(result) == "error"
    assert "did not declare the sampling capability in its initialize request" in text(result)
    assert [r["status"] for r in results(db)] == ["error"]


def test_the_proxy_hands_an_upstreams_32021_to_a_stateless_client(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    args = ["proxy", "--policy", POLICY, "--store", f"sqlite:///{db}", "--", sys.executable,
            str(MCP / "capability_upstream.py")]
    with http_server(args) as (url, _):
        roots = call(url, "needs_roots", {})
        hostile = call(url, "bad_data", {})  # not a ClientCapabilities: not handed on
        odd = call(url, "odd_data", {})  # only what MCP defines is handed on
        fine = call(url, "echo", {})
        handshake = anyio.run(handshake_call, url, "needs_roots")
    assert roots.status_code == 400, roots.text
    assert roots.json()["error"]["code"] == -32021
    assert roots.json()["error"]["data"] == {"requiredCapabilities": {"roots": {}}}
    assert hostile.status_code == 200 and hostile.json()["result"]["isError"] is True
    assert "JSON-RPC error -32021" in hostile.json()["result"]["content"][0]["text"]
    assert odd.status_code == 400
    assert odd.json()["error"]["data"] == {"requiredCapabilities": {"roots": {}}}
    assert fine.status_code == 200 and fine.json()["result"]["isError"] is False
    assert handshake.is_error and "JSON-RPC error -32021" in text(handshake)  # 2025: no -32021
    assert [r["status"] for r in results(db)] == ["error", "error", "error", "ok", "error"]


def test_the_proxy_refuses_a_relayed_ask_of_a_stateless_client_with_32021(
        tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    args = ["proxy", "--policy", POLICY, "--store", f"sqlite:///{db}", "--", sys.executable,
            str(MCP / "conformance_upstream.py")]
    with http_server(args) as (url, _):
        response = call(url, "test_missing_capability", {})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    events = [e.type for es in journals(db).values() for e in es]
    assert events.count("sampling.relayed") == 1 and events.count("sampling.refused") == 1
    assert [r["status"] for r in results(db)] == ["error"]


def test_only_capabilities_mcp_defines_are_named_in_the_error() -> None:
    from types import SimpleNamespace

    from tether.runtime.record.result import ToolResult
    from tether.serve.caller import missing_capability
    from tether.serve.clients import Outcome

    failed = Outcome(ToolResult("c1", "t", "Error: ...", "error"), "s1")
    ran = Outcome(ToolResult("c1", "t", "fine"), "s1")

    def error(missing: Any, outcome: Outcome = failed) -> Any:
        return missing_capability(outcome, SimpleNamespace(missing=missing))  # type: ignore[arg-type]

    assert error({"sampling": {}, "madeUp": {}}).data == {  # type: ignore[union-attr]
        "requiredCapabilities": {"sampling": {}}}
    assert error({"madeUp": {}}) is None  # nothing MCP defines: no -32021
    assert error({"sampling": "yes"}) is None  # not a capability object
    assert error({"sampling": {}}, ran) is None  # the tool did without
    assert error(None) is None
