"""One governed model call: the budget invariant of every model call, written once.

Why: six doors make model calls — the session turn (``Environment``), a search branch
(``tether.runtime.branching``), a compaction summary (``tether.runtime.compactor``), the request
planner (``tether.runtime.planning``), a tool's sampling request
(``tether.runtime.chokepoint.asks``) and a foreign framework's call
(``tether.integrations.governed``). Each must reserve, make its request durable, call under the
deadline, refuse to charge usage that is not whole numbers, charge what was reported, and stop
the run when the answer went past its reservation. Written six times, one copy drifts; here it
is written once, and a mutation of it is caught by the tests of all six doors.

Decision: a ``ModelCall`` is the accountant that prices the call, the journal, and a ``Door``
(what the caller passes). It does the steps in order — ``reserve`` → ``open`` (the request,
journaled and flushed before anything is sent) → ``answer`` (under the deadline) → ``settle``
(usage check → charge → response record → overrun record and stop). A foreign framework makes
the call itself, so its door uses ``open`` and ``settle`` around the framework's own call; the
others use all four. What differs between the doors, and is all they pass:

=============  ===================  ===========  ==========  =========================  ========
door           request / response   step         price       a failed or unusable call  overrun
=============  ===================  ===========  ==========  =========================  ========
turn           model.request /      counts one   the run's   model.error / .unmetered,  stops
               model.response                                the run stops
branch         branch.request /     counts one   the run's   as the turn's              stops
               branch.response
compaction     compaction.request / no step      the         compaction.error, the       stops
               compaction.response               summariser  turns are dropped instead
planner        plan.request /       no step      the         plan.error, the rules'      stops
               plan.response        (0)          planner     plan stands
sampling       sampling.request /   no step      a lease     sampling.error, refused to  answer
               sampling.response                 of the run  the tool                   withheld
framework      model.request /      counts one   the run's   model.error / .unmetered,  stops
               model.response                                the run stops
=============  ===================  ===========  ==========  =========================  ========

A stopping overrun is journaled here and only here (``model.overrun``: the step, the limit, the
detail, what was reserved and what was reported, and where — ``purpose`` or ``branch`` — when it
was not a turn), and raises ``Stop`` with no wrap-up: a model that ignored one cap can ignore the
next. A sampling call does not stop the session — its tool call is a guest — so its overrun is
recorded on its ``sampling.response`` and the answer withheld (``Door.stops`` False). The event
data each door journals is its own (the door builds it), so stored journals do not change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tether.journal.chain import JournalValueError
from tether.models.base import CallCancelled
from tether.runtime.answer_calls import usable
from tether.runtime.eager import start
from tether.runtime.stop import Stop
from tether.types import ModelResponse, Usage

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.runtime.budget import Accountant, Reservation

# (the door's failure record for an unanswered call: the exception, whether the provider may
# well have billed it; what to raise — None: the exception itself)
Failed = Callable[[BaseException, bool], BaseException | None]


class Unanswered(Exception):
    """A side call (a summary, the planner's reading) gave no usable answer; its door already
    journaled why, and its caller falls back (the message says why)."""


@dataclass(frozen=True, slots=True)
class Door:
    """What one kind of model call passes the governed call (see the module docstring).
    ``where``: what the overrun record adds to say which call it was; ``says``: how the stop's
    detail names it; ``stops``: whether an overrun stops the run (else the door withholds the
    answer). ``unusable``: the door's record of an answer whose usage cannot be charged as
    reported (it charges the reservation) and what to raise; ``unjournalable``: the same for
    an answer the journal refuses (None: the error goes up as it is)."""

    request: str
    response: str
    step: int
    unusable: Callable[[Usage], BaseException]
    where: Mapping[str, str] = field(default_factory=dict)
    says: str = "overrun"
    stops: bool = True
    unjournalable: Callable[[JournalValueError], BaseException] | None = None


@dataclass(frozen=True, slots=True)
class Settled:
    """A charged answer: its cost, and how it went past its reservation (None: it did not)."""

    cost: Decimal
    overrun: str | None


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One governed model call through ``door``, priced by ``accountant``."""

    journal: Journal
    accountant: Accountant
    door: Door

    def reserve(self, input_estimate: int, final: bool = False, *, known: int = 0,
                ceiling: int | None = None, min_seconds: float = 0.0) -> Reservation:
        """The call's reservation; Stop naming the limit when the budget does not allow it."""
        return self.accountant.reserve_model_call(input_estimate, final, known=known,
                                                  ceiling=ceiling, min_seconds=min_seconds)

    async def open(self, data: Mapping[str, Any],
                   flush: Callable[[], Awaitable[None]] | None = None) -> int:
        """Journal the request (its reservation charged until its outcome replaces it) and make
        it durable before the call is sent: a crash during the call is charged. Its sequence."""
        seq = self.journal.append(self.door.request, data)
        await (flush or self.journal.aflush)()
        return seq

    async def answer(self, call: Awaitable[object], deadline: float | None, failed: Failed,
                     misread: Callable[[object], BaseException] | None = None) -> ModelResponse:
        """The model's answer to ``call``, within ``deadline`` (loop time; None: none). An
        unanswered call goes to the door's ``failed`` (billed when the deadline cancelled it)
        and what that returns is raised; so does an answer that is no ``ModelResponse`` (a
        ``TypeError``), unless the door reads that as its own case (``misread``)."""
        timer = None
        try:
            response, rest = start(call)
            if rest is not None:  # it suspended: the rest runs within the deadline, if any
                if deadline is None:
                    response = await rest
                else:
                    timer = asyncio.timeout_at(deadline)
                    async with timer:
                        response = await rest
            if not isinstance(response, ModelResponse) and misread is None:
                raise TypeError(f"model returned {type(response).__name__}, not ModelResponse")
        except (Exception, Stop, asyncio.CancelledError) as exc:
            expired = (timer is not None and timer.expired()) or isinstance(exc, CallCancelled)
            raised = failed(exc, expired)
            if raised is None or raised is exc:
                raise
            raise raised from (None if expired else exc)
        if not isinstance(response, ModelResponse):
            assert misread is not None
            raise misread(response)
        return response

    def settle(self, response: ModelResponse, reservation: Reservation,
               record: Callable[[Decimal, str | None], Mapping[str, Any]]) -> Settled:
        """Check the answer's usage, charge it (its response record, built by ``record`` from
        the cost and the overrun), and journal an overrun and stop (``Door.stops``)."""
        door, usage = self.door, response.usage
        if not usable(usage):
            raise door.unusable(usage)
        cost = self.accountant.cost_of(usage)
        over = self.accountant.overrun(reservation, usage, cost)
        how = None if over is None else over[1]
        try:
            self.journal.append(door.response, record(cost, how))
        except JournalValueError as exc:
            if door.unjournalable is None:
                raise
            raise door.unjournalable(exc) from None
        if over is not None and door.stops:
            reason, detail = over
            self.journal.append("model.overrun", {
                "step": door.step, "limit": reason.value, "detail": detail, **door.where,
                "reserved": {"input_tokens": reservation.input_tokens,
                             "output_tokens": reservation.max_output_tokens,
                             "cost_usd": reservation.cost_usd},
                "reported": {"input_tokens": usage.input_tokens,
                             "output_tokens": usage.output_tokens, "cost_usd": cost}})
            raise Stop(reason, f"{door.says}: {detail}", wrap_up=False)
        return Settled(cost, how)
