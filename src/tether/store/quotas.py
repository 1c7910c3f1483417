"""The store's quota ledger: reservations against rolling-window limits, shared by workers.

Why: a quota (``tether.policy.quotas``) holds across every session on a store, so the count
lives in the store, and checking it and taking from it must be one atomic step: two workers
that each read "3 left" and each take 3 would exceed it. Each store does that step its own way
(memory: its lock; SQLite: one ``BEGIN IMMEDIATE`` transaction; PostgreSQL: a transaction that
holds an advisory lock on the quota's key) in its own module; what they share is here.

Decision: a quota's use is rows, one per reserved call, with an ``amount`` (whole units) and a
``hold`` (what the session keeps back for its wrap-up turn after this call). ``reserve`` sums
what counts, asks the caller how much to take of the room left (``QuotaAsk.split``, run inside
the transaction, so a call is clamped to the room rather than refused while room is left) and
inserts the row, or refuses, saying when enough frees up. What counts now:

- a settled row's amount, while its time (when it settled) is inside the window;
- an unsettled row's amount while its reservation is live: its own expiry has not passed, or
  the session's lease, held by the same worker, has not lapsed. A worker killed mid-call so
  holds its reservation exactly as long as its lease; then it stops counting (a tool call is
  counted as settled when it is admitted, so a worker killed during a side effect leaves it
  counted: ``QuotaAsk.settled``);
- a hold while it is live (as above; a settled row's own expiry is cleared, so only the lease
  keeps it) and only the session's newest: a session's next reservation releases its older
  holds in the same transaction, and a session that ends releases its lease and so its hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class QuotaAsk:
    """One reservation asked of a store. ``need``: the least it can go with (units);
    ``split(room)``: given ``room >= need``, the ``(amount, hold)`` to take;
    ``settled``: the amount is final as taken (a tool call, counted when admitted)."""

    key: str
    limit: int
    window: float
    need: int
    split: Callable[[int], tuple[int, int]]
    session_id: str
    holder: str
    expires_at: float
    settled: bool = False


@dataclass(frozen=True, slots=True)
class QuotaGrant:
    """A reservation taken: its row, the amount and the hold it took."""

    row: str
    amount: int
    hold: int


@dataclass(frozen=True, slots=True)
class QuotaRefusal:
    """Not enough room: what counts now, and when (epoch seconds) enough of it leaves the
    window for the call to fit — None when what blocks it is running calls and holds, which
    free when they settle or their leases lapse."""

    used: int
    frees_at: float | None


@runtime_checkable
class QuotaLedger(Protocol):
    """What a store keeps of quotas (``MemoryStore``, ``SQLiteStore``, ``PostgresStore``)."""

    def quota_reserve(self, ask: QuotaAsk, now: float) -> QuotaGrant | QuotaRefusal:
        """Atomically: sum what counts of ``ask.key`` at ``now``; if ``ask.need`` fits the
        limit, release this session's older holds and take ``ask.split(room)``."""
        ...

    def quota_settle(self, row: str, amount: int, hold: int, now: float) -> None:
        """The row's actual amount and the hold it keeps, its time now, its expiry cleared."""
        ...

    def quota_used(self, key: str, window: float, now: float) -> int:
        """What counts of ``key`` at ``now`` (for reports and tests; not atomic with anything)."""
        ...


def grant(ask: QuotaAsk, used: int, row: str) -> QuotaGrant | None:
    """The grant for ``ask`` when ``used`` counts already (None: it does not fit)."""
    room = ask.limit - used
    if room < ask.need:
        return None
    amount, hold = ask.split(room)
    return QuotaGrant(row, amount, hold)


def frees_at(windowed: Iterable[tuple[float, int]], used: int, ask: QuotaAsk) -> float | None:
    """When enough of ``windowed`` (time, amount of what counts inside the window, oldest
    first) has left the window for ``ask.need`` to fit; None if it never does by that alone."""
    freed = 0
    for at, amount in windowed:
        freed += amount
        if used - freed + ask.need <= ask.limit:
            return at + ask.window
    return None


def live(expires_at: float, lease: tuple[str | None, float] | None, holder: str,
         now: float) -> bool:
    """Whether a reservation still counts: its own expiry not passed, or its session's lease
    (holder, expiry) still held by the worker that reserved it."""
    if expires_at > now:
        return True
    return lease is not None and lease[0] == holder and lease[1] > now


# The SQL both database stores run (``?``/``%s`` and the schema differ, the logic does not):
# what counts of a key now; the rows inside the window, oldest first, for ``frees_at``.
LIVE = ("(q.expires_at > {p} OR EXISTS (SELECT 1 FROM {s}sessions x WHERE x.session_id = "
        "q.session_id AND x.lease_holder = q.holder AND x.lease_expires > {p}))")
USED = ("SELECT (SELECT coalesce(sum(amount), 0) FROM {s}quota_use WHERE key = {p} AND at > {p} "
        "AND settled = 1) + (SELECT coalesce(sum(amount), 0) FROM {s}quota_use q WHERE key = {p} "
        "AND settled = 0 AND " + LIVE + ") + (SELECT coalesce(sum(hold), 0) FROM {s}quota_use q "
        "WHERE key = {p} AND hold > 0 AND session_id <> {p} AND " + LIVE + ")")
# holds that no longer count (their session ended, paused or lost its lease) are cleared as a
# reservation passes, so the holds a reservation sums are the running sessions'
CLEAR = "UPDATE {s}quota_use SET hold = 0 WHERE id IN (SELECT id FROM {s}quota_use q WHERE " \
        "key = {p} AND hold > 0 AND NOT " + LIVE + ")"
WINDOWED = ("SELECT at, amount FROM {s}quota_use WHERE key = {p} AND at > {p} AND "
            "settled = 1 ORDER BY at")
RELEASE = "UPDATE {s}quota_use SET hold = 0 WHERE key = {p} AND session_id = {p} AND hold > 0"
PRUNE = "DELETE FROM {s}quota_use WHERE key = {p} AND settled = 1 AND hold = 0 AND at <= {p}"
INSERT = ("INSERT INTO {s}quota_use (id, key, at, amount, hold, settled, session_id, holder, "
          "expires_at) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})")
SETTLE = ("UPDATE {s}quota_use SET amount = {p}, hold = {p}, settled = 1, at = {p}, "
          "expires_at = 0 WHERE id = {p}")


def used_args(key: str, window: float, now: float, session_id: str) -> tuple[object, ...]:
    """The parameters of ``USED``, in order."""
    return (key, now - window, key, now, now, key, session_id, now, now)


def insert_args(ask: QuotaAsk, got: QuotaGrant, now: float) -> tuple[object, ...]:
    """The parameters of ``INSERT``, in order."""
    return (got.row, ask.key, now, got.amount, got.hold, int(ask.settled), ask.session_id,
            ask.holder, 0.0 if ask.settled else ask.expires_at)
