"""tether messages ⇄ Anthropic Messages, both ways, in the API's native shapes.

Decision: conversion is pure and separate from transport. Outgoing: system messages become the
top-level ``system`` string; an assistant turn is ``text`` and ``tool_use`` blocks (``input`` is an
object); results are ``tool_result`` blocks (``tool_use_id``) in a *user* message, and the results
of one turn — with any user text that follows them — go into ONE user message, results first,
in order, as the API requires; tools are declared with ``input_schema``. Empty text blocks are
left out (the API rejects them), and an assistant turn with nothing in it is skipped.
The API refuses a request whose history holds ``tool_use`` blocks but which declares no tools,
and tether's wrap-up turn after a budget stop is exactly that: such a request declares the tools
its history used, with an empty schema, and ``tool_choice: none``, so none can be called.
Incoming: text and tool_use blocks are both kept; tool input that is not an object (possible in a
stream, whose JSON arrives in fragments) is kept as raw text for the executor's malformed-JSON
gate, never guessed at. An output schema is declared as one more tool, ``final_output``, which
the model is made to call (a forced tool); its call comes back as the answer's text.

Usage mapping: Anthropic's ``input_tokens`` counts only the uncached part of the prompt, so
``Usage.input_tokens = input_tokens + cache_read_input_tokens + cache_creation_input_tokens``
(all input, as OpenAI reports it), ``Usage.cached_input_tokens = cache_read_input_tokens``
(the part billed at the cache-read price) and ``Usage.cache_write_tokens =
cache_creation_input_tokens`` (the part billed at the cache-write price, 1.25x input).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument
from tether.models.base import CHARS_PER_TOKEN
from tether.types import FinishReason, Message, ModelResponse, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from anthropic.types import Message as AnthropicMessage
    from anthropic.types import RawMessageStreamEvent

STOP: dict[str, FinishReason] = {
    "end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
    "tool_use": "tool_calls", "max_tokens": "length", "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def to_native(messages: Iterable[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(top-level system prompt or None, MessageParam dicts) for a tether conversation."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            if m.content:
                system.append(m.content)
            continue
        role, blocks = ("assistant", _assistant_blocks(m)) if m.role == "assistant" else (
            "user", _user_blocks(m))
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for message in out:  # tool results lead their user message
        if message["role"] == "user":
            message["content"].sort(key=lambda b: b["type"] != "tool_result")
    return ("\n\n".join(system) if system else None), out


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
    for call in m.tool_calls:
        args = call.arguments
        # raw (malformed) argument text cannot be an object; its tool result already shows it
        payload = dict(args) if not isinstance(args, str) else {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": payload})
    return blocks


def _user_blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        if m.tool_call_id is None:
            raise InvalidArgument("a tool message needs the tool_call_id of the call it answers")
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
        if m.content:
            block["content"] = m.content
        return [block]
    return [{"type": "text", "text": m.content}] if m.content else []


def to_tools(specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """ToolParam dicts: name, description and the full JSON schema as ``input_schema``."""
    return [{"name": s.name, "description": s.description, "input_schema": dict(s.parameters)}
            for s in specs]


def placeholder_tools(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Declarations for the tools a tools-less request's history used (see the module doc)."""
    names = dict.fromkeys(b["name"] for m in messages if m["role"] == "assistant"
                          for b in m["content"] if b["type"] == "tool_use")
    return [{"name": n, "description": "Not available in this turn.",
             "input_schema": {"type": "object"}} for n in names]


# the tool an output schema is declared as: the model answers by calling it (a forced tool)
OUTPUT_TOOL = "final_output"


def output_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The declaration of the output tool for ``schema`` (named by its title)."""
    name = schema.get("title") or "output"
    return {"name": OUTPUT_TOOL, "description": f"Give your final answer ({name}) by calling "
            "this tool with it; do not answer in plain text.", "input_schema": dict(schema)}


def answer_of_output_tool(response: ModelResponse) -> ModelResponse:
    """A response whose output-tool call becomes its answer: the call's input as JSON text
    (raw input text as it came), the other calls kept — the runtime sees the answer as text,
    whatever the provider's mechanism, and no call of a tool that does not exist is run."""
    output = [c for c in response.tool_calls if c.name == OUTPUT_TOOL]
    if not output:
        return response
    args = output[-1].arguments
    text = args if isinstance(args, str) else json.dumps(dict(args), ensure_ascii=False)
    rest = tuple(c for c in response.tool_calls if c.name != OUTPUT_TOOL)
    finish: FinishReason = "tool_calls" if rest else (
        "stop" if response.finish_reason == "tool_calls" else response.finish_reason)
    return ModelResponse(text, rest, response.usage, response.model, finish)


def finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    if has_calls and raw in (None, "end_turn"):
        return "tool_calls"
    return STOP.get(raw or "end_turn", "stop")


def tool_call(id: str, name: str, value: object) -> ToolCall:
    """A ToolCall from a tool_use block's input: an object as is, anything else as raw text."""
    if isinstance(value, Mapping):
        return ToolCall(id, name, dict(value))
    if isinstance(value, str):
        return ToolCall.from_json(id, name, value)
    return ToolCall(id, name, json.dumps(value))


def usage_of(input_tokens: int, output_tokens: int, cache_read: int | None,
             cache_creation: int | None) -> Usage:
    read, write = cache_read or 0, cache_creation or 0
    return Usage(input_tokens + read + write, output_tokens, read, write)


def from_message(message: AnthropicMessage) -> ModelResponse:
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            calls.append(tool_call(block.id, block.name, block.input))
    u = message.usage
    usage = usage_of(u.input_tokens, u.output_tokens, u.cache_read_input_tokens,
                     u.cache_creation_input_tokens)
    return ModelResponse("".join(text), tuple(calls), usage, str(message.model),
                         finish_reason(message.stop_reason, bool(calls)))


@dataclass(slots=True)
class _Block:
    type: str
    id: str = ""
    name: str = ""
    start_input: object = None
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamAssembler:
    """Folds raw stream events into a ModelResponse. Usage on ``message_delta`` is cumulative,
    so it replaces what ``message_start`` said; a field it omits keeps the earlier value."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    model: str = ""
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int | None = None
    cache_creation: int | None = None
    done: bool = False
    chars: int = 0  # output characters so far (text and tool input fragments)

    def feed(self, event: RawMessageStreamEvent) -> str:
        """Take one event; return its text delta ("" if none)."""
        if event.type == "message_start":
            msg = event.message
            self.model = str(msg.model)
            u = msg.usage
            self.input_tokens, self.output_tokens = u.input_tokens, u.output_tokens
            self.cache_read, self.cache_creation = (u.cache_read_input_tokens,
                                                    u.cache_creation_input_tokens)
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.blocks[event.index] = _Block("tool_use", block.id, block.name, block.input)
            else:
                self.blocks[event.index] = _Block(block.type)
        elif event.type == "content_block_delta":
            target = self.blocks.get(event.index)
            delta = event.delta
            if target is not None and delta.type == "text_delta":
                target.parts.append(delta.text)
                self.chars += len(delta.text)
                return delta.text
            if target is not None and delta.type == "input_json_delta":
                target.parts.append(delta.partial_json)
                self.chars += len(delta.partial_json)
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            delta_usage = event.usage
            self.output_tokens = delta_usage.output_tokens
            if delta_usage.input_tokens is not None:
                self.input_tokens = delta_usage.input_tokens
            if delta_usage.cache_read_input_tokens is not None:
                self.cache_read = delta_usage.cache_read_input_tokens
            if delta_usage.cache_creation_input_tokens is not None:
                self.cache_creation = delta_usage.cache_creation_input_tokens
        elif event.type == "message_stop":
            self.done = True
        return ""

    def cut(self) -> None:
        """Stop here: the server went past ``max_tokens``; the output it sent is charged at
        least at the estimate of what arrived."""
        self.stop_reason, self.done = "max_tokens", True
        self.output_tokens = max(self.output_tokens, -(-self.chars // CHARS_PER_TOKEN))

    def response(self) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        for _, block in sorted(self.blocks.items()):
            if block.type == "text":
                text.append("".join(block.parts))
            elif block.type == "tool_use":
                raw = "".join(block.parts)
                calls.append(tool_call(block.id, block.name, raw) if raw
                             else tool_call(block.id, block.name, block.start_input or {}))
        usage = usage_of(self.input_tokens, self.output_tokens, self.cache_read,
                         self.cache_creation)
        return ModelResponse("".join(text), tuple(calls), usage, self.model,
                             finish_reason(self.stop_reason, bool(calls)))
