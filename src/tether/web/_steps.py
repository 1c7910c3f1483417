"""A session cut into steps, and two sessions aligned step by step: what the compare page shows.

Why: "where did these two runs part?" — a rerun against its original, two trials of one
evaluation task — is answered step by step: at step N, did both ask for the same calls, did the
policy decide them the same way, had they spent the same? Reading two timelines side by side
by seq does not answer it, since one extra event shifts every seq after it.

Decision: a step is a model turn (``model.request``'s step number; the events before the first
turn are step 0, the start). Each step keeps the calls asked (``call_text``, as the timeline
writes them), the decisions (tool, effect, policy id), the results' statuses and the spend after
it (the runtime's own fold, ``web._spend.series``). Two steps diverge on ``calls``,
``decisions`` or ``spend`` when those differ; a step one side never reached diverges on all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

from tether.journal.views.text import call_text
from tether.types import Event
from tether.vocabulary import EventType
from tether.web._spend import series

ASPECTS = ("calls", "decisions", "spend")


@dataclass(slots=True)
class Step:
    """What one step asked, what was decided and returned, and the spend after it."""

    number: int
    answer: str = ""
    calls: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    spend: str = ""


@dataclass(frozen=True, slots=True)
class Aligned:
    """Step ``number`` of both sessions (None: that side has no such step), and what differs."""

    number: int
    a: Step | None
    b: Step | None
    differs: tuple[str, ...]
    first: bool = False


def steps(events: Sequence[Event]) -> list[Step]:
    """The session's steps, in order (step 0: what came before the first model turn)."""
    out = [Step(0)]
    spent = {p.seq: p for p in series(events)}
    for event in events:
        d = event.data
        if event.type == EventType.MODEL_REQUEST and not d.get("final") \
                and int(d.get("step") or 0) != out[-1].number:
            out.append(Step(int(d.get("step") or 0)))
        now = out[-1]
        if event.type == EventType.MODEL_RESPONSE:
            r = d.get("response") or {}
            now.answer = str(r.get("text") or "")
            now.calls += [call_text(str(c.get("name")), c.get("arguments"))
                          for c in r.get("tool_calls") or []]
        elif event.type == EventType.TOOL_DECISION:
            dec = d.get("decision") or {}
            now.decisions.append(f"{d.get('tool')}: {dec.get('effect')} "
                                 f"({dec.get('policy_id') or 'no policy id'})")
        elif event.type == EventType.TOOL_RESULT:
            now.results.append(f"{d.get('tool')}: {d.get('status')}")
        point = spent[event.seq]
        now.spend = (f"{point.tokens} tokens, ${point.cost_usd}, {point.steps} steps, "
                     f"{point.tool_calls} tool calls")
    return out


def align(a: Sequence[Event], b: Sequence[Event]) -> list[Aligned]:
    """Both sessions' steps side by side, the first that differs marked ``first``."""
    out: list[Aligned] = []
    seen = False
    for left, right in zip_longest(steps(a), steps(b)):
        number = left.number if left is not None else right.number if right is not None else 0
        differs = ASPECTS if left is None or right is None else tuple(
            aspect for aspect in ASPECTS if getattr(left, aspect) != getattr(right, aspect))
        first = bool(differs) and not seen
        seen = seen or first
        out.append(Aligned(number, left, right, differs, first))
    return out
