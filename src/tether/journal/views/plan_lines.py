"""Timeline lines for the request plan and the planner's call that may widen it.

Why: a person auditing a decision that let a side effect through reads "the request asks for
it"; they must see whether the rules read that in the request, or a model did (and what the
model read that was thrown out), without opening the raw events.

Decision: like the rest of the timeline, a pure function of the stored event data (the views
do not import the runtime that wrote it). An entry the planner added is marked ``[planner]``,
with the clause it was read in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tether.journal.payloads import (
    PlanAmendedData,
    SummaryErrorData,
    SummaryRequestData,
    SummaryResponseData,
)
from tether.journal.views.text import excerpt
from tether.vocabulary import EventType

EXCERPT = 70


def _short(text: object, limit: int = EXCERPT) -> str:
    return excerpt(text, limit)


def plan_lines(plan: Mapping[str, Any], title: str = "the request asks for") -> list[str]:
    """A journaled request plan: what it asks for (the planner's entries marked), what it
    names, and the clauses set aside."""
    asks = []
    for e in plan.get("entries") or []:
        count = f" ×{e.get('count')}" if e.get("count", 1) != 1 else ""
        mark = " [planner]" if e.get("by") == "model" else ""
        asks.append(f"{e.get('tool')}{count}{mark}")
    named = f"; it names {', '.join(plan['named'])}" if plan.get("named") else ""
    lines = [f"  {title}: {', '.join(asks) or 'no side effect'}{named}"]
    lines += [f"  set aside ({why}): {_short(clause)}" for clause, why in plan.get("aside") or []]
    return lines


def asked_line(plan: Mapping[str, Any], tool: str) -> str:
    """Which entries of the request plan ask for a side effect's tool, if any: the line under
    its decision."""
    clauses = [repr(_short(e.get("clause", ""), 100))
               + (f" (×{e.get('count')})" if e.get("count", 1) != 1 else "")
               + (" [planner]" if e.get("by") == "model" else "")
               for e in plan.get("entries") or [] if e.get("tool") == tool]
    if not clauses:
        return "  plan: the request does not ask for it"
    return f"  plan: asked in {'; '.join(clauses)}"


def _asked(d: SummaryRequestData) -> list[str]:
    return [f"planner call to {d.get('model')} (at most {d.get('max_output_tokens')} out "
            f"tokens): reads the request for {', '.join(d.get('tools') or []) or 'no tool'}"]


def _answered(d: SummaryResponseData) -> list[str]:
    return [f"planner answered: \"{_short(d.get('text') or '', 80)}\" ({d.get('input_tokens')} "
            f"in, {d.get('output_tokens')} out tokens, ${d.get('cost_usd')})"]


def _failed(d: SummaryErrorData) -> list[str]:
    tokens = (d.get("input_tokens") or 0) + (d.get("output_tokens") or 0)
    return [f"planner call failed: {_short(d.get('error', ''), 100)} (charged {tokens} tokens, "
            f"${d.get('cost_usd')}); {d.get('fallback') or 'the rules plan stands'}"]


def _amended(d: PlanAmendedData) -> list[str]:
    added = d.get("added") or []
    lines = [f"plan amended by the planner: {len(added)} ask(s) added, "
             f"{len(d.get('rejected') or [])} rejected"]
    lines += plan_lines(d.get("plan") or {}, "the request now asks for")
    lines += [f"  the planner added {e.get('tool')} [planner]: {_short(e.get('clause'))}"
              for e in added]
    lines += [f"  rejected: {_short(why, 110)}" for why in d.get("rejected") or []]
    return lines


PLAN_RENDER: dict[str, Callable[[Any], list[str]]] = {  # each given its event's payload
    EventType.PLAN_REQUEST: _asked,
    EventType.PLAN_RESPONSE: _answered,
    EventType.PLAN_ERROR: _failed,
    EventType.PLAN_AMENDED: _amended,
}
