"""Ground types: the plain, frozen data every layer above speaks.

Why a module of its own: messages, tool calls, usage and events cross every boundary in tether
(model adapters, the executor, the journal, strategies). Keeping them as small frozen, slotted
dataclasses with no behaviour beyond conversion means any layer may hold them without holding a
reference to anything live, and a journal of them can be folded back into a session.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tether.errors import InvalidArgument
from tether.records import fast_init

Role = Literal["system", "user", "assistant", "tool"]

JSONValue = Any  # a value json.dumps accepts; kept loose on purpose (tool args are model output)

_ATOMS = frozenset({str, int, bool, type(None)})


def detached(value: Any) -> Any:
    """A deep copy of ``value`` that shares nothing mutable with it: what a policy decided on
    stays what it decided on, whoever holds the original. Plain JSON values are copied quickly;
    anything else (a pydantic model a tool declared) with ``copy.deepcopy``. ValueError for a
    float JSON cannot carry (NaN, infinities): no such value is ever decided on or journaled."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: v if type(v) in _ATOMS else detached(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return kind(detached(v) for v in value)
    if kind is float:
        if not math.isfinite(value):
            raise InvalidArgument(f"{value} is not a finite number")
        return value
    return copy.deepcopy(value)


def _refuse_constant(name: str) -> Any:
    raise InvalidArgument(f"{name} is not JSON")


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for.

    Args:
        id: The call's id, unique in the session; its result answers this id.
        name: The tool's name.
        arguments: The parsed JSON object, or the raw text exactly as it arrived when it could
            not be parsed into an object; the executor's malformed-JSON gate turns the latter
            into a result the model can act on, so a tool never runs with guessed arguments.
    """

    id: str
    name: str
    arguments: Mapping[str, JSONValue] | str

    @classmethod
    def from_json(cls, id: str, name: str, text: str | None) -> ToolCall:
        """Parse provider-supplied argument text; keep the raw text if it is not a JSON object
        (anything that is not text at all is kept as its repr, so the gate shows it)."""
        if not isinstance(text, str):
            return cls(id, name, repr(text))
        try:  # NaN and Infinity (which Python's json accepts) are not JSON: kept as raw text
            parsed = json.loads(text, parse_constant=_refuse_constant) if text.strip() else {}
        except (ValueError, TypeError, RecursionError):
            return cls(id, name, text)
        return cls(id, name, parsed if isinstance(parsed, dict) else text)

    def to_dict(self) -> dict[str, JSONValue]:
        """As plain JSON data, as journaled."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


# the id prefix of a call a strategy ran from its own validated plan (``Handle.call_planned``),
# not one a model asked for: the assistant message carrying such calls is the strategy's turn
PLANNED_CALL_PREFIX = "planned_"
# the id prefix of a call a model asked for on an explored branch (``Handle.ask_branch``): never
# in the session's conversation, and never a model's own id on the session's turns
BRANCH_CALL_PREFIX = "branch_"


def is_planned_turn(message: Message) -> bool:
    """Whether an assistant message carries a strategy's planned calls (no model wrote it)."""
    return (message.role == "assistant" and bool(message.tool_calls) and not message.content
            and all(c.id.startswith(PLANNED_CALL_PREFIX) for c in message.tool_calls))


@fast_init
@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message. ``tool_calls`` only on assistant messages, ``tool_call_id`` only on
    tool messages (the result of exactly that call)."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        """An assistant message: the model's words and the calls it asked for."""
        return cls("assistant", content, tool_calls)

    @classmethod
    def tool(cls, call_id: str, name: str, content: str) -> Message:
        """A tool message: the result of the call ``call_id`` to the tool ``name``."""
        return cls("tool", content, (), call_id, name)

    def to_dict(self) -> dict[str, JSONValue]:
        """As plain JSON data, as journaled."""
        out: dict[str, JSONValue] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """The message ``to_dict`` wrote."""
        calls = tuple(
            ToolCall(c["id"], c["name"], c["arguments"]) for c in data.get("tool_calls", ())
        )
        return cls(data["role"], data.get("content", ""), calls, data.get("tool_call_id"),
                   data.get("name"))


@fast_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call consumed. ``cached_input_tokens`` is the part of ``input_tokens`` served
    from the provider's prompt cache (billed at the cache-read price), ``cache_write_tokens``
    the part written to it (billed at the cache-write price, e.g. 1.25x input at Anthropic).
    ``estimated``: the provider reported none of it (a stream without a usage chunk) and these
    are tether's own counts, erring high."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        """Input and output tokens, together."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, int]:
        """As plain JSON data, as journaled."""
        out: dict[str, int] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
        }
        if self.cache_write_tokens:
            out["cache_write_tokens"] = self.cache_write_tokens
        if self.estimated:
            out["estimated"] = True
        return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is shown of a tool: name, description, JSON schema of its parameters."""

    name: str
    description: str
    parameters: Mapping[str, JSONValue]


@fast_init
@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything a model call is sent. ``max_output_tokens`` is already clamped to the budget;
    ``input_tokens_estimate`` is the runtime's own count of the input (the scripted model bills
    it, as a provider would bill its tokenizer's count). ``tool_choice``, sent only with tools:
    None (the provider's default), ``"auto"``, ``"required"`` (some tool), ``"none"``, or the
    name of the one tool the model must call. ``messages``, oldest first, is a tuple or, in a
    session's turns, an immutable snapshot of its conversation taken in constant time (so a
    step costs the same at 10,000 messages as at 10), which compares, hashes, adds and slices as
    a tuple would."""

    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    input_tokens_estimate: int | None = None
    tool_choice: str | None = None
    # the call's span as a W3C traceparent (tether.tracing), sent as the HTTP header of that
    # name by the providers that speak HTTP; "" when the recipe has no telemetry
    traceparent: str = ""

    @property
    def output_schema(self) -> Mapping[str, JSONValue] | None:
        """The JSON schema the answer must validate against: None here (a StructuredRequest
        has one), so a run without an output type builds no field more per step."""
        return None


@fast_init
@dataclass(frozen=True, slots=True)
class StructuredRequest(ModelRequest):
    """A ModelRequest of a run whose agent has an output type (runtime.chokepoint.output): the
    answer must validate against ``output_schema`` (its ``title`` names it). Each adapter sends
    the schema in its provider's native form (a strict response format, a forced tool, a
    grammar), or nothing where there is none."""

    output_schema: Mapping[str, JSONValue] | None = None


TOOL_CHOICES = ("auto", "required", "none")  # else a tool's name


FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


@fast_init
@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model returned. A response may carry text AND tool calls; both are kept.

    Args:
        text: The model's words.
        tool_calls: The calls it asks for (``ToolCall``); none: the text is its answer.
        usage: The tokens the call used, as the provider reported them.
        model: The model's name, as the provider gave it.
        finish_reason: Why the answer ended: ``"stop"``, ``"tool_calls"``, ``"length"`` (cut
            at the output cap), ...
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: FinishReason = "stop"

    def to_dict(self) -> dict[str, JSONValue]:
        """As plain JSON data, as journaled."""
        return {
            "text": self.text,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "usage": self.usage.to_dict(),
            "model": self.model,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelResponse:
        """The response ``to_dict`` wrote."""
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in data["tool_calls"])
        u = data["usage"]
        usage = Usage(u["input_tokens"], u["output_tokens"], u["cached_input_tokens"],
                      u.get("cache_write_tokens", 0), bool(u.get("estimated", False)))
        return cls(data["text"], calls, usage, data["model"], data["finish_reason"])


_NOT_DECODED: Any = object()


@fast_init
@dataclass(frozen=True, slots=True)
class Event:
    """One journal entry. ``prev_hash`` chains it to the previous event of its session; ``hash``
    covers seq, type, session id, timestamp, data and ``prev_hash`` in canonical JSON.

    ``data`` may arrive as JSON text (``Event.from_json``) and is decoded on its first read: a
    live run seals every event it appends, and most are written to a store and never read back
    in that process, so decoding them all when sealed would be wasted work.
    """

    seq: int
    type: str
    session_id: str
    timestamp: float
    data: Mapping[str, JSONValue]
    prev_hash: str
    hash: str
    # data as the JSON text it arrived in; not a parameter, so an event made by replace(event,
    # data=...) never carries the text of the data it replaced
    _json: str = field(default="", init=False, repr=False, compare=False)

    @classmethod
    def from_json(cls, seq: int, type: str, session_id: str, timestamp: float, data_json: str,
                  prev_hash: str, hash: str) -> Event:
        """An event whose data is the JSON object ``data_json``, decoded when first read."""
        event = cls(seq, type, session_id, timestamp, _NOT_DECODED, prev_hash, hash)
        _set_json(event, data_json)
        return event

    @property
    def json_text(self) -> str:
        """The data as the JSON text it arrived in ("" for an event built from decoded data)."""
        return self._json


def _decoded_on_read(slot: Any) -> property:
    """``Event.data``: the slot's value, decoded from ``_json`` the first time it is read."""
    def read(event: Event) -> Any:
        value = slot.__get__(event, Event)
        if value is _NOT_DECODED:
            value = json.loads(event._json)
            slot.__set__(event, value)
        return value

    return property(read, slot.__set__, doc="The event's data, a plain-JSON mapping.")


_set_json = Event.__dict__["_json"].__set__
setattr(Event, "data", _decoded_on_read(Event.__dict__["data"]))  # noqa: B010 (mypy: a field)
