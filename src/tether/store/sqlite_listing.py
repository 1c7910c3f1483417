"""The SQLite store's session listing: every session, or a page of them by keyset.

Why apart from ``store.sqlite``: listing reads the session index and never writes, while that
module is the append path; the store class mixes this in. Decision: a page is one indexed query,
``(created_at, session_id) < (?, ?) ORDER BY created_at DESC, session_id DESC LIMIT ?``, whose
cost does not grow with how deep the page is (``tether.store.session_index`` builds its filter;
``sessions_newest`` and the per-tenant and per-user indexes of schema 9 serve it).
"""

from __future__ import annotations

import sqlite3
import threading

from tether.store.base import SessionInfo
from tether.store.session_index import LISTED, SessionFilter, where_sql


class SQLiteListing:
    """Mixed into ``SQLiteStore``: listing its sessions, on its connection and lock."""

    _db: sqlite3.Connection
    _lock: threading.RLock

    def sessions(self, *, since: float | None = None,
                 until: float | None = None) -> list[SessionInfo]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {LISTED} FROM sessions WHERE updated_at >= ? AND updated_at < ? "
                "ORDER BY created_at",
                (since if since is not None else float("-inf"),
                 until if until is not None else float("inf"))).fetchall()
        return [SessionInfo(*row) for row in rows]

    def page_sessions(self, where: SessionFilter, limit: int,
                      after: tuple[float, str] | None = None) -> list[SessionInfo]:
        clause, args = where_sql(where, after)
        with self._lock:
            rows = self._db.execute(
                f"SELECT {LISTED} FROM sessions WHERE {clause} "
                "ORDER BY created_at DESC, session_id DESC LIMIT ?", [*args, limit]).fetchall()
        return [SessionInfo(*row) for row in rows]
