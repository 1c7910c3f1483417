"""A session's journal as ACS Trace's OpenTelemetry spans: the option beside the GenAI ones.

Why: ACS v0.1.0 (``trace/otel-mapping.json``) fixes a span per step, named by the step
(``gen_ai.tool.call`` for a tool call's request, ``gen_ai.tool.result`` for its result,
``acs.session``, ``acs.compact`` ...), with required attributes, and each decision as an
``acs.decision`` span event on the step it gates — so the verdict and the action share a parent.
A collector built for ACS reads that, not ``execute_tool`` spans with decision events on the
agent's span (``tether.journal.views.spans``, the default).

Decision: the same contract as ``SpanDeriver`` — fed a session's events in journal order, it
returns the spans each event finishes, so ``OTelSink(shape="acs")`` live and ``tether audit
export --format otlp --shape acs`` give the same spans, ids included. Ids come from the same
``Segment`` digests: the session's span is the segment's root and a tool call's request span
has the id a call's ``traceparent`` carries, so what a tool's downstream service records nests
under the call in either shape (send one shape to a collector: the ids are shared). A call's
request span lasts from its first decision to its result, or to its refusal — a held call's
wait for a person is inside it, with the person's decision as a second event; its result span
covers the run. The other steps are instants under the session's span.
"""

from __future__ import annotations

from typing import Any

from tether.journal.views.acs_steps import AcsSteps, Step
from tether.journal.views.span_records import OpenSpan, SpanMaker, SpanRecord, ns_of
from tether.tracing import Segment, TraceParent
from tether.types import Event
from tether.vocabulary import EventType

#: ACS step -> span name (otel-mapping.json, v0.1.0)
SPAN_NAMES = {
    "steps/sessionStart": "acs.session", "steps/agentTrigger": "acs.agent.trigger",
    "steps/userMessage": "acs.message.user", "steps/agentResponse": "acs.message.agent",
    "steps/toolCallRequest": "gen_ai.tool.call", "steps/toolCallResult": "gen_ai.tool.result",
    "steps/knowledgeRetrieval": "acs.knowledge.retrieval",
    "steps/memoryStore": "acs.memory.store", "steps/memoryContextRetrieval": "acs.memory.retrieval",
    "steps/sessionEnd": "acs.session.end", "steps/turnStart": "acs.turn",
    "steps/turnEnd": "acs.turn.end", "steps/preCompact": "acs.compact",
    "steps/postCompact": "acs.compact.complete", "steps/subagentStart": "acs.subagent",
    "steps/subagentStop": "acs.subagent.end", "steps/skillRegister": "acs.skill.register",
    "steps/skillLoad": "acs.skill.load", "steps/skillUnload": "acs.skill.unload",
    "agbom/snapshot": "acs.agbom", "agbom/changed": "acs.agbom",
}
DECISION_EVENT = "acs.decision"
_OPENERS = frozenset({EventType.SESSION_START, EventType.SESSION_RESUMED})
_CLOSERS = frozenset({EventType.SESSION_END, EventType.SESSION_PAUSED})


class AcsSpanDeriver:
    """ACS Trace spans of one session's events, fed in journal order (``SpanDeriver``'s
    contract: ``feed`` returns the spans each event finishes, ``finish`` ends a segment a crash
    left open)."""

    def __init__(self, session_id: str, *, content: bool = False,
                 make: SpanMaker = SpanRecord) -> None:
        """``content``: ACS Trace carries no conversation, so it is not read."""
        self.session_id = session_id
        self._make = make
        self._steps = AcsSteps()
        self._segment: Segment | None = None
        self._root: OpenSpan | None = None
        self._calls: dict[str, OpenSpan] = {}  # call -> its open request span
        self.open = False  # whether a segment is open (its end or pause not yet seen)

    def feed(self, event: Event, data: Any = None) -> list[Any]:
        done: list[Any] = []
        if event.type in _OPENERS:
            done += self.finish(event)
        steps = self._steps.apply(event)
        if event.type in _OPENERS:
            self._begin(event)
        if self._root is None:
            return done
        for step in steps:
            done += self._step(step)
        if event.type == EventType.TOOL_RESULT:  # the call is over, whether it ran or not
            span = self._calls.pop(str(event.data.get("call_id") or ""), None)
            if span is not None:
                done.append(span.close(self._make, ns_of(event)))
        if event.type in _CLOSERS:
            done += self._close(ns_of(event))
        return done

    def finish(self, end: Event | None = None) -> list[Any]:
        if self._root is None:
            return []
        self._root.attributes["tether.unfinished"] = True
        return self._close(ns_of(end) if end is not None else self._root.start_ns)

    def _begin(self, event: Event) -> None:
        parent = None
        links: tuple[TraceParent, ...] = ()
        context = event.data.get("context")
        if event.type == EventType.SESSION_START and isinstance(context, dict):
            parent = TraceParent.parse(context.get("traceparent"))
        elif event.type == EventType.SESSION_RESUMED:
            link = TraceParent.parse(event.data.get("link"))
            links = (link,) if link is not None else ()
        self._segment = segment = Segment(self.session_id, event.seq, parent)
        self.open = True
        self._root = OpenSpan(SPAN_NAMES["steps/sessionStart"], segment.root(), parent,
                              "INTERNAL", ns_of(event), {
                                  "acs.session.id": self._steps.acs_session(self.session_id),
                                  "tether.session.id": self.session_id}, links)

    def _step(self, step: Step) -> list[Any]:
        root, segment = self._root, self._segment
        assert root is not None and segment is not None
        if step.method == "steps/sessionStart":  # the session's span is the segment's
            root.attributes.update(step.attributes)
            self._decide(root, step)
            return []
        at = ns_of(step.event)
        if step.method == "steps/toolCallRequest" and step.event.type != EventType.ACS_HOOK:
            span = self._calls.get(step.call)
            if span is None:
                span = self._calls[step.call] = OpenSpan(
                    SPAN_NAMES[step.method],
                    TraceParent(segment.trace_id, segment.tool_span_id(step.call)),
                    root.context, "INTERNAL", at, dict(step.attributes))
            self._decide(span, step)
            if step.decision is not None and step.decision.disposition == "deny" \
                    and step.decision.evaluator == "human":  # refused: nothing follows
                return [self._calls.pop(step.call).close(self._make, at)]
            return []
        parent = root.context
        start = at
        if step.method == "steps/toolCallResult":
            request = self._calls.get(step.call)
            parent = request.context if request is not None else parent
            start = at - int(step.attributes.get("acs.duration_ms", 0)) * 1_000_000
        key = f"{step.method}\x1f{step.event.seq}"
        span = OpenSpan(SPAN_NAMES[step.method], TraceParent(
            segment.trace_id, segment.step_span_id(key)), parent, "INTERNAL", max(start, 0),
            dict(step.attributes))
        self._decide(span, step)
        exit_status = step.attributes.get("acs.exit_status")
        error = str(exit_status) if exit_status in ("error", "timeout") else ""
        return [span.close(self._make, at, error)]

    @staticmethod
    def _decide(span: OpenSpan, step: Step) -> None:
        d = step.decision
        if d is None:
            return
        a: dict[str, Any] = {"acs.decision": d.disposition, "acs.evaluator": d.evaluator}
        if d.reasoning:
            a["acs.reasoning"] = d.reasoning
        if d.effect:
            a["tether.decision.effect"] = d.effect
        if d.policy_id:
            a["tether.policy.id"] = d.policy_id
        if d.by:
            a["tether.decision.by"] = d.by
        if span.events is None:
            span.events = []
        span.events.append((DECISION_EVENT, ns_of(step.event), a))

    def _close(self, end_ns: int) -> list[Any]:
        root = self._root
        assert root is not None
        done = []
        for span in self._calls.values():  # a call still waiting (a pause, a crash)
            span.attributes["tether.paused"] = True
            done.append(span.close(self._make, end_ns))
        done.append(root.close(self._make, end_ns))
        self._root, self._calls = None, {}
        self.open = False
        return done

