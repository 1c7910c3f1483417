"""Metric points derived from the journal: the GenAI client histograms and tether's counters.

Why: metrics, like spans, are a view over the record. The conventions' two client histograms
(token usage, operation duration) are read off the finished ``chat`` spans, so a duration is
exactly its span's; tether's counters (decisions by effect, stops by reason, approvals by
outcome, budget overruns, the input estimate's error) are read off the events that record
them. ``tether.observe`` records the points into OpenTelemetry instruments; nothing here
imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from tether.journal.payloads import (
    ModelOverrunData,
    ModelResponseData,
    SessionEndData,
    ToolDecisionData,
)
from tether.journal.views import genai as g
from tether.journal.views.span_records import SpanRecord, data_of
from tether.types import Event
from tether.vocabulary import EventType


@dataclass(frozen=True, slots=True)
class Point:
    """One measurement: add ``value`` to counter ``name``, or record it in histogram ``name``."""

    name: str
    value: float
    attributes: Mapping[str, Any]


Measure = tuple[str, float, dict[str, Any]]
"""A point as the live sink records it: (name, value, attributes), no object around it."""


def span_points(span: SpanRecord) -> list[Point]:
    """The client histograms' points of a finished ``chat`` span (none for other spans)."""
    return [Point(*m) for m in chat_measures(span.attributes, span.start_ns, span.end_ns)]


def chat_measures(a: Mapping[str, Any], start_ns: int, end_ns: int) -> list[Measure]:
    """``span_points`` of a span with attributes ``a`` from ``start_ns`` to ``end_ns``."""
    if a.get(g.OPERATION) != g.CHAT:
        return []
    common = {g.OPERATION: g.CHAT, g.PROVIDER: a.get(g.PROVIDER, g.OTHER_PROVIDER),
              g.REQUEST_MODEL: a.get(g.REQUEST_MODEL, "")}
    if g.RESPONSE_MODEL in a:
        common[g.RESPONSE_MODEL] = a[g.RESPONSE_MODEL]
    duration = {**common, g.ERROR_TYPE: a[g.ERROR_TYPE]} if g.ERROR_TYPE in a else common
    points: list[Measure] = [(g.OPERATION_DURATION, (end_ns - start_ns) / 1e9, duration)]
    if g.INPUT_TOKENS in a:
        points.append((g.TOKEN_USAGE, a[g.INPUT_TOKENS], {**common, g.TOKEN_TYPE: "input"}))
        points.append((g.TOKEN_USAGE, a[g.OUTPUT_TOKENS], {**common, g.TOKEN_TYPE: "output"}))
    return points


def event_points(event: Event) -> list[Point]:
    """tether's counters for one event (none for most events)."""
    if event.type not in COUNTED:
        return []
    return [Point(*m) for m in event_measures(event.type, data_of(event))]


def event_measures(kind: str, data: Any) -> list[Measure]:
    """``event_points`` of an event of type ``kind`` (one of ``COUNTED``) with ``data``."""
    if kind == EventType.TOOL_DECISION:
        decided = cast(ToolDecisionData, data)
        decision = decided.get("decision") or {}
        return [(g.DECISIONS, 1, {g.DECISION_EFFECT: str(decision.get("effect", "")),
                                  g.TOOL_NAME: str(decided.get("tool", ""))})]
    if kind in (EventType.SESSION_END, EventType.SESSION_PAUSED):
        return [(g.STOPS, 1, {g.STOP_REASON: str(cast(SessionEndData, data).get("reason", "")),
                              g.PAUSED: kind == EventType.SESSION_PAUSED})]
    if kind == EventType.MODEL_OVERRUN:
        return [(g.OVERRUNS, 1, {g.LIMIT: str(cast(ModelOverrunData, data).get("limit", ""))})]
    if kind == EventType.MODEL_RESPONSE:
        return _estimate_error(cast(ModelResponseData, data))
    return [(g.APPROVALS, 1, {g.APPROVAL_OUTCOME: kind.rsplit(".", 1)[1]})]


def _estimate_error(data: ModelResponseData) -> list[Measure]:
    """How far the runtime's input estimate was from the provider's count, as a fraction of
    the count (+0.1: the estimate was 10% high), for calls the provider counted."""
    response = data.get("response") or {}
    usage = response.get("usage") or {}
    reported, estimated = usage.get("input_tokens"), data.get("reserved_input")
    if usage.get("estimated") or not isinstance(reported, int) or reported <= 0 \
            or not isinstance(estimated, int) or estimated <= 0:
        return []
    return [(g.ESTIMATE_ERROR, (estimated - reported) / reported,
             {g.REQUEST_MODEL: str(response.get("model", ""))})]


# the event types some counter or histogram reads (``event_measures``)
COUNTED = frozenset({EventType.TOOL_DECISION, EventType.SESSION_END, EventType.SESSION_PAUSED,
                      EventType.MODEL_OVERRUN, EventType.MODEL_RESPONSE,
                      EventType.APPROVAL_REQUESTED, EventType.APPROVAL_GRANTED,
                      EventType.APPROVAL_REFUSED})
