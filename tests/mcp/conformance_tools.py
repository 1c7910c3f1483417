"""The tools the MCP conformance suite's server scenarios call, as tether tools.

``tether mcp serve tests/mcp/conformance_tools.py:tools --policy
tests/mcp/conformance/allow.yaml --transport http --port 0`` serves them, each call through the
chokepoint (tests/test_mcp_conformance_server.py runs the suite against it). Names, arguments
and answers follow the suite's reference server (``examples/servers/typescript/
everything-server.ts`` of @modelcontextprotocol/conformance 0.1.13). Rich results are
``tether.tools.content.Content``; logs, progress, sampling and elicitation go through the
tool's ``caller`` (``tether.tools.caller``). ``conformance_upstream.py`` serves the same tools on
the bare SDK, for the proxy.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.tools import ToolContext, ToolMeta, tool
from tether.tools.caller import Caller, CallerCannot, InputNeeded
from tether.tools.content import Audio, Content, Image, Resource
from tether.types import ToolSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance_data import (
    DEFAULTS_SCHEMA,
    ELICITATION_SCHEMA,
    EMBEDDED,
    ENUMS_SCHEMA,
    ERROR_TEXT,
    IRR_ASKS,
    LOG_LINES,
    MIXED,
    PNG,
    SCHEMA_2020_12,
    SIMPLE_TEXT,
    WAV,
)


@tool
def test_simple_text() -> str:
    """Tests simple text content response."""
    return SIMPLE_TEXT


@tool
def test_image_content() -> Content:
    """Tests image content response."""
    return Content(Image(base64.b64decode(PNG), "image/png"))


@tool
def test_audio_content() -> Content:
    """Tests audio content response."""
    return Content(Audio(base64.b64decode(WAV), "audio/wav"))


@tool
def test_embedded_resource() -> Content:
    """Tests embedded resource content response."""
    uri, mime, text = EMBEDDED
    return Content(Resource(uri, mime, text=text))


@tool
def test_multiple_content_types() -> Content:
    """Tests response with multiple content types (text, image, resource)."""
    uri, mime, text = MIXED
    return Content("Multiple content types test:", Image(base64.b64decode(PNG), "image/png"),
                   Resource(uri, mime, text=text))


@tool
async def test_tool_with_logging(caller: Caller) -> str:
    """Tests tool that emits log messages during execution."""
    for i, line in enumerate(LOG_LINES):
        if i:
            await asyncio.sleep(0.05)
        await caller.log("info", line)
    return "Tool with logging executed successfully"


@tool
async def test_tool_with_progress(caller: Caller) -> str:
    """Tests tool that reports progress notifications."""
    for i, step in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        await caller.progress(step, 100, f"Completed step {step} of 100")
    return "Progress test completed"


@tool
def test_error_handling() -> str:
    """Tests error response handling."""
    raise RuntimeError(ERROR_TEXT)


@tool
async def test_sampling(prompt: str, caller: Caller) -> str:
    """Tests server-initiated sampling (LLM completion request)."""
    answer = await caller.sample(prompt, max_tokens=100)
    return f"LLM response: {answer}"


@tool
async def test_missing_capability(caller: Caller) -> str:
    """Tests that a call needing a client capability the request did not declare is refused
    (it asks the client's model: sampling)."""
    answer = await caller.sample("Say hello", max_tokens=20)
    return f"LLM response: {answer}"


@tool
async def test_elicitation(message: str, caller: Caller) -> str:
    """Tests server-initiated elicitation (user input request)."""
    answer = await caller.elicit(message, ELICITATION_SCHEMA)
    return f"User response: action={answer.action}, content={json.dumps(dict(answer.content))}"


@tool
async def test_elicitation_sep1034_defaults(caller: Caller) -> str:
    """Tests elicitation with default values per SEP-1034."""
    answer = await caller.elicit("Please review and update the form fields with defaults",
                                 DEFAULTS_SCHEMA)
    return (f"Elicitation completed: action={answer.action}, "
            f"content={json.dumps(dict(answer.content))}")


@tool
async def test_elicitation_sep1330_enums(caller: Caller) -> str:
    """Tests elicitation with enum schema improvements per SEP-1330."""
    answer = await caller.elicit("Please select options from the enum fields", ENUMS_SCHEMA)
    return (f"Elicitation completed: action={answer.action}, "
            f"content={json.dumps(dict(answer.content))}")


class SchemaTool:
    """A tool whose input schema is given as it is (JSON Schema 2020-12, with ``$defs``)."""

    name = "json_schema_2020_12_tool"
    meta = ToolMeta()
    spec = ToolSpec(name, "Tool with JSON Schema 2020-12 features", SCHEMA_2020_12)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return f"JSON Schema 2020-12 tool called with: {json.dumps(arguments)}"


# -- SEP-2322: a 2026-07-28 client answers these asks by InputRequiredResult rounds ----------

async def _ask(caller: Caller, ask: tuple[str, str, Any]) -> str:
    """One of ``IRR_ASKS``' asks, made of ``caller``; the answer as text."""
    method, key, what = ask
    if method == "elicitation/create":
        message, schema = what
        answer = await caller.elicit(message, schema, key=key)
        return f"{answer.action} {json.dumps(dict(answer.content), sort_keys=True)}"
    return await caller.sample(what, max_tokens=100, key=key)


async def _asks(name: str, caller: Caller) -> list[str]:
    return [await _ask(caller, ask) for ask in IRR_ASKS[name]]


@tool
async def test_input_required_result_elicitation(caller: Caller) -> str:
    """SEP-2322: asks the user's name (key user_name)."""
    _, key, (message, schema) = IRR_ASKS["test_input_required_result_elicitation"][0]
    answer = await caller.elicit(message, schema, key=key)
    if answer.action != "accept":
        return f"No name given: {answer.action}"
    return f"Hello, {answer.content['name']}!"


@tool
async def test_input_required_result_sampling(caller: Caller) -> str:
    """SEP-2322: asks the client's model (key capital_question)."""
    return (await _asks("test_input_required_result_sampling", caller))[0]


@tool
async def test_input_required_result_request_state(caller: Caller) -> str:
    """SEP-2322: asks a confirmation; the next round finds it in the requestState."""
    answers = await _asks("test_input_required_result_request_state", caller)
    return f"state-ok: {answers[0]}"


@tool
async def test_input_required_result_tampered_state(caller: Caller) -> str:
    """SEP-2322: asks a confirmation; a tampered requestState never reaches this tool."""
    return f"confirmed: {(await _asks('test_input_required_result_tampered_state', caller))[0]}"


@tool
async def test_input_required_result_multiple_inputs(caller: Caller) -> str:
    """SEP-2322: asks the user and the model at once (one round carries both asks)."""
    asks = IRR_ASKS["test_input_required_result_multiple_inputs"]
    answers = await asyncio.gather(*(_ask(caller, a) for a in asks), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return "all answered: " + "; ".join(map(str, answers))


@tool
async def test_input_required_result_multi_round(caller: Caller) -> str:
    """SEP-2322: asks twice, one after the other (two rounds)."""
    return "done: " + "; ".join(await _asks("test_input_required_result_multi_round", caller))


@tool
async def test_input_required_result_capabilities(caller: Caller) -> str:
    """SEP-2322: asks only what the request's clientCapabilities declare (does without the
    rest)."""
    answers = []
    for ask in IRR_ASKS["test_input_required_result_capabilities"]:
        try:
            answers.append(await _ask(caller, ask))
        except InputNeeded:
            raise
        except CallerCannot:
            answers.append(f"{ask[0]} not declared")
    return "; ".join(answers)


tools = [test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
         test_multiple_content_types, test_tool_with_logging, test_tool_with_progress,
         test_error_handling, test_sampling, test_missing_capability, test_elicitation,
         test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums, SchemaTool(),
         test_input_required_result_elicitation, test_input_required_result_sampling,
         test_input_required_result_request_state, test_input_required_result_tampered_state,
         test_input_required_result_multiple_inputs, test_input_required_result_multi_round,
         test_input_required_result_capabilities]
