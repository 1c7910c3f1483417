"""An MCP server of one protocol era (or both), on streamable HTTP at 127.0.0.1, recording what
clients send: for tests of tether's MCP client across MCP's 2025 and 2026-07-28 revisions.

Run: ``python era_server.py ERA RECORD [DISCOVER]``; prints ``serving at http://127.0.0.1:PORT/mcp``
to stderr once it listens. The server is the SDK's low-level ``Server`` (which serves both
eras); an ASGI layer in front of it narrows it to one and records every request (its method,
its ``mcp-*`` headers and its JSON body) as a JSON line in RECORD:

- ERA ``2026``: 2026-07-28 only, as a stateless modern server: a request without a 2026
  ``MCP-Protocol-Version`` header gets 400 "Missing MCP-Protocol-Version header"; ``initialize``
  gets "Method not found: initialize".
- ERA ``2025``: the handshake only, as a 2025 server: ``server/discover``, or a 2026 version
  header, gets 400 "Bad Request: Unsupported protocol version".
- ERA ``both``: the SDK as it is.

DISCOVER (with ``2026``) changes the ``server/discover`` answer: ``garbage`` (not a discover
result), ``foreign`` (only an unknown version), ``disjoint`` (-32022 naming only an unknown
version), ``retry`` (-32022 naming 2026-07-28 at the first probe, then the real answer).

Tools: ``add(a, b)``; ``meta()`` answers with its request's ``_meta`` as JSON; ``ask()`` answers
with an ``InputRequiredResult`` asking for an elicitation (2026), and its retry with what it got
back (tests/test_mcp_input_required.py has the rest); ``untyped()`` is answered
by the ASGI layer with a 2026 result that lacks its ``resultType``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from wire_server import answer, intercepting, record, serve

ERA, RECORD = sys.argv[1], sys.argv[2]
DISCOVER = sys.argv[3] if len(sys.argv) > 3 else ""
OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
          "required": ["a", "b"]}
TOOLS = [types.Tool(name="add", description="Add two integers.", input_schema=OBJECT),
         types.Tool(name="meta", description="Echo the request's _meta.",
                    input_schema={"type": "object"}),
         types.Tool(name="ask", description="Asks the user something.",
                    input_schema={"type": "object"}),
         types.Tool(name="untyped", description="Answers without resultType.",
                    input_schema={"type": "object"})]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
    arguments = params.arguments or {}
    if params.name == "add":
        text = str(int(arguments["a"]) + int(arguments["b"]))
    elif params.name == "meta":
        text = json.dumps(params.meta or {}, sort_keys=True, default=str)
    elif params.name == "ask" and params.input_responses is not None:  # the retry
        text = json.dumps({"responses": {k: v.model_dump(mode="json", exclude_none=True)
                                         for k, v in params.input_responses.items()},
                           "state": params.request_state})
    elif params.name == "ask":
        question = types.ElicitRequest(params=types.ElicitRequestFormParams(
            message="Your name?", requested_schema={
                "type": "object", "properties": {"name": {"type": "string"}}}))
        return types.InputRequiredResult(input_requests={"q": question}, request_state="s1")
    else:
        text = f"unknown tool {params.name}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def never_listened(ctx: Any, params: Any) -> Any:
    raise AssertionError("the ASGI layer refuses subscriptions/listen before it gets here")


server: Server[Any] = Server(  # with a listen handler it announces tools.listChanged
    "era-test", on_list_tools=list_tools, on_call_tool=call_tool,
    on_subscriptions_listen=never_listened if DISCOVER == "nolisten" else None)
probes = {"discover": 0}


def error(ident: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": ident, "error": err}


async def narrow(scope: dict[str, Any], body: bytes, send: Any) -> bool:
    """Record the request; answer it here when this server's era or ``DISCOVER`` says so."""
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    try:
        msg = json.loads(body) if body else None
    except ValueError:
        msg = None
    record(RECORD, {"http": scope["method"], "body": msg,
                    "headers": {k: v for k, v in headers.items() if k.startswith("mcp")}})
    method = msg.get("method") if isinstance(msg, dict) else None
    ident = msg.get("id") if isinstance(msg, dict) else None
    version = headers.get("mcp-protocol-version")
    if ERA == "2025" and (method == "server/discover" or (
            version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS)):
        return await answer(send, 400, error(
            ident, -32000, f"Bad Request: Unsupported protocol version: {version}"))
    if ERA == "2026":
        if method == "initialize":
            return await answer(send, 200, error(ident, -32601,
                                                 "Method not found: initialize"))
        if version not in MODERN_PROTOCOL_VERSIONS:
            return await answer(send, 400, error(ident, -32600,
                                                 "Missing MCP-Protocol-Version header"))
        if method == "subscriptions/listen" and DISCOVER == "nolisten":
            return await answer(send, 200, error(ident, -32601, "Method not found"))
        if method == "server/discover" and DISCOVER in ("garbage", "foreign", "disjoint",
                                                        "retry"):
            probes["discover"] += 1
            if DISCOVER == "garbage":
                return await answer(send, 200, {"jsonrpc": "2.0", "id": ident, "result": {
                    "supportedVersions": "all of them", "capabilities": 7}})
            if DISCOVER == "foreign":
                return await answer(send, 200, {"jsonrpc": "2.0", "id": ident, "result": {
                    "supportedVersions": ["2099-01-01"], "capabilities": {},
                    "resultType": "complete"}})
            if DISCOVER == "disjoint" or probes["discover"] == 1:
                supported = ["2099-01-01"] if DISCOVER == "disjoint" else list(
                    MODERN_PROTOCOL_VERSIONS)
                return await answer(send, 200, error(
                    ident, -32022, "Unsupported protocol version",
                    {"supported": supported, "requested": version}))
        params = msg.get("params") if isinstance(msg, dict) else None
        if method == "tools/call" and isinstance(params, dict) and params.get(
                "name") == "untyped":
            return await answer(send, 200, {"jsonrpc": "2.0", "id": ident, "result": {
                "content": [{"type": "text", "text": "no resultType"}]}})
    return False


def main() -> None:
    app = server.streamable_http_app(json_response=True)
    serve(intercepting(app, narrow))


if __name__ == "__main__":
    main()
