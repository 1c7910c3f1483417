"""Policy what-if: ask a different policy every decision a journal recorded, and list changes.

Why: a policy change is a change to what agents may do. Before it ships, an operator wants to
know which real calls it would have decided differently — "the new rule would have refused 14
refunds last week, and let 2 wire transfers through without approval". The journal has what is
needed: each ``tool.decision`` event records the call's arguments (as the journal may show them),
the tool's metadata the policy saw (``resource``, on the first decision about each tool after
the session starts or resumes, since it cannot change in between), the step, taint and spend
(``context``), and the effect given; ``session.start`` records who asked (``subject``), the
caller's context and the budget, and the request plan (``plan.amended``: as a planner widened
it).

Decision: the request is rebuilt from those records only — never from today's tool registry or
today's clock — so the what-if asks the new policy exactly what the old one was asked: Subject
from ``session.start``, Action from the event's tool and arguments, Resource from the last
``resource`` recorded for that tool in that session, Context from its ``context`` (spend as
recorded, budget left derived from the session's budget) with the event's timestamp as the
time. Fields the old decision hid from the journal are gone for good; the new policy sees
``[masked]`` for them, and every change made under that blindness says so. A decision "changes"
when its effect does, or, for the effects that carry a shape (partial_allow, mask, degrade),
when its fields or fallback do. Pure: events and a policy in, a list of changes out; ``tether
rerun`` is a thin wrapper around it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from tether.errors import InvalidArgument
from tether.journal.payloads import PlanAmendedData, ToolDecisionData, ToolStartedData
from tether.journal.redaction import HIDDEN_MARKERS
from tether.policy.base import (
    Action,
    Context,
    Decision,
    Effect,
    MadeEffect,
    Policy,
    Resource,
    Subject,
    decide,
)
from tether.policy.plan import RequestPlan
from tether.types import PLANNED_CALL_PREFIX, Event
from tether.vocabulary import EventType

SHAPED = frozenset({Effect.PARTIAL_ALLOW, Effect.MASK, Effect.DEGRADE})


@dataclass(frozen=True, slots=True)
class Change:
    """One recorded decision the other policy would have made differently."""

    session_id: str
    seq: int
    call_id: str
    tool: str
    timestamp: float
    old: Decision
    new: Decision
    masked: tuple[str, ...] = ()  # argument fields the journal hid, so the what-if saw a marker

    def __str__(self) -> str:
        line = (f"{self.session_id} seq {self.seq} {self.tool} [{self.call_id}]: "
                f"{describe(self.old)} -> {describe(self.new)}: {self.new.reason}")
        if self.masked:
            line += (f" (arguments {', '.join(self.masked)} were masked in the journal; the "
                     "new policy saw [masked])")
        return line


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The outcome of a what-if over some events: every decision asked, and those that change."""

    decisions: int
    sessions: int
    changes: tuple[Change, ...]


def describe(decision: Decision) -> str:
    """``effect (policy id)``, with the fields or fallback of a shaped effect."""
    shape = ""
    if decision.effect in SHAPED:
        if decision.fallback:
            shape = f" to {decision.fallback}"
        elif decision.fields:
            shape = f" [{', '.join(decision.fields)}]"
    return f"{decision.effect.value}{shape} ({decision.policy_id or 'no policy id'})"


def what_if(events: Iterable[Event], policy: Policy) -> list[Change]:
    """Every recorded decision in ``events`` that ``policy`` would decide differently, in order.
    ``events`` may hold several sessions; each must include its ``session.start``."""
    return list(replay_decisions(events, policy).changes)


def replay_decisions(events: Iterable[Event], policy: Policy) -> WhatIf:
    starts: dict[str, Mapping[str, Any]] = {}
    resources: dict[tuple[str, str], Mapping[str, Any]] = {}  # (session, tool) -> last recorded
    asked = 0
    changes: list[Change] = []
    decided: dict[str, Mapping[str, Any]] = {}  # call id -> its recorded arguments
    effects: dict[str, tuple[MadeEffect, ...]] = {}  # session -> the side effects it made
    for event in events:
        if event.type == EventType.SESSION_START:
            starts[event.session_id] = event.data
            continue
        if event.type == EventType.PLAN_AMENDED and event.session_id in starts:  # the planner's
            amended = cast(PlanAmendedData, event.data)
            starts[event.session_id] = {**starts[event.session_id], "plan": amended["plan"]}
            continue
        if event.type == EventType.TOOL_STARTED:
            started = cast(ToolStartedData, event.data)
            call_id = started["call_id"]
            effects[event.session_id] = (*effects.get(event.session_id, ()), MadeEffect(
                call_id, started["tool"], decided.get(call_id, {})))
            continue
        if event.type != EventType.TOOL_DECISION:
            continue
        decided[event.data.get("call_id", "")] = event.data.get("arguments") or {}
        start = starts.get(event.session_id)
        if start is None:
            raise InvalidArgument(f"session {event.session_id}: a tool.decision (seq {event.seq}) "
                                  "comes before its session.start; pass each session's events from "
                                  "the first one")
        asked += 1
        old = recorded_decision(event.data["decision"])
        arguments = event.data.get("arguments") or {}
        key = (event.session_id, event.data["tool"])
        if event.data.get("resource"):
            resources[key] = event.data["resource"]
        new = decide(policy, subject_of(start), Action(event.data["tool"], arguments),
                     resource_of(event.data["tool"], resources.get(key)),
                     context_of(event, start, effects.get(event.session_id, ())))
        if _shape(new) != _shape(old):
            changes.append(Change(event.session_id, event.seq, event.data.get("call_id", ""),
                                  event.data["tool"], event.timestamp, old, new,
                                  masked_fields(arguments)))
    return WhatIf(asked, len(starts), tuple(changes))


def recorded_decision(data: Mapping[str, Any]) -> Decision:
    return Decision(Effect(data["effect"]), data.get("reason", ""), data.get("policy_id", ""),
                    tuple(data.get("fields", ())), tuple(data.get("mask_in", ())),
                    data.get("fallback"))


def subject_of(start: Mapping[str, Any]) -> Subject:
    who = start.get("subject") or {}
    return Subject(who.get("user_id"), who.get("tenant_id"), frozenset(who.get("roles") or ()),
                   start.get("agent") or "agent")


def resource_of(tool: str, recorded: Mapping[str, Any] | None) -> Resource:
    return Resource.from_dict(recorded) if recorded else Resource(tool)


def context_of(event: Event, start: Mapping[str, Any],
               effects: tuple[MadeEffect, ...] = ()) -> Context:
    data = cast(ToolDecisionData, event.data)
    seen = data.get("context") or {}
    spend = _numbers(seen.get("spend") or {})
    gateway = start.get("agent") == "gateway"  # a gateway's task is a label, not a request
    provenance = {name: frozenset(origins)  # recorded when the policy then read it
                  for name, origins in (data.get("provenance") or {}).items()}
    return Context(event.session_id, int(seen.get("step", 0)), spend,
                   _budget_left(start.get("budget") or {}, spend), bool(seen.get("tainted")),
                   event.timestamp, dict(start.get("context") or {}),
                   "" if gateway else str(start.get("request", start.get("task")) or ""),
                   provenance, str(data.get("call_id", "")).startswith(PLANNED_CALL_PREFIX),
                   effects, RequestPlan.from_dict(start["plan"]) if start.get("plan") else None,
                   {name: frozenset(kinds) for name, kinds in
                    (data.get("labels") or {}).items()})


def masked_fields(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(k for k, v in arguments.items()
                        if isinstance(v, str) and any(m in v for m in HIDDEN_MARKERS)))


def _shape(d: Decision) -> tuple[Any, ...]:
    if d.effect not in SHAPED:
        return (d.effect,)
    return (d.effect, tuple(sorted(d.fields)), tuple(sorted(d.mask_in)), d.fallback)


def _numbers(spend: Mapping[str, Any]) -> dict[str, Any]:
    """Spend as the live policy saw it: the journal keeps cost as a string, live it is a
    Decimal (a YAML ``spend: {cost_usd: ...}`` condition compares numbers)."""
    out = dict(spend)
    if isinstance(out.get("cost_usd"), str):
        with contextlib.suppress(InvalidOperation):
            out["cost_usd"] = Decimal(out["cost_usd"])
    return out


def _budget_left(budget: Mapping[str, Any], spend: Mapping[str, Any]) -> dict[str, Any]:
    """What was left of each limit when the decision was made (None for no limit)."""

    def left(limit_key: str, spend_key: str) -> Any:
        limit = budget.get(limit_key)
        used = spend.get(spend_key)
        if limit is None or used is None:
            return None
        if limit_key == "max_cost_usd":
            return Decimal(str(limit)) - Decimal(str(used))
        return limit - used

    return {"tokens": left("max_tokens", "tokens"), "cost_usd": left("max_cost_usd", "cost_usd"),
            "steps": left("max_steps", "steps"), "tool_calls": left("max_tool_calls", "tool_calls"),
            "seconds": left("max_seconds", "seconds")}
