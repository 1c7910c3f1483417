"""A raw stateless 2026-07-28 MCP client over HTTP, one ``tools/call`` at a time, for the tests
of multi-round-trip requests (SEP-2322) through ``tether mcp serve`` and ``tether mcp proxy``:
each call carries the client's capabilities in ``_meta`` and, on a later round, its answers and
the state of the round before.
"""

from __future__ import annotations

from typing import Any

import httpx

MODERN = "2026-07-28"
BOTH: dict[str, Any] = {"sampling": {}, "elicitation": {}}
ALICE = {"action": "accept", "content": {"name": "Alice"}}
PARIS = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


def call(url: str, name: str, arguments: dict[str, Any] | None = None, *,
         capabilities: dict[str, Any] | None = None, answers: dict[str, Any] | None = None,
         state: str | None = None, headers: dict[str, str] | None = None) -> httpx.Response:
    """One stateless 2026-07-28 ``tools/call`` (capabilities in ``_meta``), with this round's
    answers and the state of the last round; ``headers`` replace the ones it would send."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": BOTH if capabilities is None
            else capabilities}
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}, "_meta": meta}
    if answers is not None:
        params["inputResponses"] = answers
    if state is not None:
        params["requestState"] = state
    return httpx.post(url, timeout=30, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                             "params": params}, headers={
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call", "Mcp-Name": name, **(headers or {})})


def result(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "error" not in body, body
    found: dict[str, Any] = body["result"]
    return found


def asked(response: httpx.Response) -> tuple[dict[str, Any], str]:
    """An InputRequiredResult's input requests and state."""
    found = result(response)
    assert found["resultType"] == "input_required", found
    return found["inputRequests"], found["requestState"]


def text(response: httpx.Response) -> str:
    found = result(response)
    assert found["resultType"] == "complete", found
    return str(found["content"][0]["text"])
