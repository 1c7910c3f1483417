"""The PostgreSQL store's conversation threads.

Why apart from ``store.postgres``: threads (which sessions continue which conversation, for
whom) are an index beside the journal, not part of appending and reading it; the store class
mixes them in (and erasure from ``store.postgres_erasure``).

Decision: joining a thread, and giving an ended turn its place in the thread's history, take a
transaction-scoped advisory lock on the thread, so workers at once get consecutive places; a
join is idempotent (a retry after a lost commit reply finds the session already placed and
returns its place), and so is a place in the history.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from tether.store.base import ThreadEntry, thread_key
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart

_WHERE = "WHERE tenant_id = %s AND user_id = %s AND thread_id = %s"


def _lock_thread(db: Any, tenant: str, user: str, thread_id: str) -> None:
    """Hold the thread until the transaction ends: places are taken one at a time, and each is
    committed before the next is taken (so a reader that sees a place sees every one below)."""
    db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
               (json.dumps(["tether-thread", tenant, user, thread_id]),))


class PostgresThreads(PostgresPart):
    """Mixed into ``PostgresStore``: the thread index, on its pool."""

    @riding
    def join_thread(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    session_id: str) -> int:
        tenant, user = thread_key(tenant_id, user_id)
        with self._connection() as db:
            _lock_thread(db, tenant, user, thread_id)
            row = db.execute(self._sql(f"SELECT position FROM {{s}}.threads {_WHERE} AND "
                                       "session_id = %s"),
                             (tenant, user, thread_id, session_id)).fetchone()
            if row is None:
                row = db.execute(self._sql(
                    "INSERT INTO {s}.threads (tenant_id, user_id, thread_id, position, session_id, "
                    "created_at) SELECT %s, %s, %s, coalesce(max(position), 0) + 1, "
                    f"%s, %s FROM {{s}}.threads {_WHERE} RETURNING position"),
                    (tenant, user, thread_id, session_id, time.time(), tenant, user,
                     thread_id)).fetchone()
        return int(row[0])

    @riding
    def thread_entries(self, tenant_id: str | None, user_id: str | None,
                       thread_id: str | None = None, *,
                       every_user: bool = False) -> list[ThreadEntry]:
        tenant, user = thread_key(tenant_id, user_id)
        query, args = ("SELECT thread_id, position, session_id, user_id, created_at, ended FROM "
                       "{s}.threads WHERE tenant_id = %s"), [tenant]
        if not every_user:
            query, args = query + " AND user_id = %s", [*args, user]
        if thread_id is not None:
            query, args = query + " AND thread_id = %s", [*args, thread_id]
        with self._connection() as db:
            rows = db.execute(self._sql(query + " ORDER BY user_id, thread_id, position"),
                              args).fetchall()
        return [ThreadEntry(t, int(p), s, u or None, float(c), None if e is None else int(e))
                for t, p, s, u, c, e in rows]

    @riding
    def end_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                  session_ids: Sequence[str]) -> None:
        tenant, user = thread_key(tenant_id, user_id)
        with self._connection() as db:
            _lock_thread(db, tenant, user, thread_id)
            for session_id in session_ids:
                db.execute(self._sql(
                    "UPDATE {s}.threads SET ended = (SELECT coalesce(max(ended), 0) + 1 FROM "
                    f"{{s}}.threads {_WHERE}) {_WHERE} AND session_id = %s AND ended IS NULL"),
                    (tenant, user, thread_id, tenant, user, thread_id, session_id))

    @riding
    def leave_threads(self, tenant_id: str | None, user_id: str | None) -> int:
        with self._connection() as db:
            cursor = db.execute(self._sql("DELETE FROM {s}.threads WHERE tenant_id = %s AND "
                                          "user_id = %s"), thread_key(tenant_id, user_id))
            return int(cursor.rowcount)
