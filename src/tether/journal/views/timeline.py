"""A session's journal as a timeline a person can read: the AUDIT view behind `tether audit show`.

Why: the journal is complete but written for machines — a model request holds whole messages, a
decision holds the resource and spend the policy saw. Someone asking "what did this agent do, and
who let it?" needs one line per thing that happened: each model turn with its text and the calls
it asked for, each decision with its effect, policy id and reason, each result with its status,
each approval, pause and resume, and what the session spent.

Decision: rendering is a pure function of the stored events (no store, no agent, no policy), so
it works on any journal — live, restored or exported — and never needs the code that wrote it.
Each line starts with the event's seq, so a line can be matched to ``tether audit verify``'s
findings and to the raw export. Unknown event types are still shown, briefly, never dropped.
Long text is cut to an excerpt; arguments appear as the journal holds them (masked fields stay
masked).

The lines of each event family are drawn by its own module (``session_lines``, ``turn_lines``,
``tool_lines``, ``ask_lines``, and ``branches`` and ``plan_lines`` for a search's tree and the
request plan); this one assembles them in seq order, with the header and the spend. Being
public (docs/reference/surface.md), it still exports the line pieces it always did
(``when``, ``call_text``, ``excerpt``: ``__all__``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from tether.journal.payloads import (
    ModelResponseData,
    PlanAmendedData,
    SessionEndData,
    SessionStartData,
    ToolDecisionData,
)
from tether.journal.views.ask_lines import ASK_RENDER
from tether.journal.views.branches import BRANCH_RENDER
from tether.journal.views.plan_lines import PLAN_RENDER, asked_line
from tether.journal.views.session_lines import SESSION_RENDER
from tether.journal.views.text import Renderer, call_text, excerpt, off_by, when
from tether.journal.views.tool_lines import TOOL_RENDER
from tether.journal.views.turn_lines import TURN_RENDER
from tether.store.anchor_chain import ERASED_TYPE
from tether.types import Event
from tether.vocabulary import EventType

__all__ = ["call_text", "estimate_line", "excerpt", "header", "spend_line", "timeline", "when"]


def timeline(events: Sequence[Event]) -> list[str]:
    """Readable lines for one session's events (in seq order)."""
    lines: list[str] = []
    plan: Mapping[str, Any] | None = None  # what the request asks for (tether.policy.plan)
    effects: set[str] = set()  # the side-effecting tools, from each one's first decision
    for event in events:
        render = _RENDER.get(event.type)
        texts = render(event.data) if render is not None else [
            f"{event.type}: {excerpt(json.dumps(event.data, ensure_ascii=False, sort_keys=True))}"]
        # the plan, as the decisions read it
        if event.type in (EventType.SESSION_START, EventType.PLAN_AMENDED):
            plan = cast(SessionStartData | PlanAmendedData, event.data).get("plan")
        elif event.type == EventType.TOOL_DECISION and plan is not None:
            decided = cast(ToolDecisionData, event.data)
            if (decided.get("resource") or {}).get("side_effect"):
                effects.add(str(decided.get("tool")))
            if decided.get("tool") in effects:
                texts.append(asked_line(plan, str(decided.get("tool"))))
        for i, text in enumerate(texts):
            prefix = f"{event.seq:>5}  " if i == 0 else " " * 7
            lines.append(prefix + text)
    lines.append(spend_line(events))
    estimate = estimate_line(events)
    if estimate:
        lines.append(estimate)
    return lines


def header(events: Sequence[Event]) -> list[str]:
    """Who ran what, from ``session.start``: agent, model, subject, task, budget, context."""
    if not events:
        return []
    first = events[0]
    lines = [f"session {first.session_id}"]
    if first.type == ERASED_TYPE:
        return [*lines, f"  content erased by {first.data.get('erasure')} (tether.journal."
                "erasure): what remains is each event's former type, hash and link"]
    if first.type == EventType.ERASURE_RECORDED:
        erased = ", ".join(first.data.get("sessions") or ()) or "none"
        return [*lines, f"  erasure record, not a session: it erased session(s) {erased} "
                f"({first.data.get('reason') or 'no reason given'})"]
    if first.type != EventType.SESSION_START:
        return [*lines, f"  (the first event is {first.type!r}, not session.start)"]
    d = cast(SessionStartData, first.data)
    who = d.get("subject") or {}
    roles = ", ".join(who.get("roles") or []) or "-"
    tenant = who.get("tenant_id") or "-"
    if d.get("agent") == "gateway":  # tool calls from an MCP (or other) client, no model
        client = (d.get("context") or {}).get("client") or who.get("user_id")
        lines.append(f"  tool gateway for client {client}; tenant {tenant}, roles {roles}")
    else:
        lines.append(f"  agent {d.get('agent')}, model {d.get('model')}; user "
                     f"{who.get('user_id') or '-'}, tenant {tenant}, roles {roles}")
    lines.append(f"  task: {excerpt(d.get('task', ''))}")
    limits = {k: v for k, v in (d.get("budget") or {}).items()
              if v is not None and k != "final_turn_share"}
    lines.append("  budget: " + (", ".join(f"{k}={v}" for k, v in limits.items()) or "no limits"))
    if d.get("context"):
        lines.append(f"  context: {excerpt(json.dumps(d['context'], ensure_ascii=False))}")
    if d.get("metadata"):  # labels, e.g. an evaluation trial's identity
        lines.append("  metadata: " + excerpt(json.dumps(d["metadata"], ensure_ascii=False,
                                                         sort_keys=True), 160))
    lines.append(f"  started {when(first.timestamp)}, last event {when(events[-1].timestamp)}, "
                 f"{len(events)} events")
    return lines


def spend_line(events: Sequence[Event]) -> str:
    """What the session spent, as its last end or pause recorded it."""
    for event in reversed(events):
        ended = event.type in (EventType.SESSION_END, EventType.SESSION_PAUSED)
        spend = cast(SessionEndData, event.data).get("spend") if ended else None
        if isinstance(spend, Mapping):
            status = "ended" if event.type == EventType.SESSION_END else "paused"
            return (f"spend ({status}): {spend.get('tokens')} tokens, ${spend.get('cost_usd')}, "
                    f"{spend.get('steps')} steps, {spend.get('tool_calls')} tool calls, "
                    f"{spend.get('seconds')} s")
        if event.type == ERASED_TYPE and event.data.get("type") in (EventType.SESSION_END,
                                                                     EventType.SESSION_PAUSED):
            return "spend: erased with the session's content"
    if events and events[0].type == EventType.ERASURE_RECORDED:
        return "spend: none (an erasure record spends nothing)"
    return "spend: not recorded (the session has neither ended nor paused)"


def estimate_line(events: Sequence[Event]) -> str:
    """How far tether's input estimates were from what the provider reported, over the model
    calls whose usage the provider did report: the error budgets are reserved with."""
    reserved = reported = calls = 0
    for event in events:
        data = cast(ModelResponseData, event.data)
        usage = (data.get("response") or {}).get("usage") or {} \
            if event.type == EventType.MODEL_RESPONSE else {}
        if usage and not usage.get("estimated") and data.get("reserved_input"):
            reserved += data["reserved_input"]
            reported += usage.get("input_tokens") or 0
            calls += 1
    if not calls or not reported:
        return ""
    return (f"input estimate: {reserved:,} tokens reserved for {reported:,} reported over "
            f"{calls} call{'s' if calls > 1 else ''} ({off_by(reserved, reported)})")


_RENDER: dict[str, Renderer] = {
    **SESSION_RENDER,
    **TURN_RENDER,
    **TOOL_RENDER,
    **ASK_RENDER,
    **BRANCH_RENDER,
    **PLAN_RENDER,
}
