"""The spans a journal's derivation builds: finished records, the span being built, and the
small readings of journaled data every handler shares.

Why apart from ``tether.journal.views.spans``: the derivation's handlers (what each event does
to the spans) are the part that grows with the conventions; what a span is, and how an event's
data is read, stay put.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from tether.journal.views import genai as g
from tether.records import fast_init
from tether.tracing import TraceParent
from tether.types import Event

loads: Callable[[str], Any] | None
try:
    loads = importlib.import_module("orjson").loads
except ImportError:  # pragma: no cover (an optional speed-up)
    loads = None

Attributes = Mapping[str, Any]
_LIMITS = (("tokens", "max_tokens"), ("cost_usd", "max_cost_usd"), ("steps", "max_steps"),
           ("tool_calls", "max_tool_calls"), ("seconds", "max_seconds"))
_FRACTIONAL = frozenset({"cost_usd", "seconds"})


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


SpanMaker = Callable[..., Any]
"""What builds a finished span from ``SpanRecord``'s fields, in its order: ``SpanRecord``
itself, or (``tether.observe``) a maker of SDK spans that skips the record."""


class OpenSpan:
    """A span being built."""

    __slots__ = ("attributes", "context", "events", "kind", "links", "name", "parent",
                 "start_ns")

    def __init__(self, name: str, context: TraceParent, parent: TraceParent | None, kind: str,
                 start_ns: int, attributes: dict[str, Any],
                 links: tuple[TraceParent, ...] = ()) -> None:
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.start_ns = start_ns
        self.attributes = attributes
        self.links = links
        self.events: list[tuple[str, int, Attributes]] | None = None

    def close(self, make: SpanMaker, end_ns: int, error: str = "") -> Any:
        return make(self.name, self.context, self.parent, self.kind, self.start_ns, end_ns,
                    self.attributes, error, self.links,
                    tuple(self.events) if self.events else ())


def limits_of(budget: object) -> tuple[tuple[str, str, float, bool], ...]:
    """The limits a journaled budget sets, as (spend key, attribute, cap, fractional)."""
    if not isinstance(budget, Mapping):
        return ()
    out = []
    for name, limit in _LIMITS:
        try:
            out.append((name, g.BUDGET_LEFT + name, float(budget[limit]), name in _FRACTIONAL))
        except (KeyError, TypeError, ValueError):  # not set (None), or not a number
            continue
    return tuple(out)


def is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, a decoded dict's answer found without the ABC's check
    (the worker asks it of every decision)."""
    return type(value) is dict or isinstance(value, Mapping)


def data_of(event: Event) -> Any:
    """An event's data, decoded from the JSON text it carries with ``orjson`` when that is
    installed (``tether[otel]``: about four times faster than the standard library on events
    this size), else as ``event.data``; both give the same values."""
    text = event._json
    if text and loads is not None:
        try:
            return loads(text)
        except ValueError:  # an integer past 64 bits (orjson's error is a ValueError): the
            return event.data  # standard library's
    return event.data


def ns_of(event: Event) -> int:
    return int(event.timestamp * 1e9)


def budget_left(limits: tuple[tuple[str, str, float, bool], ...],
          spend: Mapping[str, Any]) -> dict[str, Any]:
    """What each of a budget's ``limits`` (``limits_of``) has left after ``spend``."""
    left: dict[str, Any] = {}
    for name, attribute, cap, fractional in limits:
        used = spend.get(name)
        if used is None:
            continue
        try:
            remaining = cap - float(used)  # a Decimal is journaled as a string
        except (TypeError, ValueError):
            continue
        if remaining < 0:
            remaining = 0.0
        left[attribute] = remaining if fractional else int(remaining)
    return left


def fold_spans(make: Callable[..., Any], events: Iterable[Event], *,
               content: bool = False) -> list[SpanRecord]:
    """Every span of one session's events, in the order they finish, by the deriver ``make``
    builds (called with the session's id and ``content=``; it has ``feed`` and ``finish``)."""
    deriver: Any = None
    done: list[SpanRecord] = []
    last: Event | None = None
    for event in events:
        if deriver is None:
            deriver = make(event.session_id, content=content)
        done.extend(deriver.feed(event))
        last = event
    if deriver is not None:
        done.extend(deriver.finish(last))
    return done
