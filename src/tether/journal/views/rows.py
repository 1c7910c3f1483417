"""A session's journal as structured rows: what a page draws, where the timeline draws text.

Why: ``journal.views.timeline`` gives one text line per thing that happened, which is right for a
terminal; the console's timeline page needs the same events with their parts apart — a decision's
effect, reason, policy id, origins and labels; a model turn's new messages and answer; which row
is an approval, a compaction, an erasure, a sub-agent; which rows are noise to fold away — so it
can style, filter and link them. Parsing the text lines back would be fragile, so this module
reads the same stored data once more and keeps the text lines the families already draw
(``TOOL_RENDER``, ``TURN_RENDER``, ...) as each row's summary: the words on the page are the
words of ``tether audit show``.

Decision: a pure function of stored events, like the rest of ``journal.views`` (no store, no
runtime): ``rows(events)`` in seq order. Each row has a ``group`` (the page's filter: ``turn``,
``tool``, ``approval``, ``session``, ``compaction``, ``erasure``, ``strategy``, ``other``) and a
``noisy`` flag for events that say little alone (charges, dropped log lines, hidden-value
fingerprints, tool selections), which a page may fold together. Arguments and messages are shown
as the journal holds them: masked fields stay masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tether.journal.views.ask_lines import ASK_RENDER
from tether.journal.views.branches import BRANCH_RENDER
from tether.journal.views.plan_lines import PLAN_RENDER, asked_line
from tether.journal.views.session_lines import SESSION_RENDER
from tether.journal.views.text import Renderer, excerpt
from tether.journal.views.tool_lines import TOOL_RENDER
from tether.journal.views.turn_lines import TURN_RENDER
from tether.store.anchor_chain import ERASED_TYPE
from tether.types import Event
from tether.vocabulary import EventType

GROUPS = ("turn", "tool", "approval", "session", "compaction", "erasure", "strategy", "other")

_GROUP: dict[str, str] = {
    **dict.fromkeys(TURN_RENDER, "turn"), **dict.fromkeys(TOOL_RENDER, "tool"),
    **dict.fromkeys(SESSION_RENDER, "session"), **dict.fromkeys(ASK_RENDER, "tool"),
    **dict.fromkeys(BRANCH_RENDER, "strategy"), **dict.fromkeys(PLAN_RENDER, "strategy"),
    EventType.APPROVAL_REQUESTED: "approval", EventType.APPROVAL_GRANTED: "approval",
    EventType.APPROVAL_REFUSED: "approval", EventType.STRATEGY_NOTE: "strategy",
    EventType.STRATEGY_CALLS: "strategy", EventType.COMPACTION_REQUEST: "compaction",
    EventType.COMPACTION_RESPONSE: "compaction", EventType.COMPACTION_ERROR: "compaction",
    EventType.CONTEXT_COMPACTED: "compaction", ERASED_TYPE: "erasure",
    EventType.ERASURE_RECORDED: "erasure",
}
NOISY = frozenset({EventType.SUBAGENT_CHARGE, EventType.LOG_DROPPED, EventType.PROGRESS_DROPPED,
                   EventType.VALUE_HIDDEN, EventType.TOOLS_SELECTED, EventType.SUBSCRIBER_ERROR})
_RENDER: dict[str, Renderer] = {**SESSION_RENDER, **TURN_RENDER, **TOOL_RENDER, **ASK_RENDER,
                                **BRANCH_RENDER, **PLAN_RENDER}
# what AgentAsTool answers its caller with (runtime.lifecycle.subagent): "... session ID]"
_CHILD = re.compile(r"\[sub-agent [^\]]*, session ([A-Za-z0-9_.:-]+)\]\s*$")
MESSAGE_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Decided:
    """What a ``tool.decision`` recorded: the call, the effect and who decided, and what the
    policy read (each argument's origins, the private data it carries)."""

    tool: str
    arguments: str  # JSON as the journal holds it (masked fields masked)
    effect: str
    reason: str
    policy_id: str
    origins: tuple[tuple[str, tuple[str, ...]], ...]
    labels: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class Turn:
    """A model turn: the request's new messages (role, text), or the answer and its calls."""

    step: int
    messages: tuple[tuple[str, str], ...] = ()
    answer: str | None = None
    calls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Row:
    """One event, drawn: its seq, type, group, the timeline's own lines for it, and the parts a
    page shows apart (``decided``, ``turn``, ``approval_id``, ``child_session``)."""

    seq: int
    type: str
    group: str
    timestamp: float
    lines: tuple[str, ...]
    noisy: bool = False
    call_id: str = ""
    decided: Decided | None = None
    turn: Turn | None = None
    approval_id: str = ""
    child_session: str = ""
    plan: str = ""  # under a side effect's decision: where the request plan asks for it


def rows(events: Sequence[Event]) -> list[Row]:
    """One row per event, in seq order."""
    charged = {str(e.data.get("call_id")) for e in events if e.type == EventType.SUBAGENT_CHARGE}
    out = []
    plan: Mapping[str, Any] | None = None  # what the request asks for, as the timeline reads it
    effects: set[str] = set()  # the side-effecting tools, from each one's first decision
    for event in events:
        row = _row(event, charged)
        if event.type in (EventType.SESSION_START, EventType.PLAN_AMENDED):
            plan = event.data.get("plan")
        elif row.decided is not None and plan is not None:
            if (event.data.get("resource") or {}).get("side_effect"):
                effects.add(row.decided.tool)
            if row.decided.tool in effects:
                row = replace(row, plan=asked_line(plan, row.decided.tool).strip())
        out.append(row)
    return out


def parent_of(events: Sequence[Event]) -> tuple[str, str] | None:
    """The (session, call) that started this session as a sub-agent, from its
    ``session.start`` context; None for a session nobody called."""
    if not events or events[0].type != EventType.SESSION_START:
        return None
    context = events[0].data.get("context") or {}
    parent = context.get("parent_session")
    return (str(parent), str(context.get("parent_call") or "")) if parent else None


def _row(event: Event, charged: set[str]) -> Row:
    data: Mapping[str, Any] = event.data
    render = _RENDER.get(event.type)
    if render is not None:
        lines = render(data)
    elif event.type == ERASED_TYPE:
        lines = [f"content erased ({data.get('type')}) by {data.get('erasure')}"]
    else:
        lines = [f"{event.type}: "
                 f"{excerpt(json.dumps(data, ensure_ascii=False, sort_keys=True))}"]
    call_id = str(data.get("call_id") or "")
    child = ""
    if event.type == EventType.TOOL_RESULT and call_id in charged:
        found = _CHILD.search(str(data.get("content") or ""))
        child = found.group(1) if found else ""
    return Row(event.seq, event.type, _GROUP.get(event.type, "other"), event.timestamp,
               tuple(lines), event.type in NOISY, call_id, _decided(event), _turn(event),
               str(data.get("approval_id") or ""), child)


def _decided(event: Event) -> Decided | None:
    if event.type != EventType.TOOL_DECISION:
        return None
    d = event.data
    dec = d.get("decision") or {}
    return Decided(str(d.get("tool")), json.dumps(d.get("arguments"), ensure_ascii=False,
                                                  sort_keys=True),
                   str(dec.get("effect")), str(dec.get("reason") or ""),
                   str(dec.get("policy_id") or ""),
                   tuple((k, tuple(sorted(v))) for k, v in sorted(
                       (d.get("provenance") or {}).items())),
                   tuple((k, tuple(v)) for k, v in sorted((d.get("labels") or {}).items())))


def _turn(event: Event) -> Turn | None:
    d = event.data
    if event.type == EventType.MODEL_REQUEST:
        messages = [(str(m.get("role")), excerpt(_text(m.get("content")), MESSAGE_CHARS))
                    for m in d.get("new") or [] if isinstance(m, Mapping)]
        if d.get("history") and messages:  # a thread's turns, named by the session's start
            messages.insert(1, ("thread", f"{d['history']} messages of the thread's earlier "
                                          "turns (the session's start names them)"))
        return Turn(int(d.get("step") or 0), tuple(messages))
    if event.type == EventType.MODEL_RESPONSE:
        r = d.get("response") or {}
        calls = tuple(f"{c.get('name')}({json.dumps(c.get('arguments'), ensure_ascii=False)})"
                      for c in r.get("tool_calls") or [])
        return Turn(int(d.get("step") or 0), answer=excerpt(r.get("text") or "", MESSAGE_CHARS),
                    calls=calls)
    return None


def _text(content: object) -> str:
    """A message's content as text: a string as is, parts (text, images) by their text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", f"[{p.get('type')}]")) if isinstance(p, Mapping)
                        else str(p) for p in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False)
