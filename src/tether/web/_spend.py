"""Spend against each limit over a session's life, as a small server-drawn SVG chart.

Why: "what did it spend, and how close did it come to each limit?" is asked of every session;
a line per limit (tokens, cost, steps, tool calls) answers it at a glance. The spend at each
event is the runtime's own: the session's state folded event by event
(``tether.runtime.record.state``), the very tally a resumed session starts from — never a
second sum that could disagree with it.

Decision: the chart is SVG drawn on the server (no script), coloured by classes from
``static/timeline.css`` (the console's content-security policy forbids inline style). Each
limit the session has is drawn as a share of that limit (the top of the chart is the limit);
a measure without a limit is drawn as a share of its own final value, and its legend says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from tether.runtime.record.revive import revive
from tether.runtime.record.state import SessionState
from tether.types import Event
from tether.vocabulary import EventType

MEASURES = (("tokens", "max_tokens"), ("cost_usd", "max_cost_usd"), ("steps", "max_steps"),
            ("tool_calls", "max_tool_calls"))
WIDTH, HEIGHT, PAD = 600, 120, 4


@dataclass(frozen=True, slots=True)
class Point:
    """The session's spend just after event ``seq``."""

    seq: int
    tokens: int
    cost_usd: Decimal
    steps: int
    tool_calls: int


@dataclass(frozen=True, slots=True)
class Line:
    """One measure's line: its name, its limit (None: none), its last value, SVG points."""

    measure: str
    limit: str | None
    last: str
    points: str


def series(events: Sequence[Event]) -> list[Point]:
    """Spend after each event, as the runtime folds the journal."""
    state = SessionState()
    out: list[Point] = []
    for event in events:
        # an erased or foreign event leaves the spend as it was
        with contextlib.suppress(KeyError, TypeError, ValueError):
            state.apply(event.type, revive(event.type, event.data))
        t = state.tally
        out.append(Point(event.seq, t.usage.input_tokens + t.usage.output_tokens, t.cost,
                         t.steps, t.tool_calls))
    return out


def lines(events: Sequence[Event]) -> list[Line]:
    """The chart's lines: one per measure that moved or has a limit."""
    points = series(events)
    if not points:
        return []
    budget = events[0].data.get("budget") or {} if events[0].type == EventType.SESSION_START \
        else {}
    out = []
    for measure, key in MEASURES:
        values = [float(getattr(p, measure)) for p in points]
        limit = budget.get(key)
        top = float(limit) if limit else max(values)
        if not top:
            continue
        step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
        coords = " ".join(
            f"{PAD + i * step:.1f},{HEIGHT - PAD - min(v / top, 1.0) * (HEIGHT - 2 * PAD):.1f}"
            for i, v in enumerate(values))
        out.append(Line(measure, None if limit is None else str(limit),
                        str(getattr(points[-1], measure)), coords))
    return out
