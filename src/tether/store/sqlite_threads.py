"""The SQLite store's conversation threads.

Why apart from ``store.sqlite``: threads (which sessions continue which conversation, for whom)
are an index beside the journal, not part of appending and reading it; the store class mixes
them in (and erasure from ``store.sqlite_erasure``).

Decision: a thread's place is taken with one ``INSERT ... SELECT max + 1`` inside the store's
``BEGIN IMMEDIATE`` transaction, so two sessions joining at once get two places, and a turn's
place in the thread's history (``ended``) likewise, and the turn kept with it is chained onto
the last one kept in the same transaction (``tether.store.turn_chain``).
"""

from __future__ import annotations

import operator
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tether.store.base import ThreadEntry, ThreadTail, thread_key
from tether.store.sqlite_open import transaction
from tether.store.turn_chain import GENESIS, ThreadTurn, turn_digest, turn_link

_ALL = 2**62  # ``through`` when every kept turn is asked for
_POSITION = operator.itemgetter(1)


class SQLiteThreads:
    """Mixed into ``SQLiteStore``: the thread index, on its connection and lock."""

    path: str
    url: str
    _db: sqlite3.Connection
    _lock: threading.RLock

    if TYPE_CHECKING:  # the store's own, which it mixes this into
        def _writable(self, session_id: str | None = None) -> None: ...

    def join_thread(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    session_id: str) -> int:
        tenant, user = thread_key(tenant_id, user_id)
        with self._lock:
            self._writable(session_id)
            with transaction(self._db, self.path, self.url, session_id):
                row = self._db.execute(
                    "INSERT INTO threads (tenant_id, user_id, thread_id, position, session_id, "
                    "created_at) SELECT ?, ?, ?, coalesce(max(position), 0) + 1, ?, ? "
                    "FROM threads WHERE tenant_id = ? AND user_id = ? AND thread_id = ? "
                    "RETURNING position",
                    (tenant, user, thread_id, session_id, time.time(), tenant, user,
                     thread_id)).fetchone()
        return int(row[0])

    def thread_entries(self, tenant_id: str | None, user_id: str | None,
                       thread_id: str | None = None, *,
                       every_user: bool = False) -> list[ThreadEntry]:
        tenant, user = thread_key(tenant_id, user_id)
        query, args = "SELECT thread_id, position, session_id, user_id, created_at, ended " \
                      "FROM threads WHERE tenant_id = ?", [tenant]
        if not every_user:
            query, args = query + " AND user_id = ?", [*args, user]
        if thread_id is not None:
            query, args = query + " AND thread_id = ?", [*args, thread_id]
        with self._lock:
            rows = self._db.execute(query + " ORDER BY user_id, thread_id, position",
                                    args).fetchall()
        return [ThreadEntry(t, p, s, u or None, c, e) for t, p, s, u, c, e in rows]

    def end_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                  session_ids: Sequence[str], turns: Mapping[str, str] | None = None) -> None:
        where = "tenant_id = ? AND user_id = ? AND thread_id = ?"
        owner = (*thread_key(tenant_id, user_id), thread_id)
        with self._lock:
            self._writable()
            with transaction(self._db, self.path, self.url):
                for session_id in session_ids:
                    row = self._db.execute(
                        f"UPDATE threads SET ended = (SELECT coalesce(max(ended), 0) + 1 FROM "
                        f"threads WHERE {where}) WHERE {where} AND session_id = ? AND ended IS "
                        "NULL RETURNING ended", (*owner, *owner, session_id)).fetchone()
                    if row is not None and turns and session_id in turns:
                        self._keep(owner, int(row[0]), session_id, turns[session_id], True)

    def _keep(self, owner: tuple[str, str, str], place: int, session_id: str, text: str,
              ending: bool = False) -> None:
        """Keep a turn at its place, chained onto the last one kept (inside the caller's
        transaction); one at or below the last place kept is left out, and so is a turn
        ending on a thread whose earlier places were given with nothing kept."""
        last = self._db.execute(
            "SELECT ended, link FROM thread_turns WHERE tenant_id = ? AND user_id = ? AND "
            "thread_id = ? ORDER BY ended DESC LIMIT 1", owner).fetchone()
        if last is not None and last[0] >= place:
            return
        if last is None and ending and self._db.execute(
                "SELECT 1 FROM threads WHERE tenant_id = ? AND user_id = ? AND thread_id = ? "
                "AND ended < ? LIMIT 1", (*owner, place)).fetchone():
            return
        digest = turn_digest(text)
        self._db.execute("INSERT INTO thread_turns VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (*owner, place, session_id, digest,
                          turn_link(GENESIS if last is None else last[1], digest), text))

    def thread_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                     through: int | None = None) -> list[ThreadTurn]:
        with self._lock:
            rows = self._db.execute(
                "SELECT ended, session_id, digest, link, turn FROM thread_turns WHERE "
                "tenant_id = ? AND user_id = ? AND thread_id = ? AND ended <= ? ORDER BY ended",
                (*thread_key(tenant_id, user_id), thread_id,
                 _ALL if through is None else through)).fetchall()
        return list(map(ThreadTurn._make, rows))

    def thread_tail(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    after: int) -> ThreadTail:
        owner = (*thread_key(tenant_id, user_id), thread_id)
        where = "tenant_id = ? AND user_id = ? AND thread_id = ?"
        with self._lock:
            revision = self._db.execute(f"SELECT revision FROM thread_revisions WHERE {where}",
                                        owner).fetchone()
            select = ("SELECT thread_id, position, session_id, user_id, created_at, ended FROM "
                      f"threads WHERE {where} AND ")  # (two ranges of threads_by_end, not all)
            entries = sorted(self._db.execute(
                f"{select} ended IS NULL UNION ALL {select} ended > ?",
                (*owner, *owner, after)).fetchall(), key=_POSITION)
            turns = self._db.execute(
                "SELECT ended, session_id, digest, link, turn FROM thread_turns WHERE "
                f"{where} AND ended > ? ORDER BY ended", (*owner, after)).fetchall()
        return ThreadTail([ThreadEntry(t, p, s, u or None, c, e) for t, p, s, u, c, e in entries],
                          list(map(ThreadTurn._make, turns)), revision[0] if revision else 0)

    def fill_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                   turns: Sequence[tuple[int, str, str]]) -> None:
        owner = (*thread_key(tenant_id, user_id), thread_id)
        with self._lock:
            self._writable()
            with transaction(self._db, self.path, self.url):
                for place, session_id, text in turns:
                    self._keep(owner, place, session_id, text)

    def leave_threads(self, tenant_id: str | None, user_id: str | None) -> int:
        with self._lock:
            self._writable()
            with transaction(self._db, self.path, self.url):
                self._db.execute("DELETE FROM thread_turns WHERE tenant_id = ? AND user_id = ?",
                                 thread_key(tenant_id, user_id))
                return self._db.execute("DELETE FROM threads WHERE tenant_id = ? AND user_id = ?",
                                        thread_key(tenant_id, user_id)).rowcount
