"""The SQLite store's quota ledger (``tether.store.quotas``).

Why apart from ``store.sqlite``: quotas are a ledger beside the journal; the store class mixes
this in. Decision: a reservation is one ``BEGIN IMMEDIATE`` transaction — sum what counts,
decide, release the session's older holds, insert — so workers in several processes on one
file take from a quota one at a time, and none sees a sum another is about to change.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import TYPE_CHECKING

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
from tether.store.sqlite_open import guarded, transaction


def _sql(statement: str) -> str:
    return statement.format(s="", p="?")


_USED, _WINDOWED, _RELEASE, _PRUNE, _INSERT, _SETTLE, _CLEAR = map(
    _sql, (USED, WINDOWED, RELEASE, PRUNE, INSERT, SETTLE, CLEAR))


class SQLiteQuotas:
    """Mixed into ``SQLiteStore``: the quota ledger, on its connection and lock."""

    path: str
    url: str
    _db: sqlite3.Connection
    _lock: threading.RLock

    if TYPE_CHECKING:  # the store's own, which it mixes this into
        def _writable(self, session_id: str | None = None) -> None: ...

    def quota_reserve(self, ask: QuotaAsk, now: float) -> QuotaGrant | QuotaRefusal:
        db = self._db
        with self._lock:
            self._writable(ask.session_id)
            with transaction(db, self.path, self.url, ask.session_id):
                used = int(db.execute(_USED, used_args(ask.key, ask.window, now,
                                                       ask.session_id)).fetchone()[0])
                got = grant(ask, used, os.urandom(12).hex())
                if got is None:
                    rows = db.execute(_WINDOWED, (ask.key, now - ask.window)).fetchall()
                    return QuotaRefusal(used, frees_at(rows, used, ask))
                db.execute(_RELEASE, (ask.key, ask.session_id))
                db.execute(_PRUNE, (ask.key, now - ask.window))
                db.execute(_CLEAR, (ask.key, now, now))
                db.execute(_INSERT, insert_args(ask, got, now))
        return got

    def quota_settle(self, row: str, amount: int, hold: int, now: float) -> None:
        with self._lock:
            self._writable()
            with guarded(self.path, self.url):
                self._db.execute(_SETTLE, (amount, hold, now, row))

    def quota_used(self, key: str, window: float, now: float) -> int:
        with self._lock:
            return int(self._db.execute(_USED, used_args(key, window, now, "")).fetchone()[0])
