"""A session's journal as OpenTelemetry GenAI spans: one derivation, live or after the fact.

Why: an export that mirrors events as they happen can drift from the record; one derived from
the record cannot. ``SpanDeriver`` folds a session's events, in journal order, into finished
spans — the ``OTelSink`` feeds it each event as the journal publishes it, ``tether audit export
--format otlp`` feeds it the stored events — so the two produce the same spans, ids included
(``tether.tracing``: every id is a digest of where its event sits in the journal).

Decision: spans are per *run segment* (``session.start`` or ``session.resumed`` to the end or
pause): a process sees its own segment's events only, so a derivation that looked further back
could not be produced live. A resumed segment's ``invoke_agent`` span is a new trace, linked to
the one before; a call left open at a pause ends with the segment (``tether.paused``). Spans
are plain frozen records, not SDK objects: this module is below the runtime and imports no
OpenTelemetry; ``tether.observe`` turns records into SDK spans. Message content is left out
unless asked for, and what goes in is the journal's text — already masked and scrubbed.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tether.journal.payloads import (
    ApprovalData,
    BranchResponseData,
    CallData,
    ChatRequestData,
    ModelChargeData,
    ModelOverrunData,
    ModelResponseData,
    SessionEndData,
    SessionPausedData,
    SessionResumedData,
    ToolDecisionData,
    ToolResultData,
    ToolStartedData,
)
from tether.journal.views import genai as g
from tether.records import fast_init
from tether.tracing import Segment, TraceParent
from tether.types import Event
from tether.vocabulary import EventType

_orjson: ModuleType | None
try:
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover (an optional speed-up)
    _orjson = None

Attributes = Mapping[str, Any]
_LIMITS = (("tokens", "max_tokens"), ("cost_usd", "max_cost_usd"), ("steps", "max_steps"),
           ("tool_calls", "max_tool_calls"), ("seconds", "max_seconds"))
_FRACTIONAL = frozenset({"cost_usd", "seconds"})
_ERROR_STATUSES = frozenset({"error", "timeout"})


@fast_init
@dataclass(frozen=True, slots=True)
class SpanRecord:
    """A finished span. Times are in nanoseconds since the epoch; ``parent`` and links are
    ``TraceParent``s (a remote parent: a caller's span in another process or session)."""

    name: str
    context: TraceParent
    parent: TraceParent | None
    kind: str  # "INTERNAL" or "CLIENT"
    start_ns: int
    end_ns: int
    attributes: Attributes
    error: str = ""  # the status description when the span ended in error ("": not an error)
    links: tuple[TraceParent, ...] = ()
    events: tuple[tuple[str, int, Attributes], ...] = ()  # (name, time_ns, attributes)


@dataclass(slots=True)
class _Open:
    """A span being built."""

    name: str
    context: TraceParent
    parent: TraceParent | None
    kind: str
    start_ns: int
    attributes: dict[str, Any]
    links: tuple[TraceParent, ...] = ()
    events: list[tuple[str, int, Attributes]] = field(default_factory=list)

    def close(self, end_ns: int, error: str = "") -> SpanRecord:
        return SpanRecord(self.name, self.context, self.parent, self.kind, self.start_ns,
                          end_ns, self.attributes, error, self.links, tuple(self.events))


def _limits(budget: object) -> tuple[tuple[str, str, float], ...]:
    """The limits a journaled budget sets, as (spend key, attribute, cap)."""
    if not isinstance(budget, Mapping):
        return ()
    out = []
    for name, limit in _LIMITS:
        try:
            out.append((name, g.BUDGET_LEFT + name, float(budget[limit])))
        except (KeyError, TypeError, ValueError):  # not set (None), or not a number
            continue
    return tuple(out)


def data_of(event: Event) -> Any:
    """An event's data, decoded from the JSON text it carries with ``orjson`` when that is
    installed (``tether[otel]``: about four times faster than the standard library on events
    this size), else as ``event.data``; both give the same values."""
    text = event.json_text
    if text and _orjson is not None:
        try:
            return _orjson.loads(text)
        except _orjson.JSONDecodeError:  # an integer past 64 bits: the standard library's
            return event.data
    return event.data


def _ns(event: Event) -> int:
    return int(event.timestamp * 1e9)


class SpanDeriver:
    """Spans of one session's events, fed in journal order; ``feed`` returns the spans each
    event finishes. ``content`` adds the conversation (opt-in, as the conventions say)."""

    __slots__ = ("_agent", "_calls", "_chats", "_content", "_limits", "_model", "_provider",
                 "_root", "_segment", "session_id")

    def __init__(self, session_id: str, *, content: bool = False) -> None:
        self.session_id = session_id
        self._content = content
        self._segment: Segment | None = None
        self._root: _Open | None = None
        self._chats: dict[int, _Open] = {}  # model.request seq -> its open chat span
        self._calls: dict[str, _Open] = {}  # call id -> its open execute_tool span
        self._agent = self._model = self._provider = ""
        self._limits: tuple[tuple[str, str, float], ...] = ()  # (spend key, attribute, cap)

    @property
    def open(self) -> bool:
        """Whether a segment is open (its end or pause not yet seen)."""
        return self._root is not None

    def feed(self, event: Event) -> list[SpanRecord]:
        handler = _HANDLERS.get(event.type)
        if handler is None or (self._root is None and event.type not in _OPENERS):
            return []
        return handler(self, event, data_of(event)) or []

    def finish(self, end: Event | None = None) -> list[SpanRecord]:
        """End what is still open (a segment cut short by a crash), marked unfinished."""
        if self._root is None:
            return []
        end_ns = _ns(end) if end is not None else self._root.start_ns
        self._root.attributes[g.UNFINISHED] = True
        return self._close_segment(end_ns, end.hash if end is not None else "")

    # -- segments -----------------------------------------------------------------------------

    def _begin(self, event: Event, data: SessionResumedData) -> list[SpanRecord]:
        done = self.finish(event) if self._root is not None else []
        links: tuple[TraceParent, ...] = ()
        if event.type == EventType.SESSION_START:
            context = data.get("context")
            parent = TraceParent.parse(context.get("traceparent")
                                       if isinstance(context, Mapping) else None)
        else:
            parent = None
            link = TraceParent.parse(data.get("link"))
            links = (link,) if link is not None else ()
        self._segment = segment = Segment(self.session_id, event.seq, parent)
        self._agent = str(data.get("agent", ""))
        self._model = str(data.get("model", ""))
        self._provider = str(data.get("provider") or g.OTHER_PROVIDER)
        self._limits = _limits(data.get("budget"))
        attributes: dict[str, Any] = {
            g.OPERATION: g.INVOKE_AGENT, g.PROVIDER: self._provider, g.AGENT_NAME: self._agent,
            g.CONVERSATION_ID: self.session_id, g.REQUEST_MODEL: self._model,
            g.SESSION_ID: self.session_id}
        if isinstance(data.get("recipe"), str):
            attributes[g.RECIPE] = data["recipe"]
        if self._content and isinstance(data.get("system_prompt"), str):
            attributes[g.SYSTEM_INSTRUCTIONS] = json.dumps(
                [{"type": "text", "content": data["system_prompt"]}])
        self._root = _Open(f"{g.INVOKE_AGENT} {self._agent}", segment.root(), parent,
                           "INTERNAL", _ns(event), attributes, links)
        return done

    def _end(self, event: Event, data: SessionEndData | SessionPausedData) -> list[SpanRecord]:
        assert self._root is not None
        attributes = self._root.attributes
        attributes[g.STOP_REASON] = str(data.get("reason", ""))
        if event.type == EventType.SESSION_PAUSED:
            attributes[g.PAUSED] = True
        spend = data.get("spend")
        if isinstance(spend, Mapping):
            attributes.update(self._left(spend))
        error = str(data.get("detail") or "model error") if data.get("reason") == "model_error" \
            else ""
        return self._close_segment(_ns(event), event.hash, error)

    def _close_segment(self, end_ns: int, head: str, error: str = "") -> list[SpanRecord]:
        assert self._root is not None
        done = [span.close(end_ns) for span in self._chats.values()]
        for span in self._calls.values():
            span.attributes[g.PAUSED] = True
            done.append(span.close(end_ns))
        if head:
            self._root.attributes[g.CHAIN_HEAD] = head
        done.append(self._root.close(end_ns, error))
        self._root, self._chats, self._calls = None, {}, {}
        return done

    def _left(self, spend: Mapping[str, Any]) -> dict[str, Any]:
        """What each of the budget's limits has left after ``spend``."""
        left: dict[str, Any] = {}
        for name, attribute, cap in self._limits:
            used = spend.get(name)
            if used is None:
                continue
            try:
                remaining = cap - float(used)  # a Decimal is journaled as a string
            except (TypeError, ValueError):
                continue
            if remaining < 0:
                remaining = 0.0
            left[attribute] = remaining if name in _FRACTIONAL else int(remaining)
        return left

    # -- model calls --------------------------------------------------------------------------

    def _request(self, event: Event, data: ChatRequestData) -> None:
        assert self._root is not None and self._segment is not None
        attributes: dict[str, Any] = {
            g.OPERATION: g.CHAT, g.PROVIDER: self._provider, g.REQUEST_MODEL: self._model,
            g.SESSION_ID: self.session_id, g.STEP: data.get("step", 0)}
        cap = data.get("max_output_tokens")
        if isinstance(cap, int):
            attributes[g.REQUEST_MAX_TOKENS] = cap
        if data.get("final"):
            attributes[g.WRAP_UP] = True
        if self._content:
            attributes[g.INPUT_MESSAGES] = json.dumps(_messages(  # (a branch's: its messages)
                data["new"] if "new" in data else data.get("messages", ())))
        self._chats[event.seq] = _Open(f"{g.CHAT} {self._model}",
                                       self._segment.model_call(event.seq),
                                       self._root.context, "CLIENT", _ns(event), attributes)

    def _response(self, event: Event,
                  data: BranchResponseData | ModelResponseData) -> list[SpanRecord]:
        span = self._pop_chat()
        if span is None:
            return []
        response = data.get("response")
        if isinstance(response, Mapping):
            usage = response.get("usage") or {}
            a = span.attributes
            a[g.RESPONSE_MODEL] = str(response.get("model", "")) or self._model
            a[g.FINISH_REASONS] = (str(response.get("finish_reason", "")),)
            a[g.INPUT_TOKENS] = int(usage.get("input_tokens", 0))
            a[g.OUTPUT_TOKENS] = int(usage.get("output_tokens", 0))
            if usage.get("cached_input_tokens"):
                a[g.CACHE_READ_TOKENS] = int(usage["cached_input_tokens"])
            a[g.COST_USD] = str(data.get("cost_usd", "0"))
            if self._content:
                a[g.OUTPUT_MESSAGES] = json.dumps([_assistant(response)])
        return [span.close(_ns(event))]

    def _model_failed(self, event: Event, data: ModelChargeData) -> list[SpanRecord]:
        span = self._pop_chat()
        if span is None:
            return []
        error = str(data.get("error", "")) or event.type
        span.attributes[g.ERROR_TYPE] = error.split(":", 1)[0] \
            if event.type == EventType.MODEL_ERROR else event.type
        return [span.close(_ns(event), error)]

    def _overrun(self, event: Event, data: ModelOverrunData) -> None:
        assert self._root is not None
        reported = data.get("reported") or {}
        self._root.events.append((g.OVERRUN_EVENT, _ns(event), {
            g.LIMIT: str(data.get("limit", "")), g.STEP: data.get("step", 0),
            g.INPUT_TOKENS: int(reported.get("input_tokens", 0)),
            g.OUTPUT_TOKENS: int(reported.get("output_tokens", 0))}))

    def _pop_chat(self) -> _Open | None:
        if not self._chats:
            return None
        return self._chats.pop(max(self._chats))

    # -- tool calls ---------------------------------------------------------------------------

    def _call(self, event: Event, call_id: str, tool: str,
              remote: TraceParent | None = None) -> _Open:
        span = self._calls.get(call_id)
        if span is None:
            assert self._root is not None and self._segment is not None
            context = self._segment.tool_call(call_id)
            if remote is not None:  # a client's call (tether mcp serve): under the client's span
                context = TraceParent(remote.trace_id, context.span_id)
            span = _Open(f"{g.EXECUTE_TOOL} {tool}", context, remote or self._root.context,
                         "INTERNAL", _ns(event), {
                             g.OPERATION: g.EXECUTE_TOOL, g.TOOL_NAME: tool,
                             g.TOOL_CALL_ID: call_id, g.TOOL_TYPE: "function",
                             g.SESSION_ID: self.session_id})
            self._calls[call_id] = span
        return span

    def _client_call(self, event: Event, data: CallData) -> None:
        call = data.get("call") or {}
        self._call(event, str(call.get("id", "")), str(call.get("name", "")),
                   TraceParent.parse(data.get("traceparent")))

    def _decision(self, event: Event, data: ToolDecisionData) -> None:
        span = self._call(event, str(data["call_id"]), str(data["tool"]))
        decision = data.get("decision") or {}
        a = span.attributes
        a.setdefault(g.DECISION_EFFECT, str(decision.get("effect", "")))
        a.setdefault(g.POLICY_ID, str(decision.get("policy_id", "")))
        context = data.get("context") or {}
        if isinstance(context.get("spend"), Mapping):
            a.update(self._left(context["spend"]))
        if self._content and "arguments" in data:
            a[g.TOOL_ARGUMENTS] = json.dumps(data["arguments"], sort_keys=True)

    def _approval(self, event: Event, data: ApprovalData) -> None:
        span = self._call(event, str(data["call_id"]), str(data.get("tool", "")))
        a = span.attributes
        a[g.APPROVAL_ID] = str(data.get("approval_id", ""))
        outcome = event.type.rsplit(".", 1)[1]
        a[g.APPROVAL_OUTCOME] = outcome
        if data.get("approver"):
            a[g.APPROVER] = str(data["approver"])

    def _touch(self, event: Event, data: ToolStartedData) -> None:
        self._call(event, str(data["call_id"]), str(data.get("tool", "")))

    def _result(self, event: Event, data: ToolResultData) -> list[SpanRecord]:
        call_id = str(data["call_id"])
        span = self._call(event, call_id, str(data["tool"]))
        del self._calls[call_id]
        status = str(data.get("status", ""))
        span.attributes[g.TOOL_STATUS] = status
        if self._content:
            span.attributes[g.TOOL_RESULT] = str(data.get("content", ""))
        if status in _ERROR_STATUSES:
            span.attributes[g.ERROR_TYPE] = status
            return [span.close(_ns(event), f"the tool call ended in {status}")]
        return [span.close(_ns(event))]


def _messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """Journaled messages in the conventions' message shape (role and parts)."""
    out = []
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        role = str(m.get("role", ""))
        if role == "tool":
            out.append({"role": "tool", "parts": [{"type": "tool_call_response",
                                                   "id": m.get("tool_call_id", ""),
                                                   "response": m.get("content", "")}]})
        elif role == "assistant":
            out.append(_assistant({"text": m.get("content", ""),
                                   "tool_calls": m.get("tool_calls", ())}))
        else:
            out.append({"role": role, "parts": [{"type": "text",
                                                 "content": m.get("content", "")}]})
    return out


def _assistant(response: Mapping[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if response.get("text"):
        parts.append({"type": "text", "content": response["text"]})
    for call in response.get("tool_calls") or ():
        parts.append({"type": "tool_call", "id": call.get("id", ""), "name": call.get("name"),
                      "arguments": call.get("arguments", {})})
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if response.get("finish_reason"):
        message["finish_reason"] = response["finish_reason"]
    return message


_OPENERS = frozenset({EventType.SESSION_START, EventType.SESSION_RESUMED})
_HANDLERS: dict[str, Any] = {
    EventType.SESSION_START: SpanDeriver._begin,
    EventType.SESSION_RESUMED: SpanDeriver._begin,
    EventType.SESSION_END: SpanDeriver._end,
    EventType.SESSION_PAUSED: SpanDeriver._end,
    EventType.MODEL_REQUEST: SpanDeriver._request,
    EventType.MODEL_RESPONSE: SpanDeriver._response,
    EventType.BRANCH_REQUEST: SpanDeriver._request,  # a tree search's model call on a branch
    EventType.BRANCH_RESPONSE: SpanDeriver._response,
    EventType.MODEL_ERROR: SpanDeriver._model_failed,
    EventType.MODEL_UNMETERED: SpanDeriver._model_failed,
    EventType.MODEL_OVERRUN: SpanDeriver._overrun,
    EventType.CLIENT_CALL: SpanDeriver._client_call,
    EventType.TOOL_DECISION: SpanDeriver._decision,
    EventType.APPROVAL_REQUESTED: SpanDeriver._approval,
    EventType.APPROVAL_GRANTED: SpanDeriver._approval,
    EventType.APPROVAL_REFUSED: SpanDeriver._approval,
    EventType.EFFECT_RERUN: SpanDeriver._touch,
    EventType.TOOL_STARTED: SpanDeriver._touch,
    EventType.TOOL_RESULT: SpanDeriver._result,
}


def derive_spans(events: Iterable[Event], *, content: bool = False) -> list[SpanRecord]:
    """Every span of the events of one session, in the order they finish; a segment the
    events leave open (a crash) is ended at its last event and marked unfinished."""
    deriver: SpanDeriver | None = None
    done: list[SpanRecord] = []
    last: Event | None = None
    for event in events:
        if deriver is None:
            deriver = SpanDeriver(event.session_id, content=content)
        done.extend(deriver.feed(event))
        last = event
    if deriver is not None:
        done.extend(deriver.finish(last))
    return done
