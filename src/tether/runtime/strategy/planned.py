"""A strategy's own calls, from a plan it validated: how they are built, and what it can read back.

Why: a strategy that plans (LLM+P: the model writes a problem, a symbolic planner solves it, a
validator checks the plan) runs the *planner's* actions, which no model turn asked for. They must
still pass exactly the gate a model's call passes — resolve and validate, loop check, budget,
policy decision, approval, effect ledger, journal, provenance — so they are journaled first as
the strategy's own turn (``strategy.calls``: the reason, and the calls with ids of their own,
``planned_<turn>_<index>``), folded into the conversation as an assistant message carrying the
calls (the provider sees each call before its result), and then run by the same ``ToolCalls``.

Decision: the ids are derived from the journal (how many planned turns came before), so a rerun
makes the same ids and is answered from the record, and a resumed session never runs a call
whose result is journaled (the effect ledger is keyed by call id). A strategy resumes from
``history``: its notes, its planned calls and the model's turns, with their results, in journal
order — it continues its plan from there instead of starting again (and so never repeats a step
that ran).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState
from tether.types import PLANNED_CALL_PREFIX, ToolCall, detached


@dataclass(frozen=True, slots=True)
class Note:
    """A strategy note (``Handle.record``) as journaled."""

    kind: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PlannedCalls:
    """One ``Handle.call_planned`` turn: why, the calls, and each one's result (None: none yet —
    it waits for approval, or for an operator after a crash)."""

    reason: str
    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult | None, ...]


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One of the model's answers in the conversation (``Handle.ask_model``), as journaled: its
    text and the calls it asked for, each with its result (None: none yet). What a strategy
    resumed after a crash reads to tell a phase whose answer it already has from one it must
    still ask for, and to reuse what a call already brought back instead of calling again."""

    text: str
    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult | None, ...]


Entry = Note | PlannedCalls | ModelTurn


def planned_turn(calls: Sequence[tuple[str, Mapping[str, Any]]], reason: str,
                 state: SessionState) -> tuple[ToolCall, ...]:
    """The calls as the gate will see them, each with its id; ValueError for what cannot be a
    call (no tool name, arguments that are not a JSON object, no reason)."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidArgument("call_planned needs a reason (e.g. 'plan step 2/5: (stack a b)'): it "
                              "is journaled with the calls")
    if isinstance(calls, str | bytes) or not calls:
        raise InvalidArgument("call_planned takes a non-empty sequence of (tool name, arguments)")
    turn = 1 + sum(kind == "calls" for kind, _ in state.strategy_log)
    out = []
    for i, item in enumerate(calls, start=1):
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidArgument(f"planned call {i} is {item!r}, not a (tool name, arguments) "
                                  "pair")
        name, arguments = item
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"planned call {i} has no tool name")
        if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
            raise InvalidArgument(f"planned call {i} ({name}): arguments must be a JSON object")
        out.append(ToolCall(f"{PLANNED_CALL_PREFIX}{turn}_{i}", name, detached(dict(arguments))))
    return tuple(out)


def history(state: SessionState) -> tuple[Entry, ...]:
    """The strategy's notes, planned turns and the model's turns so far, in journal order."""
    out: list[Entry] = []
    results = state.planned
    for kind, entry in state.strategy_log:
        if kind == "note":
            out.append(Note(entry[0], entry[1]))
        elif kind == "turn":
            text, calls = entry
            out.append(ModelTurn(text, calls, tuple(results.get(c.id) for c in calls)))
        else:
            reason, calls = entry
            out.append(PlannedCalls(reason, calls, tuple(results.get(c.id) for c in calls)))
    return tuple(out)
