"""What an interruption leaves behind: a pause, never worse than a crash.

Why: a run stopped from outside — Ctrl-C, SIGTERM or a closed terminal at ``tether run``,
``Session.cancel()``, a cancelled ``arun()`` task — used to end the session as ``cancelled``: a
side effect in flight was left with nothing saying its outcome is unknown, and the session could
not be resumed, while ``kill -9`` at the same point left a journal that resumes and asks an
operator about the effect. The gentler stop must not be the worse one.

Decision: an interruption pauses the session, and the pause names what it waits for, as every
pause does. When a call that needs an operator (``effects.needs_operator``: the rule resume
applies after a crash) had started and has no result, the reason is ``uncertain_effect`` and the
pause lists the call, exactly what resuming after ``kill -9`` records; otherwise the reason is
``interrupted``, which waits for nobody: ``resume()`` goes on where the run stopped. A model call
in flight is charged at its reservation at once (``model.unmetered``; a summary call's by its
``compaction.error``, not a step), like a call the time budget cancels. Everything here is
synchronous, so a second interruption cannot land inside the pause: it lands after the pause is
durable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.chokepoint.effects import needs_operator
from tether.runtime.record.charges import SUMMARY_CALL
from tether.runtime.record.state import SessionState
from tether.tools.registry import ToolRegistry
from tether.vocabulary import EventType


def uncertain_calls(state: SessionState, registry: ToolRegistry) -> list[str]:
    """Ids of the open turn's calls that started, have no result, and wait for an operator."""
    waiting = []
    for call in state.turn:
        if call.id not in state.started or call.id in state.results:
            continue
        decided = state.decisions.get(call.id)
        tool = registry.get(decided["tool"]) if decided is not None else None
        if call.id not in state.settled and needs_operator(tool, call.id in state.granted):
            waiting.append(call.id)
    return waiting


def interruption(state: SessionState, registry: ToolRegistry, why: str) -> Stop:
    """The pause an interruption (``why``: the signal, ``Session.cancel()``...) comes to."""
    uncertain = uncertain_calls(state, registry)
    if uncertain:
        return Stop(StopReason.UNCERTAIN_EFFECT,
                    f"interrupted ({why}) while call(s) {uncertain} ran; each may or may not "
                    "have taken effect, and an operator must settle each: retry or skip")
    return Stop(StopReason.INTERRUPTED,
                f"interrupted ({why}); no side effect was left uncertain, so resuming goes on "
                "where the run stopped")


def lost_call_charge(in_flight: Mapping[str, Any]) -> dict[str, Any]:
    """The charge for a model request that has no answer (``model.lost``/``model.unmetered``
    data): what was reserved for it, since the provider may well have billed it."""
    return {"step": in_flight["step"], "input_tokens": in_flight["reserved_input"],
            "output_tokens": in_flight["max_output_tokens"] or 0,
            "cost_usd": in_flight["reserved_cost_usd"]}


def lost_call(in_flight: Mapping[str, Any],
              error: str | None) -> tuple[EventType, dict[str, Any]]:
    """The event (type, data) that charges a call left with no answer: ``error`` names the
    interruption that cut it off (``model.unmetered``), or is None when a crash lost it
    (``model.lost``, journaled on resume); either counts a turn's step. A compaction's summary
    call is not a step: its charge is its own outcome, ``compaction.error`` marked ``lost``
    (the compaction is made again when the run goes on; a rerun, never interrupted, asks for
    that summary once and so does not replay the lost call)."""
    charge = lost_call_charge(in_flight)
    if in_flight.get("purpose") == SUMMARY_CALL:
        return EventType.COMPACTION_ERROR, {
            "step": charge["step"], "lost": True, "cached_input_tokens": 0,
            "error": error or "lost: the process stopped during the summary call",
            **{k: charge[k] for k in ("input_tokens", "output_tokens", "cost_usd")}}
    if error is None:
        return EventType.MODEL_LOST, charge
    return EventType.MODEL_UNMETERED, {**charge, "error": error}
