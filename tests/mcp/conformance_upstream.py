"""The conformance suite's tools on the bare MCP SDK (low-level ``Server``), over stdio: the
upstream ``tether mcp proxy`` governs in tests/test_mcp_conformance_server.py, so the suite
checks that what the upstream sends reaches the proxy's clients intact.

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


async def ask(ctx: Any, method: str, what: Any) -> str:
    """One of ``spec.IRR_ASKS``' asks on the back-channel (the proxy relays it to its client:
    a 2026-07-28 client answers it by InputRequiredResult rounds, this tool running again each
    round); its answer as text. The SDK raises when the ask is refused."""
    if method == "elicitation/create":
        message, schema = what
        answer = await ctx.session.elicit_form(message, schema,
                                               related_request_id=ctx.request_id)
        return f"{answer.action} {json.dumps(answer.content or {}, sort_keys=True)}"
    sampled = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=text(what))], max_tokens=100,
        related_request_id=ctx.request_id)
    return str(getattr(sampled.content, "text", sampled.content))


async def input_required(ctx: Any, name: str) -> list[Any]:
    """The SEP-2322 tools, asking in turn (a refused elicitation is declined by the proxy, so
    the capabilities tool simply reads the decline)."""
    answers = [await ask(ctx, method, what) for method, _, what in spec.IRR_ASKS[name]]
    if name == "test_input_required_result_elicitation":
        action, content = answers[0].split(" ", 1)
        said = json.loads(content).get("name")
        return [text(f"Hello, {said}!" if action == "accept" else f"No name given: {action}")]
    prefix = {"test_input_required_result_request_state": "state-ok: ",
              "test_input_required_result_tampered_state": "confirmed: ",
              "test_input_required_result_multi_round": "done: ",
              "test_input_required_result_multiple_inputs": "all answered: "}.get(name, "")
    return [text(prefix + "; ".join(answers))]


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, args = params.name, params.arguments or {}
    content: list[Any]
    if name in spec.IRR_ASKS:
        content = await input_required(ctx, name)
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
        answer = await ctx.session.create_message(
            [types.SamplingMessage(role="user",
                                   content=text(str(args.get("prompt", "Say hello"))))],
            max_tokens=100, related_request_id=ctx.request_id)
        content = [text(f"LLM response: {getattr(answer.content, 'text', answer.content)}")]
    elif name.startswith("test_elicitation"):
        schema = {"test_elicitation": spec.ELICITATION_SCHEMA,
                  "test_elicitation_sep1034_defaults": spec.DEFAULTS_SCHEMA,
                  "test_elicitation_sep1330_enums": spec.ENUMS_SCHEMA}[name]
        answer = await ctx.session.elicit_form(str(args.get("message", "Please answer")),
                                               schema, related_request_id=ctx.request_id)
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
