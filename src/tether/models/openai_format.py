"""tether messages ⇄ OpenAI Chat Completions, both ways, in the API's native shapes.

Decision: conversion is pure and separate from transport, so it can be read against the API
reference line by line and tested without a client. Outgoing: the system prompt stays a
``system`` message in place; an assistant turn carries ``tool_calls`` (``type: function``, name,
arguments as a JSON *string*, ``content: ""`` when it said nothing — llama.cpp's server refuses
``null`` there, and OpenAI, vLLM and Ollama accept ``""``); each result is a ``tool``
message with the ``tool_call_id`` of its call; tools are ``function`` declarations with their full
JSON-schema ``parameters``. Incoming: text and tool calls of one choice are both kept; argument
text is parsed with ``ToolCall.from_json``, so malformed JSON reaches the executor's gate as the
raw string, never guessed at; usage maps ``prompt_tokens`` (which includes cached tokens) to
``input_tokens`` and ``prompt_tokens_details.cached_tokens`` to ``cached_input_tokens``. A server
that reports no usage is charged tether's own pessimistic estimate rather than nothing, and the
usage is marked ``estimated`` in the journal.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import BadData, InvalidArgument
from tether.models.base import estimate_text_tokens
from tether.types import FinishReason, Message, ModelResponse, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage

FINISH: dict[str, FinishReason] = {
    "stop": "stop", "tool_calls": "tool_calls", "function_call": "tool_calls",
    "length": "length", "content_filter": "content_filter",
}


def to_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """ChatCompletionMessageParam dicts for a tether conversation."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            out.append({"role": "assistant", "content": m.content,
                        "tool_calls": [_call(c) for c in m.tool_calls]})
        elif m.role == "tool":
            if m.tool_call_id is None:
                raise InvalidArgument("a tool message needs the tool_call_id of the call it "
                                      "answers")
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _call(call: ToolCall) -> dict[str, Any]:
    args = call.arguments
    text = args if isinstance(args, str) else json.dumps(dict(args), ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": text}}


def to_tools(specs: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """ChatCompletionFunctionToolParam dicts: name, description, full JSON-schema parameters."""
    return [{"type": "function", "function": {"name": s.name, "description": s.description,
                                              "parameters": dict(s.parameters)}}
            for s in specs]


def response_format(schema: Mapping[str, Any], form: str) -> dict[str, Any]:
    """The ``response_format`` for an output schema: OpenAI's ``json_schema`` named by the
    schema's title (strict when every object of the schema can be, see ``strict_schema``) or
    llama.cpp's ``json_object`` with the schema, which its server compiles to a grammar."""
    if form == "json_object":
        return {"type": "json_object", "schema": dict(schema)}
    strict = strict_schema(schema)
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or "output"))[:64]
    body: dict[str, Any] = {"name": name, "schema": strict if strict is not None
                            else dict(schema), "strict": strict is not None}
    return {"type": "json_schema", "json_schema": body}


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` as OpenAI's strict mode takes it — every object closed
    (``additionalProperties: false``) — or None when strict mode cannot take it: an object with
    an optional property (strict mode requires them all) or open to extra ones. The answer is
    validated by tether either way; strict only makes the provider enforce it too."""
    out = copy.deepcopy(dict(schema))

    def close(node: Any) -> bool:
        if isinstance(node, list):
            return all(close(n) for n in node)
        if not isinstance(node, dict):
            return True
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            if node.get("additionalProperties", False) is not False:
                return False
            if set(node.get("required", ())) != set(props):
                return False
            node["additionalProperties"] = False
        return all(close(v) for k, v in node.items()
                   if k not in ("required", "enum", "const", "default", "examples"))

    return out if close(out) else None


def finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    # some compatible servers report "stop" alongside tool calls; the calls are what matter
    if has_calls and raw in (None, "stop"):
        return "tool_calls"
    return FINISH.get(raw or "stop", "stop")


def usage_of(raw: CompletionUsage | None, fallback: Usage) -> Usage:
    """The provider's usage, field by field; a field it left out or sent as something other
    than a count is charged at tether's estimate (the call was billed either way)."""
    if raw is None:
        return fallback

    def count(value: object, estimate: int) -> Any:
        # left out: charged at the estimate; anything else as reported (the runtime refuses a
        # count that is negative or not whole: a model error charged at the reservation)
        return estimate if value is None else value

    prompt = count(getattr(raw, "prompt_tokens", None), fallback.input_tokens)
    completion = count(getattr(raw, "completion_tokens", None), fallback.output_tokens)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = count(getattr(details, "cached_tokens", None), 0) if details is not None else 0
    return Usage(prompt, completion, min(cached, prompt))


def estimated_usage(input_estimate: int, text: str, calls: Iterable[ToolCall]) -> Usage:
    """What to charge when a server reports no usage: tether's own estimate, erring high."""
    out = estimate_text_tokens(text) + sum(
        8 + estimate_text_tokens(c.name) + estimate_text_tokens(
            c.arguments if isinstance(c.arguments, str) else json.dumps(dict(c.arguments)))
        for c in calls)
    return Usage(input_estimate, out, 0, estimated=True)


def from_completion(completion: ChatCompletion, input_estimate: int) -> ModelResponse:
    """A ModelResponse from a non-streamed completion (its first choice)."""
    if not completion.choices:
        raise BadData("the completion has no choices")
    choice = completion.choices[0]
    message = choice.message
    calls: list[ToolCall] = []
    for raw in message.tool_calls or ():
        if raw.type == "function":
            calls.append(ToolCall.from_json(raw.id, raw.function.name, raw.function.arguments))
        else:  # a custom (free-text) tool call: tether declares none, so it cannot be run
            calls.append(ToolCall(raw.id, raw.custom.name, raw.custom.input))
    text = message.content or message.refusal or ""
    usage = usage_of(completion.usage, estimated_usage(input_estimate, text, calls))
    return ModelResponse(text, tuple(calls), usage, completion.model,
                         finish_reason(choice.finish_reason, bool(calls)))


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamAssembler:
    """Folds streamed chunks into a ModelResponse. Tool-call fragments are joined by their
    ``index``: the first fragment brings id and name, later ones only argument text."""

    input_estimate: int
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish: str | None = None
    model: str = ""
    usage: CompletionUsage | None = None
    chars: int = 0  # output characters so far (text and argument fragments)

    def feed(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; return its text delta ("" if none)."""
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        delta_text = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                delta_text += delta.content
            for frag in delta.tool_calls or ():
                partial = self.calls.setdefault(frag.index, _PartialCall())
                partial.id = partial.id or (frag.id or "")
                if frag.function is not None:
                    partial.name = partial.name or (frag.function.name or "")
                    if frag.function.arguments:
                        partial.arguments.append(frag.function.arguments)
                        self.chars += len(frag.function.arguments)
            if choice.finish_reason is not None:
                self.finish = choice.finish_reason
        if delta_text:
            self.text.append(delta_text)
            self.chars += len(delta_text)
        return delta_text

    def cut(self) -> None:
        """Stop here: the server went past the output cap (usage unknown: estimated)."""
        self.finish, self.usage = "length", None

    def response(self) -> ModelResponse:
        calls = tuple(ToolCall.from_json(p.id, p.name, "".join(p.arguments))
                      for _, p in sorted(self.calls.items()))
        text = "".join(self.text)
        usage = usage_of(self.usage, estimated_usage(self.input_estimate, text, calls))
        return ModelResponse(text, calls, usage, self.model,
                             finish_reason(self.finish, bool(calls)))
