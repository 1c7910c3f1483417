"""The conformance suite's tools on the bare MCP SDK (low-level ``Server``), over stdio: the
upstream ``tether mcp proxy`` governs in tests/test_mcp_conformance_server.py, so the suite
checks that what the upstream sends reaches the proxy's clients intact.

It speaks both protocol eras, as the SDK does: a tool that asks its client (sampling,
elicitation) asks on the handshake's back-channel when the request is 2025's, and by
``InputRequiredResult`` rounds (SEP-2322) when it is 2026-07-28's — one ask a round, in order,
the answers so far carried in its ``requestState`` (plain JSON: this is a test upstream, whose
state only the proxy sees). So the proxy meets either era upstream (``--upstream-protocol``).

Run: ``python tests/mcp/conformance_upstream.py`` (stdio). The names, schemas and answers are
those of ``conformance_data.py`` (``conformance_tools.py`` has the same tools as tether
tools).
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import conformance_data as spec

warnings.simplefilter("ignore")  # the SDK's deprecation warnings for logging and sampling
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
level = {"min": "info"}
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


def _schema(name: str) -> dict[str, Any]:
    if name == "json_schema_2020_12_tool":
        return spec.SCHEMA_2020_12
    if name in ("test_sampling", "test_elicitation"):
        arg = "prompt" if name == "test_sampling" else "message"
        return {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}
    return EMPTY


#: the suite's 2026-07-28 diagnostic tool (server-stateless): it asks for sampling, which the
#: proxy relays to its client; a client whose request did not declare sampling gets -32021
MISSING_CAPABILITY = ("test_missing_capability", "Tests that a call needing a client capability "
                      "the request did not declare is refused (it asks for sampling).")
TOOLS = [types.Tool(name=name, description=description, input_schema=_schema(name))
         for name, description in [*spec.DESCRIPTIONS.items(), MISSING_CAPABILITY,
                                   *spec.IRR_DESCRIPTIONS.items()]]


def text(value: str) -> types.TextContent:
    return types.TextContent(text=value)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


Ask = tuple[str, str, Any]  # (method, key, what): a form's (message, schema), or a prompt


class Asking(Exception):
    """A 2026-07-28 round's ask: the call is answered ``InputRequiredResult`` instead."""

    def __init__(self, result: types.InputRequiredResult) -> None:
        super().__init__("input required")
        self.result = result


def sampling(prompt: str) -> list[types.SamplingMessage]:
    return [types.SamplingMessage(role="user", content=text(prompt))]


async def ask_all(ctx: Any, params: types.CallToolRequestParams, asks: list[Ask]) -> list[Any]:
    """The answers to ``asks`` (``ElicitResult`` / ``CreateMessageResult``), asked in turn: on
    the back-channel (2025; the SDK raises when an ask is refused), or in rounds (2026-07-28:
    Asking carries the next unanswered one, with the answers so far in its state)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        answers: list[Any] = []
        for method, _, what in asks:
            if method == "elicitation/create":
                answers.append(await ctx.session.elicit_form(
                    what[0], what[1], related_request_id=ctx.request_id))
            else:
                answers.append(await ctx.session.create_message(
                    sampling(what), max_tokens=100, related_request_id=ctx.request_id))
        return answers
    known = json.loads(params.request_state) if params.request_state else {}
    known.update({k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
                  for k, v in (params.input_responses or {}).items()})
    for method, key, what in asks:
        if key in known:
            continue
        request: types.InputRequest = (
            types.ElicitRequest(params=types.ElicitRequestFormParams(
                message=what[0], requested_schema=what[1]))
            if method == "elicitation/create" else types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=sampling(what),
                                                        max_tokens=100)))
        raise Asking(types.InputRequiredResult(input_requests={key: request},
                                               request_state=json.dumps(known)))
    return [(types.ElicitResult if method == "elicitation/create"
             else types.CreateMessageResult).model_validate(known[key])
            for method, key, _ in asks]


def said(answer: Any) -> str:
    """An answer as the tools show it: ``action {content}``, or the sampled text."""
    if isinstance(answer, types.ElicitResult):
        return f"{answer.action} {json.dumps(answer.content or {}, sort_keys=True)}"
    return str(getattr(answer.content, "text", answer.content))


async def input_required(ctx: Any, params: types.CallToolRequestParams) -> list[Any]:
    """The SEP-2322 tools, asking in turn (a refused elicitation is declined by the proxy, so
    the capabilities tool simply reads the decline)."""
    name = params.name
    answers = [said(a) for a in await ask_all(ctx, params, spec.IRR_ASKS[name])]
    if name == "test_input_required_result_elicitation":
        action, content = answers[0].split(" ", 1)
        name = json.loads(content).get("name")
        return [text(f"Hello, {name}!" if action == "accept" else f"No name given: {action}")]
    prefix = {"test_input_required_result_request_state": "state-ok: ",
              "test_input_required_result_tampered_state": "confirmed: ",
              "test_input_required_result_multi_round": "done: ",
              "test_input_required_result_multiple_inputs": "all answered: "}.get(name, "")
    return [text(prefix + "; ".join(answers))]


async def call_tool(ctx: Any, params: types.CallToolRequestParams
                    ) -> types.CallToolResult | types.InputRequiredResult:
    try:
        return await answer_call(ctx, params)
    except Asking as asking:
        return asking.result


async def answer_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, args = params.name, params.arguments or {}
    content: list[Any]
    if name in spec.IRR_ASKS:
        content = await input_required(ctx, params)
    elif name == "test_simple_text":
        content = [text(spec.SIMPLE_TEXT)]
    elif name == "test_image_content":
        content = [types.ImageContent(data=spec.PNG, mime_type="image/png")]
    elif name == "test_audio_content":
        content = [types.AudioContent(data=spec.WAV, mime_type="audio/wav")]
    elif name in ("test_embedded_resource", "test_multiple_content_types"):
        uri, mime, body = spec.EMBEDDED if name == "test_embedded_resource" else spec.MIXED
        content = [types.EmbeddedResource(resource=types.TextResourceContents(
            uri=uri, mime_type=mime, text=body))]
        if name == "test_multiple_content_types":
            content = [text("Multiple content types test:"),
                       types.ImageContent(data=spec.PNG, mime_type="image/png"), *content]
    elif name == "test_tool_with_logging":
        for i, line in enumerate(spec.LOG_LINES):
            if i:
                await asyncio.sleep(0.05)
            if LEVELS.index("info") >= LEVELS.index(level["min"]):
                await ctx.session.send_log_message("info", line,
                                                   related_request_id=ctx.request_id)
        content = [text("Tool with logging executed successfully")]
    elif name == "test_tool_with_progress":
        for i, step in enumerate((0, 50, 100)):
            if i:
                await asyncio.sleep(0.05)
            await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        content = [text("Progress test completed")]
    elif name == "test_error_handling":
        return types.CallToolResult(content=[text(spec.ERROR_TEXT)], is_error=True)
    elif name in ("test_sampling", MISSING_CAPABILITY[0]):
        [answer] = await ask_all(ctx, params, [("sampling/createMessage", "sampling",
                                                str(args.get("prompt", "Say hello")))])
        content = [text(f"LLM response: {said(answer)}")]
    elif name.startswith("test_elicitation"):
        schema = {"test_elicitation": spec.ELICITATION_SCHEMA,
                  "test_elicitation_sep1034_defaults": spec.DEFAULTS_SCHEMA,
                  "test_elicitation_sep1330_enums": spec.ENUMS_SCHEMA}[name]
        [answer] = await ask_all(ctx, params, [("elicitation/create", "elicitation", (
            str(args.get("message", "Please answer")), schema))])
        content = [text(f"Elicitation completed: action={answer.action}, "
                        f"content={json.dumps(answer.content or {})}")]
    else:
        content = [text(f"JSON Schema 2020-12 tool called with: {json.dumps(args)}")]
    return types.CallToolResult(content=content)


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    level["min"] = params.level
    return types.EmptyResult()


async def main() -> None:
    server = Server("conformance-upstream", version="0", on_list_tools=list_tools,
                    on_call_tool=call_tool, on_set_logging_level=set_level)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
