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

import json
from collections.abc import Iterable, Mapping
from typing import Any

from tether.journal.payloads import (
    ApprovalData,
    BranchResponseData,
    CallData,
    ChatRequestData,
    CompactedData,
    EvalGradedData,
    ModelChargeData,
    ModelOverrunData,
    ModelResponseData,
    SessionEndData,
    SessionPausedData,
    SessionResumedData,
    SummaryRequestData,
    SummaryResponseData,
    ToolDecisionData,
    ToolResultData,
    ToolStartedData,
)
from tether.journal.views import genai as g
from tether.journal.views.genai_content import assistant_shape, messages_shape
from tether.journal.views.span_records import (
    OpenSpan,
    SpanMaker,
    SpanRecord,
    budget_left,
    fold_spans,
    is_mapping,
    limits_of,
    loads,
    ns_of,
)
from tether.tracing import Segment, TraceParent
from tether.types import Event
from tether.vocabulary import EventType

_ERROR_STATUSES = frozenset({"error", "timeout"})
# failed model calls whose error text starts with its class ("ProviderError: ...")
_ERRORS_WITH_CLASS = frozenset({EventType.MODEL_ERROR, EventType.COMPACTION_ERROR,
                                EventType.PLAN_ERROR, EventType.SAMPLING_ERROR})

class SpanDeriver:
    """Spans of one session's events, fed in journal order; ``feed`` returns the spans each
    event finishes. ``content`` adds the conversation (opt-in, as the conventions say)."""

    __slots__ = ("_agent", "_calls", "_chat_name", "_chats", "_content", "_limits", "_make",
                 "_model", "_provider", "_root", "_segment", "_trace_id", "_used", "open",
                 "session_id")

    def __init__(self, session_id: str, *, content: bool = False,
                 make: SpanMaker = SpanRecord) -> None:
        self.session_id = session_id
        self._content = content
        self._make = make  # what a finished span is built as
        self._trace_id = ""
        self._chat_name = ""
        self._segment: Segment | None = None
        self._root: OpenSpan | None = None
        self._chats: dict[int, OpenSpan] = {}  # model.request seq -> its open chat span
        self._calls: dict[str, OpenSpan] = {}  # call id -> its open execute_tool span
        self._agent = self._model = self._provider = ""
        self._limits: tuple[tuple[str, str, float, bool], ...] = ()  # (limits_of)
        self._used: list[Any] = [None, 0, 0]  # the segment's last finish reason, tokens in, out
        self.open = False  # whether a segment is open (its end or pause not yet seen)

    def feed(self, event: Event, data: Any = None) -> list[Any]:
        """The spans ``event`` finishes (``SpanRecord``s, or what the deriver's maker
        builds); ``data``: the event's data when the caller has decoded it already."""
        kind = event.type
        handler = _HANDLERS.get(kind)
        if handler is None or (self._root is None and kind not in _OPENERS):
            return []
        if data is None:  # (data_of, inlined: the worker runs this for every event)
            text = event._json
            if text and loads is not None:
                try:
                    data = loads(text)
                except ValueError:
                    data = event.data
            else:
                data = event.data
        return handler(self, event, data) or []

    def finish(self, end: Event | None = None) -> list[SpanRecord]:
        """End what is still open (a segment cut short by a crash), marked unfinished."""
        if self._root is None:
            return []
        end_ns = ns_of(end) if end is not None else self._root.start_ns
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
        self._trace_id = segment.trace_id
        self._agent = str(data.get("agent", ""))
        self._model = str(data.get("model", ""))
        self._provider = str(data.get("provider") or g.OTHER_PROVIDER)
        self._chat_name = f"{g.CHAT} {self._model}"
        self._limits = limits_of(data.get("budget"))
        attributes: dict[str, Any] = {
            g.OPERATION: g.INVOKE_AGENT, g.PROVIDER: self._provider, g.AGENT_NAME: self._agent,
            g.CONVERSATION_ID: self.session_id, g.REQUEST_MODEL: self._model,
            g.SESSION_ID: self.session_id}
        if isinstance(data.get("recipe"), str):
            attributes[g.RECIPE] = data["recipe"]
        if self._content and isinstance(data.get("system_prompt"), str):
            attributes[g.SYSTEM_INSTRUCTIONS] = json.dumps(
                [{"type": "text", "content": data["system_prompt"]}])
        self.open = True
        self._root = OpenSpan(f"{g.INVOKE_AGENT} {self._agent}", segment.root(), parent,
                           "INTERNAL", ns_of(event), attributes, links)
        return done

    def _end(self, event: Event, data: SessionEndData | SessionPausedData) -> list[SpanRecord]:
        assert self._root is not None
        attributes = self._root.attributes
        attributes[g.STOP_REASON] = str(data.get("reason", ""))
        if event.type == EventType.SESSION_PAUSED:
            attributes[g.PAUSED] = True
        spend = data.get("spend")
        if isinstance(spend, Mapping):
            attributes.update(budget_left(self._limits, spend))
        error = str(data.get("detail") or "model error") if data.get("reason") == "model_error" \
            else ""
        return self._close_segment(ns_of(event), event.hash, error)

    def _close_segment(self, end_ns: int, head: str, error: str = "") -> list[SpanRecord]:
        assert self._root is not None
        make = self._make
        done = [span.close(make, end_ns) for span in self._chats.values()]
        for span in self._calls.values():
            span.attributes[g.PAUSED] = True
            done.append(span.close(make, end_ns))
        used, a = self._used, self._root.attributes  # the segment's model calls, in all
        a[g.INPUT_TOKENS], a[g.OUTPUT_TOKENS] = used[1], used[2]
        if used[0] is not None:
            a[g.FINISH_REASONS] = (used[0],)  # the last answer's
        if head:
            self._root.attributes[g.CHAIN_HEAD] = head
        done.append(self._root.close(make, end_ns, error))
        self._root, self._chats, self._calls, self._used = None, {}, {}, [None, 0, 0]
        self.open = False
        return done

    # -- model calls --------------------------------------------------------------------------

    def _request(self, event: Event, data: ChatRequestData) -> None:
        get = data.get
        extra: dict[str, Any] = {g.STEP: get("step", 0)}
        if get("final"):
            extra[g.WRAP_UP] = True
        self._open_chat(event, self._model, get("max_output_tokens"), extra, data["new"]
                        if "new" in data else data.get("messages", ()))  # (a branch's: its own)

    def _side_request(self, event: Event, data: SummaryRequestData) -> None:
        """A side call's model call (a summary, a request plan, an MCP server's sampling)."""
        self._open_chat(event, str(data.get("model") or self._model),
                        data.get("max_output_tokens"),
                        {g.MODEL_CALL_PURPOSE: event.type.split(".", 1)[0]},
                        data.get("messages", ()))

    def _open_chat(self, event: Event, model: str, cap: object, extra: dict[str, Any],
                   messages: Any) -> None:
        assert self._root is not None and self._segment is not None
        ours = model == self._model
        attributes: dict[str, Any] = {
            g.OPERATION: g.CHAT, g.PROVIDER: self._provider if ours else g.OTHER_PROVIDER,
            g.REQUEST_MODEL: model, g.SESSION_ID: self.session_id, **extra}
        if isinstance(cap, int):
            attributes[g.REQUEST_MAX_TOKENS] = cap
        if self._content:
            attributes[g.INPUT_MESSAGES] = json.dumps(messages_shape(messages))
        seq = event.seq
        self._chats[seq] = OpenSpan(self._chat_name if ours else f"{g.CHAT} {model}", TraceParent(
            self._trace_id, self._segment.model_span_id(seq)), self._root.context, "CLIENT",
            int(event.timestamp * 1e9), attributes)

    def _response(self, event: Event,
                  data: BranchResponseData | ModelResponseData) -> list[SpanRecord]:
        span = self._pop_chat()
        if span is None:
            return []
        response = data.get("response")
        if is_mapping(response):
            get = response.get
            self._answered(span, get("model"), get("finish_reason", ""),
                           get("usage") or {}, data.get("cost_usd", "0"))
            if self._content:
                span.attributes[g.OUTPUT_MESSAGES] = json.dumps([assistant_shape(response)])
        return [span.close(self._make, int(event.timestamp * 1e9))]

    def _side_response(self, event: Event, data: SummaryResponseData) -> list[SpanRecord]:
        span = self._pop_chat()
        if span is None:
            return []
        self._answered(span, data.get("model"), data.get("finish_reason", ""), data,
                       data.get("cost_usd", "0"))
        return [span.close(self._make, ns_of(event))]

    def _answered(self, span: OpenSpan, model: object, finish: object, usage: Mapping[str, Any],
                  cost: object) -> None:
        a = span.attributes
        a[g.RESPONSE_MODEL] = str(model or "") or a[g.REQUEST_MODEL]
        a[g.FINISH_REASONS] = (str(finish),)
        used = self._used
        used[0] = str(finish)
        used[1] += (tokens_in := int(usage.get("input_tokens", 0)))
        used[2] += (tokens_out := int(usage.get("output_tokens", 0)))
        a[g.INPUT_TOKENS] = tokens_in
        a[g.OUTPUT_TOKENS] = tokens_out
        if usage.get("cached_input_tokens"):
            a[g.CACHE_READ_TOKENS] = int(usage["cached_input_tokens"])
        a[g.COST_USD] = str(cost)

    def _model_failed(self, event: Event, data: ModelChargeData) -> list[SpanRecord]:
        span = self._pop_chat()
        if span is None:
            return []
        error = str(data.get("error", "")) or event.type
        span.attributes[g.ERROR_TYPE] = error.split(":", 1)[0] \
            if event.type in _ERRORS_WITH_CLASS else event.type
        return [span.close(self._make, ns_of(event), error)]

    def _overrun(self, event: Event, data: ModelOverrunData) -> None:
        reported = data.get("reported") or {}
        self._event(event, g.OVERRUN_EVENT, {
            g.LIMIT: str(data.get("limit", "")), g.STEP: data.get("step", 0),
            g.INPUT_TOKENS: int(reported.get("input_tokens", 0)),
            g.OUTPUT_TOKENS: int(reported.get("output_tokens", 0))})

    def _event(self, event: Event, name: str, attributes: dict[str, Any]) -> None:
        """An event on the agent's span (the segment's root), at ``event``'s time."""
        root = self._root
        assert root is not None
        if root.events is None:
            root.events = []
        root.events.append((name, ns_of(event), attributes))

    def _compacted(self, event: Event, data: CompactedData) -> None:
        assert self._root is not None
        self._root.attributes[g.COMPACTED] = True

    def _graded(self, event: Event, data: EvalGradedData) -> None:
        """An evaluation's grade of a trial, on the grade book's span: the trial's own spans
        finished before it was graded (``tether.evaluation.session.id`` names it)."""
        a: dict[str, Any] = {
            g.EVALUATION_NAME: str(data.get("grader", "")),
            g.EVALUATION_LABEL: "pass" if data.get("passed") else "fail",
            g.EVALUATION_SESSION: str(data.get("session_id", "")),
            g.EVALUATION_TRIAL: str(data.get("trial", ""))}
        score = data.get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            a[g.EVALUATION_SCORE] = float(score)
        if data.get("error"):
            a[g.ERROR_TYPE] = str(data["error"]).split(":", 1)[0][:100]
        if self._content and data.get("why"):  # the grader's words may quote the answer
            a[g.EVALUATION_EXPLANATION] = str(data["why"])
        self._event(event, g.EVALUATION_RESULT, a)

    def _pop_chat(self) -> OpenSpan | None:
        chats = self._chats
        if not chats:
            return None
        if len(chats) == 1:  # (the usual case: one call open)
            return chats.popitem()[1]
        return chats.pop(max(chats))

    # -- tool calls ---------------------------------------------------------------------------

    def _call(self, event: Event, call_id: str, tool: str,
              remote: TraceParent | None = None) -> OpenSpan:
        span = self._calls.get(call_id)
        if span is None:
            assert self._root is not None and self._segment is not None
            context = TraceParent(remote.trace_id if remote is not None else self._trace_id,
                                  self._segment.tool_span_id(call_id))
            # (remote: a client's call, tether mcp serve: under the client's span)
            span = OpenSpan(f"{g.EXECUTE_TOOL} {tool}", context, remote or self._root.context,
                         "INTERNAL", int(event.timestamp * 1e9), {
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
        if g.DECISION_EFFECT not in a:
            a[g.DECISION_EFFECT] = str(decision.get("effect", ""))
        if g.POLICY_ID not in a:
            a[g.POLICY_ID] = str(decision.get("policy_id", ""))
        context = data.get("context") or {}
        spend = context.get("spend")
        if self._limits and is_mapping(spend):
            a.update(budget_left(self._limits, spend))
        if self._content and "arguments" in data:
            a[g.TOOL_ARGUMENTS] = json.dumps(data["arguments"], sort_keys=True)
        effect, policy = str(decision.get("effect", "")), str(decision.get("policy_id", ""))
        self._decided(event, span, str(data["tool"]), g.OUTCOMES.get(effect, "deny"), {
            g.DECISION_EFFECT: effect, g.POLICY_ID: policy, g.DECIDED_BY: f"policy {policy}",
            g.DECISION_REASON: str(decision.get("reason", ""))})

    def _decided(self, event: Event, span: OpenSpan, tool: str, outcome: str,
                 attributes: dict[str, Any]) -> None:
        """A ``gen_ai.tool.call.decision`` event on the agent's span: the outcome for ``tool``
        (a degraded call's fallback has its own) before it runs, whether or not it then runs
        (the proposal's, ``g.DECISION_PROPOSAL``)."""
        self._event(event, g.TOOL_CALL_DECISION, {
            g.DECISION_OUTCOME: outcome, g.TOOL_CALL_ID: span.attributes[g.TOOL_CALL_ID],
            g.TOOL_NAME: tool, **attributes, g.PROPOSAL: g.DECISION_PROPOSAL})

    def _approval(self, event: Event, data: ApprovalData) -> None:
        span = self._call(event, str(data["call_id"]), str(data.get("tool", "")))
        a = span.attributes
        a[g.APPROVAL_ID] = str(data.get("approval_id", ""))
        outcome = event.type.rsplit(".", 1)[1]
        a[g.APPROVAL_OUTCOME] = outcome
        if data.get("approver"):
            a[g.APPROVER] = str(data["approver"])
        if outcome != "requested":  # a person's decision (or its expiry) on the held call
            self._decided(event, span, a[g.TOOL_NAME], "allow" if outcome == "granted"
                          else "deny", {
                g.APPROVAL_ID: a[g.APPROVAL_ID],
                g.DECIDED_BY: str(data.get("approver") or "tether (no person decided)"),
                g.DECISION_REASON: str(data.get("reason") or data.get("note") or "")})

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
            return [span.close(self._make, ns_of(event), f"the tool call ended in {status}")]
        return [span.close(self._make, int(event.timestamp * 1e9))]


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
    EventType.COMPACTION_REQUEST: SpanDeriver._side_request,
    EventType.COMPACTION_RESPONSE: SpanDeriver._side_response,
    EventType.COMPACTION_ERROR: SpanDeriver._model_failed,
    EventType.PLAN_REQUEST: SpanDeriver._side_request,
    EventType.PLAN_RESPONSE: SpanDeriver._side_response,
    EventType.PLAN_ERROR: SpanDeriver._model_failed,
    EventType.SAMPLING_REQUEST: SpanDeriver._side_request,
    EventType.SAMPLING_RESPONSE: SpanDeriver._side_response,
    EventType.SAMPLING_ERROR: SpanDeriver._model_failed,
    EventType.CONTEXT_COMPACTED: SpanDeriver._compacted,
    EventType.EVAL_GRADED: SpanDeriver._graded,
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
    return fold_spans(SpanDeriver, events, content=content)
