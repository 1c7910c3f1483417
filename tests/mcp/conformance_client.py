"""The MCP conformance suite's client under test, built on tether's own MCP client.

The suite (``conformance client --command "python conformance_client.py" --scenario X``) starts
a fake server (and, for ``auth/*``, a fake authorization server), then runs this script with the
server's URL as the last argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and, for
pre-registration and client credentials, ``MCP_CONFORMANCE_CONTEXT`` (JSON). The script connects
with ``tether.mcp.connect(MCPServer.http(..., auth=...))`` — tether's transport, OAuth
configuration and token store, not the bare SDK — lists the tools and calls the scenario's tool.

The suite's authorization server approves at once and redirects to the client's redirect URI,
where nothing listens; so this script's ``authorize`` (the user agent seam) GETs the
authorization URL without following the redirect and returns its ``Location``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import httpx2

from tether.credentials import Secret
from tether.mcp import MCPError, MCPServer, connect
from tether.mcp.oauth import AuthorizationCode, ClientCredentials, OAuth, PrivateKeyJWT

REDIRECT = "http://localhost:3000/callback"  # as the reference client: never listened on
CIMD = "https://conformance-test.local/client-metadata.json"
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("add_numbers", {"a": 2, "b": 3}), ("test-tool", {}),
    ("test_client_elicitation_defaults", {}), ("test_reconnection", {}),
    # http-custom-headers: the SDK mirrors x-mcp-header arguments into Mcp-Param-* headers
    ("test_custom_headers", {
        "region": "us-west1", "priority": 42, "verbose": False, "debug": True, "empty_val": "",
        "method_val": "test-method", "float_val": 3.14159, "non_ascii_val": "Hello, 世界",
        "whitespace_val": " padded ", "leading_space_val": " us-west1",
        "trailing_space_val": "us-west1 ", "internal_space_val": "us west 1",
        "control_char_val": "line1\nline2", "crlf_val": "line1\r\nline2",
        "tab_val": "\tindented", "query": "SELECT * FROM users"}),
    ("test_custom_headers_null", {"region": "us-east1", "priority": 1, "query": "SELECT 1"}),
    ("valid_tool", {"region": "us-west1"}),  # http-invalid-tool-headers: the valid one is kept
    # sep-2322-client-request-state runs its tools in an agent's session (``mrtr`` below)
)
#: Tools whose call is expected to fail (tether refuses their answer): logged, not fatal.
REFUSED: frozenset[str] = frozenset()
#: sep-2322-client-request-state: called in turn by an agent's session, whose calls answer the
#: server's InputRequiredResult (its form, accepted by the configured answerer) and retry with
#: its requestState (tether.mcp.input_required); the unrelated call carries nothing of it, and
#: a result without its resultType is refused by the SDK (a clear error: the one tool error).
MRTR = ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated",
        "test_mrtr_no_result_type")
#: json-schema-2020-12-preservation: the focal tool's inputSchema, as tether received it, is
#: echoed back through this tool.
ECHO, FOCAL = "json_schema_echo", "json_schema_2020_12_tool"


async def authorize(url: str) -> str:
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as client:
        response = await client.get(url)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered {response.status_code} "
                           "without a redirect")
    return str(location)


def auth_for(scenario: str, context: dict[str, Any]) -> OAuth | None:
    if scenario == "auth/client-credentials-basic":
        return ClientCredentials(context["client_id"], Secret(context["client_secret"]))
    if scenario == "auth/client-credentials-jwt":
        return PrivateKeyJWT(context["client_id"], Secret(context["private_key_pem"]),
                             algorithm=context.get("signing_algorithm") or "ES256")
    if scenario == "auth/pre-registration":
        return AuthorizationCode(client_id=context["client_id"],
                                 client_secret=Secret(context["client_secret"]),
                                 redirect_uri=REDIRECT, authorize=authorize)
    if scenario.startswith("auth/"):
        return AuthorizationCode(client_metadata_url=CIMD, redirect_uri=REDIRECT,
                                 authorize=authorize, client_name="tether-conformance")
    return None


def protocol() -> Any:
    """The era to speak: negotiated ("auto"), unless ``TETHER_CONFORMANCE_PIN`` is set, when
    the suite's announced era (``MCP_CONFORMANCE_PROTOCOL_VERSION``) is pinned."""
    announced = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
    if os.environ.get("TETHER_CONFORMANCE_PIN") and announced in ("2025-11-25", "2026-07-28"):
        return announced
    return "auto"


def mrtr(url: str) -> int:
    """sep-2322-client-request-state through an agent's session; 0 when each call went as
    expected (the last one refused), 1 otherwise."""
    from tether import Agent, ReAct, ScriptedModel
    from tether.types import ModelResponse, ToolCall

    server = MCPServer.http("conformance", url, prefix="", connect_timeout=15, call_timeout=15,
                            protocol=protocol(), elicitation=lambda question: {"confirmed": True})
    turns: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", name, {}),)) for i, name in enumerate(MRTR)]
    with connect(server) as tools:
        session = Agent(model=ScriptedModel([*turns, "done"]), reasoning=ReAct(),
                        tools=[*tools]).session("call the scenario's tools")
        result = session.run()
    outcome = [(r.name, r.status, str(r.content)[:200]) for r in result.trajectory.tool_results]
    answered = [e.data["action"] for e in session.replay() if e.type == "elicitation.answered"]
    print(outcome, answered, file=sys.stderr)
    statuses = [status for _, status, _ in outcome]
    return 0 if statuses == ["ok", "ok", "ok", "error"] and answered == ["accept"] * 2 else 1


async def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    server = MCPServer.http("conformance", sys.argv[-1], auth=auth_for(scenario, context),
                            connect_timeout=15, call_timeout=15, protocol=protocol())
    try:
        async with connect(server) as tools:
            print(f"tools: {[t.mcp_name for t in tools]} (protocol {tools.protocol_version})",
                  file=sys.stderr)
            calls = list(CALLS)
            tool = tools.get(FOCAL)
            focal = [spec for spec in tools.offered()
                     if tool is not None and spec.name == tool.name]
            if focal and tools.get(ECHO) is not None:
                calls.append((ECHO, {"schema": focal[0].parameters}))
            for name, arguments in calls:
                if tools.get(name) is None:
                    continue
                try:
                    text = await tools.invoke(name, arguments)
                except MCPError as exc:
                    if name not in REFUSED:
                        raise
                    print(f"refused {name}: {exc}", file=sys.stderr)
                    continue
                print(f"called {name}: {text[:200]}", file=sys.stderr)
    except MCPError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "elicitation-sep1034-client-defaults":
        # the server's question is answered in the session of an agent's call (tether.mcp.requests)
        from conformance_elicitation_client import main as elicitation

        sys.exit(elicitation(sys.argv[-1]))
    if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "sep-2322-client-request-state":
        sys.exit(mrtr(sys.argv[-1]))
    sys.exit(asyncio.run(main()))
