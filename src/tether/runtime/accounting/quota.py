"""The quota meter: a session's calls reserved against its quotas in the store, then settled.

Why: a quota (``tether.policy.quotas``) bounds many sessions together, so its count is kept in
the store (``tether.store.quotas``), and a call must take its share there before it is made —
not checked after. This is the one place a session does that; the accountant calls it from the
one place it reserves a model call (``Accountant.reserve_model_call``), the governed model call
settles through it, and the tool side takes a tool call's share when the call is admitted.

Decision, for a model call: after the budget has clamped the call, each quota on tokens, cost
or steps takes, in one atomic step of the store, the call's worst case plus a hold for the
session's wrap-up turn right after it — clamping the call's output cap to what the quota's
room allows, as the budget clamps it — or refuses and the run stops ``quota`` (its wrap-up
then runs inside the hold). So a session's effective limit is the smaller of its budget and the
quota's remainder, and its final no-tools turn still fits. After the call, the reservation is
settled to the actual usage (or, for a call that failed, kept at its worst case: the provider
may have billed it), and its hold stays until the session's next call or the end of its lease.
A call that is killed mid-way holds its reservation while its session's lease lives, and no
longer. For a tool call: it is counted (settled at once) when admitted, before it runs, so a
worker killed during a side effect leaves it counted: a tool quota never undercounts an effect
that may have happened. A refusal is journaled (``quota.refused``) and the Stop's detail names
the quota, its use and when it frees up.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from tether.errors import InvalidArgument
from tether.models.pricing import MILLION, Price
from tether.policy.quotas import Quota
from tether.runtime.accounting.accountant import (
    MIN_OUTPUT_TOKENS,
    WRAP_UP_NOTE_TOKENS,
    WRAP_UP_OUTPUT_TOKENS,
    Reservation,
)
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.accounting.worst_case import dearest_prices, worst_case_cost
from tether.store.base import lease_holder
from tether.store.quotas import QuotaAsk, QuotaGrant, QuotaLedger, QuotaRefusal
from tether.types import Usage
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.policy.base import Subject

QUOTA_OUTPUT_CAP = 4096  # a call's cap under a token or cost quota when nothing else caps it
_WRAP = WRAP_UP_NOTE_TOKENS + WRAP_UP_OUTPUT_TOKENS
_Plan = Callable[[int | None], tuple[int, int, int]]  # room -> (output cap, amount, hold)


@dataclass(frozen=True, slots=True)
class Taken:
    """One quota's share of a reserved call: the quota, its key and what the store granted."""

    quota: Quota
    key: str
    grant: QuotaGrant
    cap: int | None = None  # the output cap this quota's room allowed (model calls)
    need: int = 0  # the least the call needed of it


class QuotaMeter:
    """A session's quotas, counted in ``ledger`` (the session's store)."""

    __slots__ = ("_clock", "_journal", "_ledger", "_model", "_session_id", "_tools")

    def __init__(self, quotas: tuple[Quota, ...], ledger: QuotaLedger, subject: Subject,
                 session_id: str, journal: Journal, price: Price | None,
                 clock: Callable[[], float] = time.time) -> None:
        if not isinstance(ledger, QuotaLedger):
            raise InvalidArgument(f"quotas are kept in the store, and {ledger!r} keeps none; "
                                  "give the agent a store that does (memory, sqlite, postgres)")
        if price is None and any(q.counts == "cost_usd" for q in quotas):
            raise InvalidArgument("a cost_usd quota needs the model's price, and this model has "
                                  "none; give one with Agent(price=Price(...)) or drop the quota")
        self._model = tuple((q, q.key(subject)) for q in quotas if q.counts != "tool_calls")
        self._tools = tuple((q, q.key(subject)) for q in quotas if q.counts == "tool_calls")
        self._ledger = ledger
        self._session_id = session_id
        self._journal = journal
        self._clock = clock

    def _ask(self, quota: Quota, key: str, need: int,
             split: Callable[[int], tuple[int, int]], settled: bool = False) -> QuotaAsk:
        lease = self._journal.lease
        holder, ttl = (lease.holder, lease.ttl) if lease is not None else (lease_holder(), 60.0)
        return QuotaAsk(key, quota.limit_units, quota.seconds, need, split, self._session_id,
                        holder, self._clock() + ttl, settled)

    def reserve(self, reservation: Reservation, final: bool, price: Price | None) -> Reservation:
        """``reservation`` (the budget's, for a call at ``price``), clamped to and taken from
        every model-call quota, or Stop(quota) naming the one with no room (the shares already
        taken are given back)."""
        if not self._model:
            return reservation
        cap = reservation.max_output_tokens
        taken: list[Taken] = []
        clamped = False  # whether a quota's room, not the default cap, set the cap
        for quota, key in self._model:
            if cap is None and quota.counts != "steps":
                cap = QUOTA_OUTPUT_CAP
            plan = self._plan(quota, reservation.input_tokens, cap, final, price)
            chosen: list[int] = []

            def split(room: int, plan: _Plan = plan, chosen: list[int] = chosen,
                      ) -> tuple[int, int]:
                out, amount, hold = plan(room)
                chosen.append(out)
                return amount, hold

            least = None if cap is None else min(cap, MIN_OUTPUT_TOKENS)
            need = sum(self._plan(quota, reservation.input_tokens, least, final, price)(None)[1:])
            now = self._clock()
            got = self._ledger.quota_reserve(self._ask(quota, key, need, split), now)
            if isinstance(got, QuotaRefusal):
                self._give_back(taken, now)
                raise self._refused(quota, key, got, need, now)
            taken.append(Taken(quota, key, got, chosen[0] if chosen else cap, need))
            if chosen and cap is not None and chosen[0] < cap:
                cap, clamped = chosen[0], True
        if cap == reservation.max_output_tokens:
            return replace(reservation, quota=tuple(taken))
        cost = reservation.cost_usd
        if price is not None and cap is not None:
            cost = worst_case_cost(price, reservation.input_tokens, cap)
        return replace(reservation, max_output_tokens=cap, cost_usd=cost, quota=tuple(taken),
                       bound_by=StopReason.QUOTA if clamped else reservation.bound_by)

    def _plan(self, quota: Quota, input_tokens: int, cap: int | None, final: bool,
              price: Price | None) -> _Plan:
        """How ``room`` (units) is shared between the call's output cap, its worst case and
        the hold for the wrap-up after it (none for a wrap-up itself). With room None: the
        shares at ``cap`` (what the call needs at the least, when ``cap`` is the least)."""
        if quota.counts == "steps":
            return lambda room: (cap or 0, 1, 0 if final else 1)
        if quota.counts == "tokens":
            def tokens(room: int | None) -> tuple[int, int, int]:
                assert cap is not None
                out = cap if room is None else min(cap, (room - input_tokens) if final else
                                                 (room - 2 * input_tokens - _WRAP) // 2)
                return out, input_tokens + out, 0 if final else input_tokens + out + _WRAP
            return tokens
        if price is None:  # (a side call's model without a price: fail closed)
            raise InvalidArgument(f"quota {quota.name!r} counts dollars, and this call's model "
                                  "has no price: give it one")
        assert cap is not None
        p_in, p_out = dearest_prices(price, input_tokens if final else
                                     2 * input_tokens + WRAP_UP_NOTE_TOKENS)

        def shares(out: int) -> tuple[int, int, int]:
            call = quota.units((input_tokens * p_in + out * p_out) / MILLION)
            hold = 0 if final else quota.units(((input_tokens + out + WRAP_UP_NOTE_TOKENS) * p_in
                                                + WRAP_UP_OUTPUT_TOKENS * p_out) / MILLION)
            return out, call, hold

        def cost(room: int | None) -> tuple[int, int, int]:
            if room is None:
                return shares(cap)
            fixed = sum(shares(0)[1:])
            per = quota.units((p_in + p_out if not final else p_out) / MILLION) or 1
            out = min(cap, max(0, (room - fixed) // per + 1))
            while out > 0 and sum(shares(out)[1:]) > room:
                out -= 1
            return shares(out)
        return cost

    def settle(self, reservation: Reservation, usage: Usage | None,
               price: Price | None) -> None:
        """Each share of a finished call settled to what it used (``usage``; None: it failed
        or its usage cannot be read, so its worst case stands); the hold stays."""
        now = self._clock()
        for taken in reservation.quota:
            quota, got = taken.quota, taken.grant
            if usage is None or (quota.counts == "cost_usd" and price is None):
                amount = got.amount
            elif quota.counts == "tokens":
                amount = usage.total_tokens
            elif quota.counts == "cost_usd":
                assert price is not None
                amount = quota.units(price.cost(usage))
            else:  # steps
                amount = 1
            self._ledger.quota_settle(got.row, amount, got.hold, now)

    def take_tool(self, name: str) -> None:
        """Count an admitted call of the tool ``name`` against its quotas (settled at once), or
        Stop(quota) naming the one with no room."""
        taken: list[Taken] = []
        now = self._clock()
        for quota, key in self._tools:
            if not quota.counts_tool(name):
                continue
            got = self._ledger.quota_reserve(
                self._ask(quota, key, 1, lambda room: (1, 0), settled=True), now)
            if isinstance(got, QuotaRefusal):
                self._give_back(taken, now)
                raise self._refused(quota, key, got, 1, now)
            taken.append(Taken(quota, key, got))

    def cut_short(self, reservation: Reservation) -> Stop:
        """The stop for an answer cut at the cap a quota's room set: names that quota and,
        probing the store (a share of nothing), when a call of this size fits again."""
        bound = min(reservation.quota, key=lambda t: (t.cap is None, t.cap or 0))
        quota, key, now = bound.quota, bound.key, self._clock()
        probe = self._ledger.quota_reserve(
            self._ask(quota, key, bound.need, lambda room: (0, 0), settled=True), now)
        why = (f"the model's answer was cut at the {reservation.max_output_tokens} output "
               "tokens the quota had room for")
        if isinstance(probe, QuotaRefusal):
            return self._refused(quota, key, probe, bound.need, now, why)
        return self._refused(quota, key, QuotaRefusal(self._ledger.quota_used(
            key, quota.seconds, now), now), bound.need, now, why)

    def _give_back(self, taken: list[Taken], now: float) -> None:
        for share in taken:
            self._ledger.quota_settle(share.grant.row, 0, 0, now)

    def _refused(self, quota: Quota, key: str, refusal: QuotaRefusal, need: int,
                 now: float, why: str = "") -> Stop:
        if refusal.frees_at is not None:
            at = datetime.datetime.fromtimestamp(refusal.frees_at, datetime.UTC)
            when = (f"frees up at {at.isoformat(timespec='seconds').replace('+00:00', 'Z')} "
                    f"(in {max(0.0, refusal.frees_at - now):.0f}s)")
        else:
            when = ("frees up when calls other sessions are making settle, or their sessions "
                    "end or lose their leases")
        detail = (f"{why + ': ' if why else ''}quota {quota.describe()} for {quota.per} "
                  f"{key_value(key)}: "
                  f"{quota.shown(refusal.used)} used of {quota.shown(quota.limit_units)}, and "
                  f"the call needs {quota.shown(need)}; it {when}")
        self._journal.append(EventType.QUOTA_REFUSED, {
            "quota": quota.name, "key": key, "per": quota.per,
            "limit": quota.shown(quota.limit_units), "used": quota.shown(refusal.used),
            "need": quota.shown(need), "frees_at": refusal.frees_at, "detail": detail})
        return Stop(StopReason.QUOTA, detail)


def key_value(key: str) -> str:
    """The subject's value a quota key counts under (the agent, tenant or user)."""
    value: Any = json.loads(key)[-1]
    return str(value)


def meter_for(quotas: tuple[Quota, ...], store: object, subject: Subject, session_id: str,
              journal: Journal, price: Price | None) -> QuotaMeter | None:
    """A session's meter over ``quotas`` in ``store`` (None: no quotas, nothing to count)."""
    if not quotas:
        return None
    return QuotaMeter(quotas, cast(QuotaLedger, store), subject, session_id, journal, price)
