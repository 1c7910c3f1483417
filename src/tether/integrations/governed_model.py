"""A governed run's model meter: a framework's model call reserved, journaled and charged.

Why apart from the run (``integrations.governed``, which says the whole design): the framework
makes its model calls itself, so tether can only stand before and after each one; the meter is
that standing, and is the one governed model call (``runtime.chokepoint.model_call``) opened
and settled from outside.

Decision: a call is reserved before it is made, as a last turn would be (a foreign framework
gives tether no wrap-up turn, so nothing is held back for one): input estimated, output capped
to what the budget leaves; its usage is charged after, and an overrun or usage that cannot be
charged stops the run. A call cancelled is charged at its reservation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tether.integrations.decided import identity
from tether.integrations.governed_part import GovernedPart
from tether.integrations.reopen import framework_id
from tether.runtime.accounting.accountant import Reservation
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.chokepoint.effects import skipped
from tether.runtime.chokepoint.model_call import Door, ModelCall
from tether.types import Message, ModelResponse, ToolCall, Usage
from tether.vocabulary import EventType


@dataclass(frozen=True, slots=True)
class Metered:
    """A model call reserved: its step and what the budget holds for it."""

    step: int
    reservation: Reservation

    @property
    def max_output_tokens(self) -> int | None:
        """The output cap to send the model (None: no limit binds)."""
        return self.reservation.max_output_tokens


class GovernedModel(GovernedPart):
    """Mixed into ``GovernedRun``: the model meter."""

    async def reserve(self, input_estimate: int, *, new: Sequence[Message] = (),
                      ceiling: int | None = None) -> Metered:
        """Reserve one model call of ``input_estimate`` tokens (tether's estimate of all it
        sends) and journal its request; RunStopped when the budget does not allow it."""
        self.not_nested()
        async with self._lock:
            self._check_open()
            for call in self._state.unresolved():  # every call gets a result
                result = skipped(call, "the framework did not run this call")
                self._calls.record(result)
                self._ledger[framework_id(call.id, self._used)] = (
                    identity(self.registry.get(call.name), call.arguments, call.name), result)
            meter = self._meter()
            try:  # the budget, or a halt (tether.runtime.chokepoint.halts), may stop it
                reservation = meter.reserve(input_estimate, True, ceiling=ceiling)
                metered = Metered(self._state.tally.steps + 1, reservation)
                _, durable = meter.open({
                    "step": metered.step, "ref": len(self._state.conversation),
                    "new": list(new), "tools": self.registry.names, "final": False,
                    "max_output_tokens": reservation.max_output_tokens,
                    "reserved_input": reservation.input_tokens,
                    "reserved_cost_usd": reservation.cost_usd})
            except Stop as stop:
                self._stop(stop)
            await durable
            return metered

    def _meter(self) -> ModelCall:
        """The one governed model call (``tether.runtime.chokepoint.model_call``) of a framework's
        call, which the framework makes itself: tether opens it and settles it."""
        def unusable(step: int, reservation: Reservation, usage: Usage) -> Stop:
            self._unmetered(Metered(step, reservation), "the model reported unusable usage")
            return Stop(StopReason.MODEL_ERROR, "the model reported unusable usage "
                        f"({usage.input_tokens!r} input, {usage.output_tokens!r} output "
                        "tokens): charged at the reservation")

        return ModelCall(self._journal, self._accountant,
                         Door(EventType.MODEL_REQUEST, EventType.MODEL_RESPONSE, unusable))

    async def charge(self, metered: Metered, response: ModelResponse,
                     outside: Sequence[str] = ()) -> dict[str, str]:
        """Journal the model's answer and charge its reported usage; RunStopped at an overrun
        (journaled) or unusable usage. ``outside``: tools the model called that tether does not
        govern (the framework runs them itself), journaled by name. Returns the tether call id
        of each call whose framework id an earlier call already had."""
        self.not_nested()
        async with self._lock:
            reservation, step = metered.reservation, metered.step

            calls = []
            for c in response.tool_calls:
                self._ledger.pop(c.id, None)  # a new call, whatever an old one was called
                calls.append(ToolCall(self._fresh(c.id), c.name, c.arguments))
            try:  # (usage it cannot charge stops the run: the ids given above are never used)
                self._meter().settle(step, response, reservation, {
                    "step": step, "response": ModelResponse(
                        response.text, tuple(calls), response.usage, response.model,
                        response.finish_reason), "reserved_input": reservation.input_tokens,
                    **({"outside": sorted(set(outside))} if outside else {})})
            except Stop as stop:  # an overrun (journaled), or usage that cannot be charged
                self._stop(stop)
            await self._journal.aflush()
            return {k: v for k, v in self._ids.items() if k != v}

    async def failed(self, metered: Metered, error: BaseException) -> None:
        """Journal a model call that raised (the framework decides what follows); one that was
        cancelled is charged at its reservation, since the provider may well have billed it."""
        self.not_nested()
        async with self._lock:
            if isinstance(error, Exception):
                self._journal.append(EventType.MODEL_ERROR, {
                    "step": metered.step, "error": f"{type(error).__name__}: {error}"})
            else:
                self._unmetered(metered, f"the call was cancelled ({type(error).__name__})")
            await self._journal.aflush()

    def _unmetered(self, metered: Metered, error: str) -> None:
        r = metered.reservation
        self._journal.append(EventType.MODEL_UNMETERED, {
            "step": metered.step, "error": error, "input_tokens": r.input_tokens,
            "output_tokens": r.max_output_tokens or 0, "cost_usd": r.cost_usd})

