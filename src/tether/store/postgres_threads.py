"""The PostgreSQL store's conversation threads.

Why apart from ``store.postgres``: threads (which sessions continue which conversation, for
whom) are an index beside the journal, not part of appending and reading it; the store class
mixes them in (and erasure from ``store.postgres_erasure``).

Decision: joining a thread, and giving an ended turn its place in the thread's history, take a
transaction-scoped advisory lock on the thread, so workers at once get consecutive places; a
join is idempotent (a retry after a lost commit reply finds the session already placed and
returns its place), and so is a place in the history; the turn kept with a place is chained
onto the last one kept under the same lock (``tether.store.turn_chain``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tether.store.base import ThreadEntry, ThreadTail, thread_key
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart
from tether.store.turn_chain import GENESIS, ThreadTurn, turn_digest, turn_link

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
                  session_ids: Sequence[str], turns: Mapping[str, str] | None = None) -> None:
        tenant, user = thread_key(tenant_id, user_id)
        with self._connection() as db:
            _lock_thread(db, tenant, user, thread_id)
            for session_id in session_ids:
                row = db.execute(self._sql(
                    "UPDATE {s}.threads SET ended = (SELECT coalesce(max(ended), 0) + 1 FROM "
                    f"{{s}}.threads {_WHERE}) {_WHERE} AND session_id = %s AND ended IS NULL "
                    "RETURNING ended"),
                    (tenant, user, thread_id, tenant, user, thread_id, session_id)).fetchone()
                if row is not None and turns and session_id in turns:
                    self._keep(db, (tenant, user, thread_id), int(row[0]), session_id,
                               turns[session_id], True)

    def _keep(self, db: Any, owner: tuple[str, str, str], place: int, session_id: str,
              text: str, ending: bool = False) -> None:
        """Keep a turn at its place, chained onto the last one kept (the thread locked by the
        caller's transaction); one at or below the last place kept is left out, and so is a
        turn ending on a thread whose earlier places were given with nothing kept."""
        last = db.execute(self._sql(f"SELECT ended, link FROM {{s}}.thread_turns {_WHERE} "
                                    "ORDER BY ended DESC LIMIT 1"), owner).fetchone()
        if last is not None and int(last[0]) >= place:
            return
        if last is None and ending and db.execute(self._sql(
                f"SELECT 1 FROM {{s}}.threads {_WHERE} AND ended < %s LIMIT 1"),
                (*owner, place)).fetchone():
            return
        digest = turn_digest(text)
        db.execute(self._sql("INSERT INTO {s}.thread_turns VALUES "
                             "(%s, %s, %s, %s, %s, %s, %s, %s)"),
                   (*owner, place, session_id, digest,
                    turn_link(GENESIS if last is None else last[1], digest), text))

    @riding
    def thread_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                     through: int | None = None) -> list[ThreadTurn]:
        tenant, user = thread_key(tenant_id, user_id)
        with self._connection() as db:
            rows = db.execute(self._sql(
                "SELECT ended, session_id, digest, link, turn FROM {s}.thread_turns "
                f"{_WHERE} AND ended <= %s ORDER BY ended"),
                (tenant, user, thread_id, 2**62 if through is None else through)).fetchall()
        return [ThreadTurn(int(e), s, d, k, t) for e, s, d, k, t in rows]

    @riding
    def thread_tail(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    after: int) -> ThreadTail:
        owner = (*thread_key(tenant_id, user_id), thread_id)
        with self._connection() as db:
            revision = db.execute(self._sql(f"SELECT revision FROM {{s}}.thread_revisions "
                                            f"{_WHERE}"), owner).fetchone()
            select = ("SELECT thread_id, position, session_id, user_id, created_at, ended FROM "
                      f"{{s}}.threads {_WHERE} AND ")  # (two ranges of threads_by_end)
            entries = db.execute(self._sql(
                f"{select} ended IS NULL UNION ALL {select} ended > %s ORDER BY position"),
                (*owner, *owner, after)).fetchall()
            turns = db.execute(self._sql(
                "SELECT ended, session_id, digest, link, turn FROM {s}.thread_turns "
                f"{_WHERE} AND ended > %s ORDER BY ended"), (*owner, after)).fetchall()
        return ThreadTail(
            [ThreadEntry(t, int(p), s, u or None, float(c), None if e is None else int(e))
             for t, p, s, u, c, e in entries],
            [ThreadTurn(int(e), s, d, k, t) for e, s, d, k, t in turns],
            int(revision[0]) if revision else 0)

    @riding
    def fill_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                   turns: Sequence[tuple[int, str, str]]) -> None:
        tenant, user = thread_key(tenant_id, user_id)
        with self._connection() as db:
            _lock_thread(db, tenant, user, thread_id)
            for place, session_id, text in turns:
                self._keep(db, (tenant, user, thread_id), place, session_id, text)

    @riding
    def leave_threads(self, tenant_id: str | None, user_id: str | None) -> int:
        with self._connection() as db:
            db.execute(self._sql("DELETE FROM {s}.thread_turns WHERE tenant_id = %s AND "
                                 "user_id = %s"), thread_key(tenant_id, user_id))
            cursor = db.execute(self._sql("DELETE FROM {s}.threads WHERE tenant_id = %s AND "
                                          "user_id = %s"), thread_key(tenant_id, user_id))
            return int(cursor.rowcount)
