"""The in-memory store's quota ledger (``tether.store.quotas``), under the store's lock.

Why apart from ``store.memory``: quotas are a ledger beside the journal; the store class mixes
this in. Decision: the same rules as the database stores, applied to a list of rows per key
while the store's lock is held, so threads sharing one ``MemoryStore`` race as workers on a
database do (one process only: a memory store is not shared between processes).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from tether.store.quotas import QuotaAsk, QuotaGrant, QuotaRefusal, frees_at, grant, live


@dataclass(slots=True)
class _Row:
    session_id: str
    holder: str
    at: float
    amount: int
    hold: int
    settled: bool
    expires_at: float


class MemoryQuotas:
    """Mixed into ``MemoryStore``: quota rows by key, on its lock and leases."""

    _lock: threading.Lock
    _leases: dict[str, tuple[str | None, int, float]]
    _quota_rows: dict[str, dict[str, _Row]]  # key -> row id -> row

    def _live(self, row: _Row, now: float) -> bool:
        lease = self._leases.get(row.session_id)
        return live(row.expires_at, None if lease is None else (lease[0], lease[2]),
                    row.holder, now)

    def _used(self, rows: dict[str, _Row], window: float, now: float, session_id: str) -> int:
        used = 0
        for row in rows.values():
            if (row.at > now - window and row.settled) or (
                    not row.settled and self._live(row, now)):
                used += row.amount
            if row.hold and row.session_id != session_id and self._live(row, now):
                used += row.hold
        return used

    def quota_reserve(self, ask: QuotaAsk, now: float) -> QuotaGrant | QuotaRefusal:
        with self._lock:
            rows = self._quota_rows.setdefault(ask.key, {})
            used = self._used(rows, ask.window, now, ask.session_id)
            got = grant(ask, used, os.urandom(12).hex())
            if got is None:
                windowed = sorted((r.at, r.amount) for r in rows.values()
                                  if r.at > now - ask.window and r.settled)
                return QuotaRefusal(used, frees_at(windowed, used, ask))
            for row_id, row in list(rows.items()):
                if row.session_id == ask.session_id or not self._live(row, now):
                    row.hold = 0
                if row.settled and not row.hold and row.at <= now - ask.window:
                    del rows[row_id]
            rows[got.row] = _Row(ask.session_id, ask.holder, now, got.amount, got.hold,
                                 ask.settled, 0.0 if ask.settled else ask.expires_at)
            return got

    def quota_settle(self, row: str, amount: int, hold: int, now: float) -> None:
        with self._lock:
            for rows in self._quota_rows.values():
                found = rows.get(row)
                if found is not None:
                    found.amount, found.hold, found.settled = amount, hold, True
                    found.at, found.expires_at = now, 0.0
                    return

    def quota_used(self, key: str, window: float, now: float) -> int:
        with self._lock:
            return self._used(self._quota_rows.get(key, {}), window, now, "")
