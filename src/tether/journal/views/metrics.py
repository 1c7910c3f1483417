"""Run metrics, read off journals: why runs end, how often they recover, what they cost.

Why: an evaluation and production traffic must be measured by the same ruler, or a number from
one says nothing about the other. Both are sessions in a store, so the metrics are a pure
function of journals: ``session_facts`` reads one session's events into a small record, and
``RunMetrics.of`` aggregates any number of them. Nothing here calls a model or a tool.

Definitions (each over ended sessions; a paused or open one is counted as ``unfinished``):
completion — stopped ``finished``; loop — ``loop_detected``; budget stop — any budget reason,
also counted per limit; recovery — of the runs that hit a failed tool call (error or timeout),
the share that still finished; tool error rate — failed calls over calls that ran; denial rate —
calls refused (by the policy, or by an approver) over calls decided, as the runtime's own denial
ceiling counts them; approval rate — calls that needed approval over calls decided; estimate
error — per model call, (reported input tokens - reserved) / reserved.

Only the events a figure needs are decoded (results, responses, the end): decoding a journal's
JSON is most of what reading it costs, and an evaluation reads every trial's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from tether.errors import InvalidArgument
from tether.journal.payloads import (
    ModelResponseData,
    SessionEndData,
    SessionPausedData,
    ToolResultData,
)
from tether.types import Event
from tether.vocabulary import EventType

BUDGET_REASONS = ("step_budget", "token_budget", "cost_budget", "time_budget",
                  "tool_call_budget")
FAILED = frozenset({"error", "timeout"})
RAN = frozenset({"ok", "error", "timeout"})


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What one session's journal says about how it went."""

    session_id: str
    status: str  # "ended", "paused" or "open"
    stop_reason: str | None
    cost_usd: Decimal
    tokens: int
    steps: int
    tool_calls: int  # calls that ran
    tool_errors: int
    decided: int  # calls a policy decided
    denied: int
    approvals_requested: int
    approvals_granted: int
    seconds: float  # active seconds, as the session's spend records them
    estimate_errors: tuple[float, ...] = ()

    @property
    def hit_tool_error(self) -> bool:
        return self.tool_errors > 0


def session_facts(events: Sequence[Event]) -> SessionFacts:
    """The facts of one session, from its events in order."""
    if not events or events[0].type != EventType.SESSION_START:
        raise InvalidArgument("a session's events start with session.start")
    status, reason, spend = "open", None, None
    ran = errors = decided = denied = requested = granted = 0
    estimate: list[float] = []
    for event in events:
        kind = event.type
        if kind == EventType.TOOL_RESULT:
            status_of = cast(ToolResultData, event.data).get("status")
            ran += status_of in RAN
            errors += status_of in FAILED
            denied += status_of == "denied"
        elif kind == EventType.TOOL_DECISION:
            decided += 1
        elif kind == EventType.APPROVAL_REQUESTED:
            requested += 1
        elif kind == EventType.APPROVAL_GRANTED:
            granted += 1
        elif kind == EventType.MODEL_RESPONSE:
            data = cast(ModelResponseData, event.data)
            reserved = data.get("reserved_input") or 0
            reported = data["response"]["usage"]["input_tokens"]
            if reserved > 0:
                estimate.append((reported - reserved) / reserved)
        elif kind == EventType.SESSION_END:
            ended = cast(SessionEndData, event.data)
            status, reason, spend = "ended", ended["reason"], ended.get("spend")
        elif kind == EventType.SESSION_PAUSED:
            paused = cast(SessionPausedData, event.data)
            status, reason, spend = "paused", paused["reason"], paused.get("spend")
        elif kind == EventType.SESSION_RESUMED:
            status, reason = "open", None
    spend = spend or {}
    return SessionFacts(
        events[0].session_id, status, reason, Decimal(str(spend.get("cost_usd", "0"))),
        int(spend.get("tokens", 0)), int(spend.get("steps", 0)), ran, errors, decided, denied,
        requested, granted, float(spend.get("seconds", 0.0)), tuple(estimate))


@dataclass(frozen=True, slots=True)
class Distribution:
    p50: float
    p95: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        ordered = sorted(values)
        if not ordered:
            return cls(0.0, 0.0, 0.0)
        return cls(_quantile(ordered, 0.5), _quantile(ordered, 0.95), ordered[-1])

    def to_dict(self) -> dict[str, float]:
        return {"p50": self.p50, "p95": self.p95, "max": self.max}


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def rate(part: int, whole: int) -> float:
    """``part`` of ``whole``, 0 when there is nothing to take a share of."""
    return part / whole if whole else 0.0


@dataclass(frozen=True, slots=True)
class RunMetrics:
    sessions: int
    unfinished: int  # paused or still open
    completion_rate: float
    loop_rate: float
    budget_stop_rate: float
    budget_stops: Mapping[str, int]
    recovery_rate: float
    tool_error_rate: float
    denial_rate: float
    approval_rate: float
    stop_reasons: Mapping[str, int]
    cost_usd: Distribution
    tokens: Distribution
    steps: Distribution
    tool_calls: Distribution
    seconds: Distribution
    estimate_error: Distribution

    @classmethod
    def of(cls, facts: Iterable[SessionFacts]) -> RunMetrics:
        every = list(facts)
        ended = [f for f in every if f.status == "ended"]
        reasons: dict[str, int] = {}
        for f in ended:
            assert f.stop_reason is not None
            reasons[f.stop_reason] = reasons.get(f.stop_reason, 0) + 1
        budget = {r: reasons[r] for r in BUDGET_REASONS if r in reasons}
        hurt = [f for f in ended if f.hit_tool_error]
        ran = sum(f.tool_calls for f in ended)
        decided = sum(f.decided for f in ended)
        return cls(
            sessions=len(every), unfinished=len(every) - len(ended),
            completion_rate=rate(reasons.get("finished", 0), len(ended)),
            loop_rate=rate(reasons.get("loop_detected", 0), len(ended)),
            budget_stop_rate=rate(sum(budget.values()), len(ended)),
            budget_stops=budget,
            recovery_rate=rate(sum(f.stop_reason == "finished" for f in hurt), len(hurt)),
            tool_error_rate=rate(sum(f.tool_errors for f in ended), ran),
            denial_rate=rate(sum(f.denied for f in ended), decided),
            approval_rate=rate(sum(f.approvals_requested for f in ended), decided),
            stop_reasons=dict(sorted(reasons.items())),
            cost_usd=Distribution.of(float(f.cost_usd) for f in ended),
            tokens=Distribution.of(f.tokens for f in ended),
            steps=Distribution.of(f.steps for f in ended),
            tool_calls=Distribution.of(f.tool_calls for f in ended),
            seconds=Distribution.of(f.seconds for f in ended),
            estimate_error=Distribution.of(e for f in ended for e in f.estimate_errors),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            out[name] = value.to_dict() if isinstance(value, Distribution) else (
                dict(value) if isinstance(value, Mapping) else value)
        return out

    def table(self) -> list[tuple[str, str]]:
        """The metrics as (name, value) rows for a person."""
        def pct(x: float) -> str:
            return f"{100 * x:.1f}%"

        def dist(d: Distribution, fmt: str = "{:.0f}") -> str:
            return " / ".join(fmt.format(v) for v in (d.p50, d.p95, d.max))

        by_limit = ", ".join(f"{k} {v}" for k, v in self.budget_stops.items()) or "none"
        return [
            ("sessions (ended / unfinished)", f"{self.sessions - self.unfinished} / "
                                              f"{self.unfinished}"),
            ("completion rate", pct(self.completion_rate)),
            ("loop rate", pct(self.loop_rate)),
            ("budget-stop rate", f"{pct(self.budget_stop_rate)} ({by_limit})"),
            ("recovery rate (finished after a tool error)", pct(self.recovery_rate)),
            ("tool error rate", pct(self.tool_error_rate)),
            ("denial rate", pct(self.denial_rate)),
            ("approval rate", pct(self.approval_rate)),
            ("cost USD p50 / p95 / max", dist(self.cost_usd, "{:.4f}")),
            ("tokens p50 / p95 / max", dist(self.tokens)),
            ("steps p50 / p95 / max", dist(self.steps)),
            ("tool calls p50 / p95 / max", dist(self.tool_calls)),
            ("latency s p50 / p95 / max", dist(self.seconds, "{:.3f}")),
            ("input estimate error p50 / p95 / max", dist(self.estimate_error, "{:+.2f}")),
        ]
