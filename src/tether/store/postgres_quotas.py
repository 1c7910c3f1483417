"""The PostgreSQL store's quota ledger (``tether.store.quotas``).

Why apart from ``store.postgres``: quotas are a ledger beside the journal; the store class
mixes this in. Decision: a reservation is one transaction that first takes a
transaction-scoped advisory lock on the quota's key (``pg_advisory_xact_lock``), then sums what
counts, decides, releases the session's older holds and inserts: workers on any host take from
one quota one at a time, and reservations of different quotas do not wait for each other.
"""

from __future__ import annotations

import json
import os

from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart
from tether.store.quotas import (
    CLEAR,
    INSERT,
    PRUNE,
    RELEASE,
    SETTLE,
    USED,
    WINDOWED,
    QuotaAsk,
    QuotaGrant,
    QuotaRefusal,
    frees_at,
    grant,
    insert_args,
    used_args,
)


def _pg(statement: str) -> str:
    return statement.format(s="{s}.", p="%s")


_USED, _WINDOWED, _RELEASE, _PRUNE, _INSERT, _SETTLE, _CLEAR = map(
    _pg, (USED, WINDOWED, RELEASE, PRUNE, INSERT, SETTLE, CLEAR))


class PostgresQuotas(PostgresPart):
    """Mixed into ``PostgresStore``: the quota ledger, on its pool."""

    @riding
    def quota_reserve(self, ask: QuotaAsk, now: float) -> QuotaGrant | QuotaRefusal:
        with self._connection() as db:
            db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                       (json.dumps(["tether-quota", ask.key]),))
            used = int(db.execute(self._sql(_USED), used_args(
                ask.key, ask.window, now, ask.session_id)).fetchone()[0])
            got = grant(ask, used, os.urandom(12).hex())
            if got is None:
                rows = db.execute(self._sql(_WINDOWED), (ask.key, now - ask.window)).fetchall()
                return QuotaRefusal(used, frees_at(rows, used, ask))
            db.execute(self._sql(_RELEASE), (ask.key, ask.session_id))
            db.execute(self._sql(_PRUNE), (ask.key, now - ask.window))
            db.execute(self._sql(_CLEAR), (ask.key, now, now))
            db.execute(self._sql(_INSERT), insert_args(ask, got, now))
        return got

    @riding
    def quota_settle(self, row: str, amount: int, hold: int, now: float) -> None:
        with self._connection() as db:
            db.execute(self._sql(_SETTLE), (amount, hold, now, row))

    @riding
    def quota_used(self, key: str, window: float, now: float) -> int:
        with self._connection() as db:
            return int(db.execute(self._sql(_USED), used_args(key, window, now, "")).fetchone()[0])
