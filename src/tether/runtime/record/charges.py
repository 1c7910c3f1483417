"""The events that charge a session, folded: answered, failed and lost model calls, a compaction's
summary call, the planner's call, a sub-agent's spend, a tool's sampling call.

Why its own module: what a session has spent (its ``Tally``) and which model call is still in
flight (charged at its reservation if its process dies) is a concern apart from what the session
said and did — the conversation, the open turn, the outcome — which ``tether.runtime.record.state``
folds; kept together, the rules for charging a call read in one place.

Decision: these are handlers of the one projection, ``SessionState``, as its own methods are —
the same handlers for the live session and for ``fold`` — and they touch only its ``tally``,
``in_flight`` and ``planning``, which ``Charged`` names: the state imports this module, never
the other way round, so the two read without an import circle. A tool call is counted where its
decision or approval is folded (``state``): the charge belongs with the gate's decision, not with
the money.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Protocol

from tether.runtime.accounting.accountant import Tally
from tether.types import ModelResponse, Usage
from tether.vocabulary import EventType


class Charged(Protocol):
    """What of a session's state its charges touch (``SessionState`` has these and more)."""

    tally: Tally
    in_flight: Mapping[str, Any] | None
    planning: tuple[str, Mapping[str, Any]] | None


def answered(state: Charged, data: Mapping[str, Any]) -> ModelResponse:
    """An answered model call (a turn's or a branch's): a step, its usage and cost, and
    how far its input went past the estimate (later estimates are scaled by it)."""
    state.in_flight = None
    r: ModelResponse = data["response"]
    t = state.tally
    t.steps += 1
    t.usage = t.usage + r.usage
    t.cost += Decimal(data["cost_usd"])
    reserved = data["reserved_input"]
    if reserved and r.usage.input_tokens > reserved:
        t.input_scale *= r.usage.input_tokens / reserved
    return r


def failed(state: Charged, data: Mapping[str, Any]) -> None:
    """A model call that raised: a step, with nothing reported to charge."""
    state.in_flight = None
    state.tally.steps += 1


def lost(state: Charged, data: Mapping[str, Any]) -> None:
    """A model call whose real usage is unknown — its answer died with its process, it was
    cancelled by the time budget, or its reported usage was unusable: charged at its
    reservation, since the provider may well have billed it."""
    state.in_flight = None
    t = state.tally
    t.steps += 1
    t.usage = t.usage + Usage(data["input_tokens"], data["output_tokens"], 0)
    t.cost += Decimal(data["cost_usd"])


def subagent(state: Charged, data: Mapping[str, Any]) -> None:
    """A sub-agent's spend becomes this session's."""
    t = state.tally
    t.usage = t.usage + Usage(data["input_tokens"], data["output_tokens"],
                              data["cached_input_tokens"])
    t.cost += Decimal(data["cost_usd"])
    t.steps += data["steps"]
    t.tool_calls += data["tool_calls"]


SUMMARY_CALL = "compaction"  # the ``purpose`` of an in-flight call that is a summary's


def summary_asked(state: Charged, data: Mapping[str, Any]) -> None:
    """A compaction's summary call (tether.runtime.context.compactor): in flight until answered, so
    a crash or an interruption during it charges its reservation like any lost call — marked as
    a summary's, whose charge is not a step (``tether.runtime.lifecycle.interrupt.lost_call``)."""
    state.in_flight = {**data, "purpose": SUMMARY_CALL}


def summary_charged(state: Charged, data: Mapping[str, Any]) -> None:
    """A summary call's outcome, charged (tokens and cost; it is not a step)."""
    state.in_flight = None
    t = state.tally
    t.usage = t.usage + Usage(data["input_tokens"], data["output_tokens"],
                              data["cached_input_tokens"], data.get("cache_write_tokens", 0))
    t.cost += Decimal(data["cost_usd"])


def plan_asked(state: Charged, data: Mapping[str, Any]) -> None:
    """The planner's call (tether.runtime.lifecycle.planning), reserved and sent: not in flight as a
    turn is — an interruption or a crash is charged this reservation by the planner's own
    ``plan.error`` (at once, or on resume), since a lost turn's charge counts a step and the
    planner's call is none."""
    state.planning = (EventType.PLAN_REQUEST, data)


def plan_charged(state: Charged, data: Mapping[str, Any]) -> None:
    """The planner's call answered (``plan.response``): charged, not a step."""
    state.planning = (EventType.PLAN_RESPONSE, data)
    _charge(state, data)


def plan_failed(state: Charged, data: Mapping[str, Any]) -> None:
    """The planner's call gave no usable answer (``plan.error``): charged what it may have
    been billed (its reservation, or nothing when it was never sent), not a step."""
    state.planning = (EventType.PLAN_ERROR, data)
    _charge(state, data)


def sampling_sent(state: Charged, data: Mapping[str, Any]) -> None:
    """A tool's sampling call (``tether.runtime.chokepoint.asks``), sent: charged at its
    reservation until its outcome replaces that (so a call whose answer died with the process
    stays charged what the provider may well have billed). Not a step."""
    t = state.tally
    t.usage = t.usage + Usage(data["reserved_input"], data["max_output_tokens"] or 0, 0)
    t.cost += Decimal(data["reserved_cost_usd"])


def sampled(state: Charged, data: Mapping[str, Any]) -> None:
    """A sampling call's outcome (``sampling.response`` / ``sampling.error``): its reservation
    (``reserved``) taken back, what it is charged added."""
    held = data["reserved"]
    t, u = state.tally, state.tally.usage
    t.usage = Usage(u.input_tokens - held["input_tokens"] + data["input_tokens"],
                    u.output_tokens - held["output_tokens"] + data["output_tokens"],
                    u.cached_input_tokens + data["cached_input_tokens"],
                    u.cache_write_tokens + data.get("cache_write_tokens", 0))
    t.cost += Decimal(data["cost_usd"]) - Decimal(held["cost_usd"])


def _charge(state: Charged, data: Mapping[str, Any]) -> None:
    t = state.tally
    t.usage = t.usage + Usage(data["input_tokens"], data["output_tokens"],
                              data["cached_input_tokens"], data.get("cache_write_tokens", 0))
    t.cost += Decimal(data["cost_usd"])
