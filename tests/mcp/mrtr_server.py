"""A 2026-07-28 MCP server whose tools ask for input the 2026 way: an ``InputRequiredResult``
(SEP-2322), then, on the retry, an answer saying what it got. For the tests of tether's answers
(tests/test_mcp_input_required.py). Streamable HTTP on 127.0.0.1, stateless, JSON responses.

Run: ``python mrtr_server.py RECORD``; prints ``serving at http://127.0.0.1:PORT/mcp`` to stderr
once it listens, and records every request's JSON body as a line in RECORD.

Tools (each answers the retry with ``{"responses": ..., "state": ...}`` as JSON text, what it
received, unless said otherwise):

- ``ask``: a form (``name``, ``age``), state ``STATE`` (quotes, a backslash, non-ASCII);
  ``ask_nostate``: the same form with no requestState.
- ``sample(prompt, max_tokens=100, repeat=1)``: a sampling request (the prompt repeated);
  ``roots``: a roots/list request.
- ``several``: a form, a sampling request and a second form, at once.
- ``rounds(n)``: n rounds of a form, the requestState ``round-1`` … ``round-n``, changing each
  round; the answer lists what each round got back (in the state it carries).
- ``still``: a requestState with no requests first ("still working"), then answers.
- ``forever``: asks again at every retry.
- ``password``: a form asking for a ``password``; ``huge``: a sampling prompt of 200,000
  characters; ``big_state``: a requestState of 1 MB; ``crowd``: 100 forms at once.
- ``unknown_method``, ``bad_params``, ``state_number``: answered by the ASGI layer with an
  ``input_required`` result whose request names ``tools/list``, whose form has no message, or
  whose requestState is a number.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from wire_server import answer, intercepting, record, serve

RECORD = sys.argv[1]
STATE = 'opaque "state" \\ é ✓ {"n": 1}'
FORM = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}
NAMES = ["ask", "ask_nostate", "sample", "roots", "several", "rounds", "still", "forever",
         "password", "huge", "big_state", "crowd", "unknown_method", "bad_params", "state_number"]
TOOLS = [types.Tool(name=n, description=f"The {n} tool.", input_schema={"type": "object"})
         for n in NAMES]


def form(message: str, schema: dict[str, Any] | None = None) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(
        message=message, requested_schema=schema or FORM))


def sampling(prompt: str, max_tokens: int = 100) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(
            type="text", text=prompt))], max_tokens=max_tokens))


def ask(requests: dict[str, Any], state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=requests, request_state=state)


def got(params: types.CallToolRequestParams, **more: Any) -> types.CallToolResult:
    responses = {k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
                 for k, v in (params.input_responses or {}).items()}
    text = json.dumps({"responses": responses, "state": params.request_state, **more})
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
    name, arguments = params.name, params.arguments or {}
    first = params.input_responses is None and params.request_state is None
    if name == "rounds":
        n = int(arguments.get("n", 2))
        done = 0 if params.request_state is None else int(params.request_state.split("-")[1])
        if done < n:
            return ask({f"q{done + 1}": form(f"Round {done + 1}?")}, f"round-{done + 1}")
        return got(params)
    if name == "forever":
        return ask({"again": form("Again?")}, "forever")
    if name == "still":
        if params.request_state is None:
            return ask({}, "working")
        return got(params)
    if not first:
        return got(params)
    if name == "ask":
        return ask({"who": form("Who are you?")}, STATE)
    if name == "ask_nostate":
        return ask({"who": form("Who are you?")})
    if name == "sample":
        return ask({"s": sampling(str(arguments.get("prompt", "hi")) * int(arguments.get(
            "repeat", 1)),
                                  int(arguments.get("max_tokens", 100)))}, "sampled")
    if name == "roots":
        return ask({"r": types.ListRootsRequest()}, "roots")
    if name == "several":
        return ask({"a": form("First?"), "s": sampling("Summarise: tether"),
                    "b": form("Second?", {"type": "object",
                                          "properties": {"ok": {"type": "boolean"}}})}, "several")
    if name == "password":
        return ask({"p": form("Log in", {"type": "object", "properties": {
            "user": {"type": "string"}, "password": {"type": "string"}}})}, "pw")
    if name == "huge":
        return ask({"s": sampling("x" * 200_000)}, "huge")
    if name == "big_state":
        return ask({"who": form("Who?")}, "s" * 1_000_000)
    if name == "crowd":
        return ask({f"q{i}": form(f"Question {i}?") for i in range(100)}, "crowd")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"no {name}")])


server: Server[Any] = Server("mrtr-test", on_list_tools=list_tools, on_call_tool=call_tool)
MALFORMED = {
    "unknown_method": {"inputRequests": {"x": {"method": "tools/list", "params": {}}}},
    "bad_params": {"inputRequests": {"x": {"method": "elicitation/create",
                                           "params": {"requestedSchema": FORM}}}},
    "state_number": {"inputRequests": {"x": {"method": "elicitation/create", "params": {
        "message": "Who?", "requestedSchema": FORM}}}, "requestState": 7},
}


async def answer_malformed(scope: dict[str, Any], body: bytes, send: Any) -> bool:
    """Record the request; answer a call of a ``MALFORMED`` tool here (the SDK would not)."""
    try:
        msg = json.loads(body) if body else None
    except ValueError:
        msg = None
    record(RECORD, msg)
    params = msg.get("params") if isinstance(msg, dict) else None
    if isinstance(params, dict) and msg.get("method") == "tools/call" and params.get(
            "name") in MALFORMED:
        return await answer(send, 200, {"jsonrpc": "2.0", "id": msg.get("id"), "result": {
            "resultType": "input_required", **MALFORMED[params["name"]]}})
    return False


def main() -> None:
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    serve(intercepting(app, answer_malformed))


if __name__ == "__main__":
    main()
