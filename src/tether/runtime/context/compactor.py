"""The chokepoint's part in compaction: when to compact, the governed summary call, the record.

Why a turn shaper (``tether.runtime.chokepoint.shaper``): a recipe without compaction must not pay
for it on any step, so the session hands the Environment a ``Compactor`` only for a recipe that
has one, and the plain Environment's path is untouched. Before each model turn it asks the
Environment for the request's estimate (``TurnSeat.next_input``: as the reservation counts it, the
provider's own count where it gave one, tether's estimate for the rest) and, past the trigger,
replaces the old turns (``tether.runtime.context.compaction.plan``) before the turn's request is
journaled, then tells the Environment the conversation was rewritten.

Decision — everything a compaction does is an event, and the state is the fold of them:
``compaction.request`` (the summary call, reserved and durable before it is sent: a crash during
it is charged at its reservation on resume, as any lost call), ``compaction.response`` or
``compaction.error`` (its charge: tokens and cost, not a step), then ``context.compacted`` (the
range replaced, the digest of what it held, the message that took its place, the estimates
before and after, the strategy, and why a summary fell back to a drop). Resume folds the same
conversation; rerun replays the recorded summary and reports a compaction that differs.

The summary call is governed like any other (``tether.runtime.chokepoint.model_call``): reserved
through the accountant (at the summariser's price) with its output capped at ``summary_tokens``;
refused when it does not fit, when the summariser fails or when it returns nothing — then the turns
are dropped instead, and the event says why. A summariser that reports more than it was allowed is
an overrun: charged, journaled, and the run stops as after any overrun. The summariser is sent the
turns with every registered secret and every value a decision masked blanked (the summariser may be
another provider than the session's model), and what it writes is blanked of secrets again before it
is journaled or sent on: a summary never carries a secret.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tether.models.base import Model
from tether.runtime.accounting.accountant import Reservation
from tether.runtime.accounting.stop import Stop
from tether.runtime.chokepoint.assembly import RunContext
from tether.runtime.chokepoint.model_call import Door, ModelCall, Unanswered
from tether.runtime.chokepoint.shaper import Offered, TurnSeat
from tether.runtime.context.compaction import Compaction, Cut, digest, plan, replacement, transcript
from tether.types import Message, ModelRequest
from tether.vocabulary import EventType


class Compactor:
    """The turn shaper of a recipe with ``compaction``: compacts before a turn past the
    trigger."""

    __slots__ = ("_accountant", "_compaction", "_journal", "_model", "_state",
                 "_summariser", "_summary_accountant", "_window")

    def __init__(self, compaction: Compaction, model: Model, run: RunContext) -> None:
        self._compaction = compaction
        self._model = model
        self._journal, self._state, self._accountant = run.journal, run.state, run.accountant
        self._window = compaction.window(model)
        summariser = compaction.model
        self._summariser: Model = model if summariser is None else summariser
        self._summary_accountant = (run.accountant if summariser is None
                                    else run.accountant.at_price(summariser.price))

    async def before_turn(self, seat: TurnSeat, final: bool, note: str | None,
                          tool_choice: str | None) -> None:
        need = seat.next_input(final, note)
        why = self._trigger(need)
        if why is not None:
            await self._compact(seat, final, need, why)

    def branch_tools(self, seat: TurnSeat, key: str, messages: Sequence[Message],
                     forced: str | None) -> Offered | None:
        return None  # (a branch's context is its own: nothing to compact)

    # -- when -------------------------------------------------------------------------------

    def _trigger(self, need: int) -> str | None:
        """Why the next request must be compacted first, or None when it fits."""
        c = self._compaction
        if self._window is not None and need > c.threshold * self._window:
            return "context_window"
        if c.budget_share is not None:
            left = self._accountant.remaining()["tokens"]
            if left is not None and need > c.budget_share * left:
                return "token_budget"
        return None

    # -- how --------------------------------------------------------------------------------

    async def _compact(self, seat: TurnSeat, final: bool, need: int, why: str) -> None:
        state = self._state
        cut = plan(state.conversation, self._compaction.keep_last, state.task)
        if cut is None:  # nothing old enough to replace: the request goes as it is
            return
        replaced = state.conversation[cut.start:cut.end]
        step = state.tally.steps + 1
        summary, fallback = None, ""
        if self._compaction.strategy == "summarise":
            if final:  # the wrap-up's share is held back for the wrap-up, not for a summary
                fallback = "the run is stopping: the wrap-up turn gets no summary call"
            else:
                summary, fallback = await self._summarise(replaced, cut, step)
        estimate = self._model.estimate_message_tokens
        message = replacement(cut.turns, summary)
        before = sum(map(estimate, state.conversation))
        after = before - sum(map(estimate, replaced)) + estimate(message)
        self._journal.append(EventType.CONTEXT_COMPACTED, {
            "step": step, "strategy": "summarise" if summary else "drop", "reason": why,
            "request_tokens": need, "window": self._window,
            "start": cut.start, "end": cut.end, "turns": cut.turns,
            "replaced": len(replaced), "digest": digest(replaced), "replacement": [message],
            "tokens_before": before, "tokens_after": after,
            **({"fallback": fallback} if fallback else {})})
        seat.conversation_rewritten()  # what the next request resends: all of it estimated

    async def _summarise(self, replaced: list[Message], cut: Cut,
                         step: int) -> tuple[str | None, str]:
        """The summary of ``replaced`` from a governed call, or (None, why there is none)."""
        journal, summariser = self._journal, self._summariser
        messages = (Message.system(self._compaction.instructions),
                    Message.user(journal.hide_all(transcript(replaced))))
        input_estimate = sum(map(summariser.estimate_message_tokens, messages))

        def unusable(*_: Any) -> Unanswered:
            self._summary_failed(step, "the summariser reported unusable usage: charged at "
                                 "the reservation", reservation)
            return Unanswered("the summariser reported unusable usage")

        def failed(exc: BaseException, *_: Any) -> BaseException | None:
            if isinstance(exc, asyncio.CancelledError):
                return None
            expired = isinstance(exc, TimeoutError)  # it may well have been billed
            error = journal.hide_secrets("the time budget ran out during the summary call"
                                         if expired else f"{type(exc).__name__}: {exc}")
            self._summary_failed(step, error, reservation if expired else None)
            return Unanswered(f"the summariser failed ({error})")

        call = ModelCall(journal, self._summary_accountant, Door(
            EventType.COMPACTION_REQUEST, EventType.COMPACTION_RESPONSE, unusable,
            {"purpose": "compaction"}, "overrun of the summary call"))
        try:
            reservation = call.reserve(input_estimate, ceiling=self._compaction.summary_tokens)
        except Stop as refused:
            return None, f"the summary call does not fit the budget ({refused.detail})"
        _, durable = call.open({
            "step": step, "model": summariser.name, "start": cut.start, "end": cut.end,
            "digest": digest(replaced), "max_output_tokens": reservation.max_output_tokens,
            "reserved_input": reservation.input_tokens,
            "reserved_cost_usd": reservation.cost_usd})  # (a crash during the call: charged)
        await durable
        request = ModelRequest(messages, (), reservation.max_output_tokens, input_estimate)
        try:
            response = await call.answer(summariser.complete(request), step, reservation,
                                         reservation.deadline, failed)
            text = journal.hide_secrets(response.text).strip()
            call.settle(step, response, reservation, {
                "step": step, "text": text, "model": response.model,
                "finish_reason": response.finish_reason, **response.usage.to_dict(),
                "cache_write_tokens": response.usage.cache_write_tokens,
                "reserved_input": reservation.input_tokens})
        except Unanswered as why:
            return None, str(why)
        if not text:
            return None, "the summariser returned no summary"
        return text, ""

    def _summary_failed(self, step: int, error: str, charged: Reservation | None) -> None:
        """Journal a summary call that gave no usable answer, charged at its reservation when
        the provider may well have billed it (cancelled for time, usage unusable), else not."""
        self._journal.append(EventType.COMPACTION_ERROR, {
            "step": step, "error": error,
            "input_tokens": charged.input_tokens if charged else 0,
            "output_tokens": (charged.max_output_tokens or 0) if charged else 0,
            "cached_input_tokens": 0,
            "cost_usd": charged.cost_usd if charged else 0})

