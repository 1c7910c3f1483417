"""What a turn's or a branch's model call that gave no usable answer leaves, and its two doors.

Why its own module: the Environment sequences a turn; what happens when a call fails (journaled
as ``model.error``, or ``model.unmetered`` charged at its reservation when the provider may well
have billed it, and the stop that follows) is the same for a turn and a branch call, and it read
as a third of the Environment. Kept here, the Environment reads as the path every call takes.

Decision: ``Failures`` holds only the journal; each method journals and returns the Stop for its
caller to raise (a ``Door`` hook, ``tether.runtime.chokepoint.model_call``). ``turn_door`` and
``branch_door`` are the two doors the Environment's calls go through, made once per session
(the turn's) or per branch call.
"""

from __future__ import annotations

import asyncio

from tether.journal.chain import Journal, JournalValueError
from tether.runtime.accounting.accountant import Reservation
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.chokepoint.model_call import Door
from tether.types import Usage
from tether.vocabulary import EventType

# the model.unmetered error of a call the time budget cancelled (rerun replays it as such)
CANCELLED_BY_TIME = "the time budget ran out during the call; it was cancelled"


class Failures:
    """The failure records of one session's turn and branch calls."""

    __slots__ = ("_journal",)

    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    def turn_door(self) -> Door:
        """The door of a session turn: ``model.request`` / ``model.response``."""
        return Door(EventType.MODEL_REQUEST, EventType.MODEL_RESPONSE, self._unusable,
                    unjournalable=self._unjournalable)

    def branch_door(self, key: str) -> Door:
        """The door of a branch call: ``branch.request`` / ``branch.response``."""
        return Door(EventType.BRANCH_REQUEST, EventType.BRANCH_RESPONSE, self._unusable_on_branch,
                    {"branch": key}, "overrun on a branch call", True,
                    self._unjournalable_on_branch)

    def _unusable(self, step: int, reservation: Reservation, usage: Usage) -> Stop:
        return self.unmetered(step, reservation, (
            f"the model reported unusable usage ({usage.input_tokens!r} input, "
            f"{usage.output_tokens!r} output, {usage.cached_input_tokens!r} cached "
            "tokens): charged at the reservation"))

    def _unusable_on_branch(self, step: int, reservation: Reservation, _: Usage) -> Stop:
        return self.unmetered(step, reservation, "the model reported unusable usage on a "
                              "branch call: charged at the reservation")

    def _unjournalable(self, step: int, reservation: Reservation,
                       exc: JournalValueError) -> Stop:
        return self.unmetered(step, reservation,
                              f"the model's response cannot be journaled: {exc}")

    def _unjournalable_on_branch(self, step: int, reservation: Reservation,
                                 exc: JournalValueError) -> Stop:
        return self.unmetered(step, reservation,
                              f"the branch answer cannot be journaled: {exc}")

    def failed_call(self, exc: BaseException, expired: bool, step: int,
                    reservation: Reservation) -> BaseException | None:
        """A turn's (or a branch's) unanswered call: journaled, and the run stops — for time,
        charged at its reservation, when the deadline cancelled it (it may well have been
        billed). A model that raises Stop does not stop the run another way."""
        if isinstance(exc, asyncio.CancelledError):
            return None
        if expired:
            self.unmetered(step, reservation, CANCELLED_BY_TIME)
            return Stop(StopReason.TIME_BUDGET, "time budget ran out during a model call")
        error = f"{type(exc).__name__}: {exc}"
        self._journal.append(EventType.MODEL_ERROR, {"step": step, "error": error})
        return Stop(StopReason.MODEL_ERROR, error)

    def unmetered(self, step: int, reservation: Reservation, error: str) -> Stop:
        """Charge a call whose real usage is unknown at what was reserved for it; the stop
        that follows (a model error)."""
        self._journal.append(EventType.MODEL_UNMETERED, {
            "step": step, "error": error, "input_tokens": reservation.input_tokens,
            "output_tokens": reservation.max_output_tokens or 0,
            "cost_usd": reservation.cost_usd})
        return Stop(StopReason.MODEL_ERROR, error)
