"""One governed model call: the budget invariant of every model call, written once.

Why: six doors make model calls — the session turn (``Environment``), a search branch
(``tether.runtime.chokepoint.branch_call``), a compaction summary
(``tether.runtime.context.compactor``), the request planner (``tether.runtime.lifecycle.planning``),
a tool's sampling request (``tether.runtime.chokepoint.asks``) and a foreign framework's call
(``tether.integrations.governed``). Each must reserve, make its request durable, call under the
deadline, refuse to charge usage that is not whole numbers, charge what was reported, and stop
the run when the answer went past its reservation. Written six times, one copy drifts; here it
is written once, and a mutation of it is caught by the tests of all six doors.

Decision: a ``ModelCall`` is the accountant that prices the call, the journal, and a ``Door``
(what the caller passes). It does the steps in order — ``reserve`` → ``open`` (the request,
journaled, and flushed before anything is sent) → ``answer`` (under the deadline) → ``settle``
(usage check → charge → response record → overrun record and stop). A foreign framework makes
the call itself, so its door uses ``open`` and ``settle`` around the framework's own call; the
others use all four. What differs between the doors, and is all they pass:

- the turn: ``model.request`` / ``model.response``; counts a step; the run's price; capped by
  the budget, the model's ceiling and the strategy's cap; the answer's text blanked of secrets,
  its calls given ids of their own; a failed call is ``model.error`` (``model.unmetered`` when
  the deadline cancelled it), an unusable one ``model.unmetered``, and the run stops;
- a branch: ``branch.request`` / ``branch.response``, as the turn's but out of the
  conversation, its calls named ``branch_<key>_<i>``; an overrun record names its ``branch``;
- a compaction summary: ``compaction.request`` / ``compaction.response``; no step; the
  summariser's price; capped at ``summary_tokens``; sent turns blanked of secrets and masked
  values; a failed or unusable call is ``compaction.error`` and the turns are dropped instead;
  an overrun record says ``purpose: compaction``;
- the planner: ``plan.request`` / ``plan.response``; no step (0 in its overrun record, which
  says ``purpose: plan``); the planner's price; capped at ``max_tokens``; a failed or unusable
  call is ``plan.error`` and the rules' plan stands;
- a sampling request: ``sampling.request`` / ``sampling.response``; no step; a lease of the
  run's budget; capped by the lease, the request's ``maxTokens`` and the server's ceiling; its
  deadline the tool call's own; a failed or unusable call is ``sampling.error`` and the tool is
  refused; an overrun does not stop the session (below);
- a foreign framework's call: ``model.request`` / ``model.response`` as the turn's; counts a
  step; the framework makes the call itself, so tether opens and settles it; a stop ends the
  governed run (``RunStopped``).

A stopping overrun is journaled here and only here (``model.overrun``: the step, the limit, the
detail, what was reserved and what was reported, and where — ``purpose`` or ``branch`` — when it
was not a turn), and raises ``Stop`` with no wrap-up: a model that ignored one cap can ignore the
next. A sampling call does not stop the session — its tool call is a guest — so its overrun is
recorded on its ``sampling.response`` and the answer withheld (``Door.stops`` False). The event
data each door journals is its own (the door builds it; ``settle`` adds the charge), so stored
journals do not change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import RunError, WrongType
from tether.journal.chain import JournalValueError
from tether.models.base import CallCancelled
from tether.runtime.accounting.answer_calls import usable
from tether.runtime.accounting.stop import Stop
from tether.runtime.chokepoint.eager import start
from tether.runtime.chokepoint.halts import stop_if_halted, watch_of
from tether.types import ModelRequest, ModelResponse, Usage
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.models.base import Model
    from tether.runtime.accounting.accountant import Accountant, Reservation

# (the door's failure record for an unanswered call: the exception, whether the provider may
# well have billed it, the step, the reservation; what to raise — None: the exception itself)
Failed = Callable[[BaseException, bool, int, "Reservation"], BaseException | None]


class Unanswered(RunError):
    """A side call (a summary, the planner's reading) gave no usable answer; its door already
    journaled why, and its caller falls back (the message says why)."""


@dataclass(frozen=True, slots=True)
class Door:
    """What one kind of model call passes the governed call (see the module docstring).
    ``unusable``: the door's record of an answer whose usage cannot be charged as reported (it
    charges the reservation) and what to raise; ``where``: what the overrun record adds to say
    which call it was; ``says``: how the stop's detail names it; ``stops``: whether an overrun
    stops the run (else the door withholds the answer); ``unjournalable``: the door's record of
    an answer the journal refuses, and what to raise (None: the error goes up as it is). A door
    is made once per kind of call: its hooks are given the step and the reservation."""

    request: EventType
    response: EventType
    unusable: Callable[[int, Reservation, Usage], BaseException]
    where: Mapping[str, str] = field(default_factory=dict)
    says: str = "overrun"
    stops: bool = True
    unjournalable: Callable[[int, Reservation, JournalValueError], BaseException] | None = None


class ModelCall:
    """The governed model calls through ``door``, priced by ``accountant`` (one object per
    door and accountant: a turn's is made once per session, so a step allocates nothing)."""

    __slots__ = ("accountant", "door", "halts", "journal", "reserve")

    def __init__(self, journal: Journal, accountant: Accountant, door: Door) -> None:
        self.journal = journal
        self.halts = watch_of(journal.store)  # the store's halts, as last read (halts.py)
        self.accountant = accountant
        self.door = door
        # the call's reservation, or Stop naming the limit that prevents it (the accountant's
        # own method, bound here: a step pays no call of its own for it)
        self.reserve = accountant.reserve_model_call

    def open(self, data: Mapping[str, Any], flush: Callable[[], Awaitable[None]] | None = None,
             ) -> tuple[int, Awaitable[None]]:
        """Journal the request (its reservation charged until its outcome replaces it): its
        sequence, and the write that makes it durable, which the caller awaits before it sends
        the call (a crash during the call is then charged). Not a coroutine itself: a step pays
        for no frame of its own here."""
        if self.halts is not None:
            stop_if_halted(self.halts, self.journal)
        seq = self.journal.append(self.door.request, data)
        return seq, (flush or self.journal.aflush)()

    async def answer(self, call: Awaitable[object], step: int, reservation: Reservation,
                     deadline: float | None, failed: Failed,
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
                raise WrongType(f"model returned {type(response).__name__}, not ModelResponse")
        except (Exception, Stop, asyncio.CancelledError) as exc:
            expired = (timer is not None and timer.expired()) or isinstance(exc, CallCancelled)
            if reservation.quota:  # unanswered: its quotas keep its worst case (maybe billed)
                self.accountant.settle_quota(reservation, None)
            raised = failed(exc, expired, step, reservation)
            if raised is None or raised is exc:
                raise
            raise raised from (None if expired else exc)
        if not isinstance(response, ModelResponse):
            assert misread is not None
            raise misread(response)
        return response

    def settle(self, step: int, response: ModelResponse, reservation: Reservation,
               data: dict[str, Any]) -> str | None:
        """Check the answer's usage, charge it — its response record, ``data`` completed here
        with the charge (``cost_usd``) and, for a door that does not stop, the overrun — and
        journal an overrun and stop (``Door.stops``). How the answer went past its reservation
        (None: it did not)."""
        door, usage = self.door, response.usage
        if reservation.quota:  # (its quotas' shares settled: an unusable one at worst case)
            self.accountant.settle_quota(reservation, usage if usable(usage) else None)
        if not usable(usage):
            raise door.unusable(step, reservation, usage)
        cost = data["cost_usd"] = self.accountant.cost_of(usage)
        over = self.accountant.overrun(reservation, usage, cost)
        how = None if over is None else over[1]
        if how is not None and not door.stops:
            data["overrun"] = how
        try:
            self.journal.append(door.response, data)
        except JournalValueError as exc:
            if door.unjournalable is None:
                raise
            raise door.unjournalable(step, reservation, exc) from None
        if over is not None and door.stops:
            reason, detail = over
            self.journal.append(EventType.MODEL_OVERRUN, {
                "step": step, "limit": reason.value, "detail": detail, **door.where,
                "reserved": {"input_tokens": reservation.input_tokens,
                             "output_tokens": reservation.max_output_tokens,
                             "cost_usd": reservation.cost_usd},
                "reported": {"input_tokens": usage.input_tokens,
                             "output_tokens": usage.output_tokens, "cost_usd": cost}})
            raise Stop(reason, f"{door.says}: {detail}", wrap_up=False)
        return how


async def streamed(model: Model, request: ModelRequest,
                   on_delta: Callable[[str], None]) -> ModelResponse:
    """The model's answer to a turn's ``request``, its text deltas passed on as they come (if
    it can stream): what a streaming caller's turn awaits in place of ``complete``."""
    stream = getattr(model, "stream", None)
    if stream is None:
        return await model.complete(request)
    response: object = None
    async for item in stream(request):
        if isinstance(item, str):
            on_delta(item)
        else:
            response = item
    if not isinstance(response, ModelResponse):
        raise WrongType("the model's stream ended without a ModelResponse")
    return response
