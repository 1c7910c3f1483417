"""A strategy's doors beyond the model turn and the tool calls: planned calls, branches, notes.

Why its own module: the Environment is the chokepoint's machinery (reserve, call, charge,
record); these doors are what a strategy does *through* it — run calls from its own validated
plan (``tether.runtime.strategy.planned``), explore branches
(``tether.runtime.strategy.branching``), journal a note — and they grew to a third of it. Kept
apart, the Environment reads as the one path every call takes, and each door reads as the few steps
it adds.

Decision: each door is a function of the strategy's ``Seat`` (``tether.runtime.strategy.seat``:
the public protocol the Environment implements; no door reads its private fields), as
``strategy.branching`` is, and the session hands them to the strategy's ``Handle`` (``handle``);
the Environment has no method for them. Every door passes ``StopLatch``, as the Environment's own
doors do: after a stop it refuses at once, and a Stop raised inside it is remembered, so a
strategy that catches one can neither go on nor end the run another way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument
from tether.journal.chain import JournalValueError
from tether.runtime.accounting.stop import StopLatch
from tether.runtime.record.result import ToolResult
from tether.runtime.strategy import branching
from tether.runtime.strategy.handle import Handle
from tether.runtime.strategy.planned import history, planned_turn
from tether.types import Message, ModelResponse, ToolCall
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.strategy.seat import Seat


def handle(seat: Seat, task: str) -> Handle:
    """The strategy's handle on ``seat``: the model turn, the tool calls, the budget left, and
    this module's doors."""
    return Handle(seat.ask_model, seat.call_tools, seat.remaining_budget,
                  partial(record_note, seat), task, planned=partial(call_planned, seat),
                  history=partial(history, seat.state),
                  branch=(partial(ask_branch, seat), partial(call_branch, seat)))


def record_note(seat: Seat, kind: str, data: Mapping[str, Any]) -> None:
    """Journal a strategy's note (``Handle.record``); refused after a stop."""
    with StopLatch(seat):
        if not isinstance(kind, str) or not kind:
            raise InvalidArgument("a strategy note needs a kind, e.g. record('route', {...})")
        try:
            seat.record(EventType.STRATEGY_NOTE, {"kind": kind, "data": dict(data)})
        except JournalValueError as exc:
            raise InvalidArgument(f"the strategy note cannot be journaled: {exc}") from None


async def call_planned(seat: Seat, calls: Sequence[tuple[str, Mapping[str, Any]]],
                       reason: str) -> tuple[ToolResult, ...]:
    """Journal calls the strategy derived from its own validated plan as its turn, then run
    them through the same gate as a model's (see ``Handle.call_planned``)."""
    with StopLatch(seat):
        state = seat.state
        turn = planned_turn(calls, reason, state)
        seat.skip_unresolved("the strategy ran planned calls instead")
        flushed = state.outbox()
        journaled, history = state.journaled(flushed)  # a thread's turns: named by the start
        try:
            seat.record(EventType.STRATEGY_CALLS,
                        {"reason": reason, "flushed": journaled, "calls": turn,
                         **({"history": history} if history else {})})
        except JournalValueError as exc:
            raise InvalidArgument(f"the planned calls cannot be journaled: {exc}") from None
        seat.conversation_grew(flushed, turn)
        return await seat.run_calls(turn)


async def ask_branch(seat: Seat, key: str, messages: Sequence[Message], *,
                     tool_choice: str | None = None, cap: int | None = None,
                     tools: bool = True) -> ModelResponse:
    """One model call on a branch's own context (``tether.runtime.strategy.branching``)."""
    with StopLatch(seat):
        if tool_choice is not None or cap is not None:
            seat.check_turn(tool_choice, cap)
        return await branching.ask_branch(seat, key, messages, tool_choice, cap, tools)


async def call_branch(seat: Seat, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
    """A branch's calls: side-effect-free ones through the gate, the others simulated."""
    with StopLatch(seat):
        return await branching.call_branch(seat, calls)
