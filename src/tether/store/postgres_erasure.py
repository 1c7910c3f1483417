"""The PostgreSQL store's erasure: events rewritten in place, and no dead row version left.

Why apart from ``store.postgres``: erasure (a user's content removed, hashes kept) is a rewrite
beside the journal, not part of appending and reading it; and rewriting a row is not enough to
forget it. An ``UPDATE`` leaves the row's old version in its page as a dead tuple, and a plain
``VACUUM`` only marks that space free: the bytes stay in the relation's files until some later
row happens to overwrite them.

Decision: after an erasure, ``purge_erased`` runs ``VACUUM FULL`` on the tables an erasure
rewrites (events, approvals, private arguments, threads; their TOAST tables with them), which
writes each into a new file holding only live rows. It takes each table's exclusive lock for the
time of the rewrite: every session's appends to this store wait for it. VACUUM FULL must keep a
dead row version that a transaction older than its deletion may still read — any transaction
of the database, not only tether's — so the erasure first waits, up to ``OLDER_WAIT`` seconds,
for those to end; and it waits at most ``LOCK_WAIT`` seconds for each table's lock, since every
append queues behind a VACUUM that waits. What it cannot reach is said, not hidden
(``Erasure.left``): such a transaction still open, a table it could not lock, and the server's
write-ahead log (and any WAL archive, replica or
backup), which keeps the erased text until its segments are recycled.
The store rewrites an event's type and data in place and never its hash, link or timestamp,
which ``tether.journal.erasure`` vouches for from the erasure record.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tether.errors import NotFound
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart

OLDER_WAIT = 30.0  # seconds an erasure waits for transactions older than it to end
LOCK_WAIT = 5.0  # seconds VACUUM FULL waits for a table's lock (appends queue behind it)
REWRITTEN = ("events", "approvals", "private_arguments", "threads", "thread_turns")
WAL_LEFT = ("PostgreSQL's write-ahead log (pg_wal), and any WAL archive, replica or backup of "
            "the database, keep the erased text until their segments are recycled or expire; "
            "tether does not reach them")


class PostgresErasure(PostgresPart):
    """Mixed into ``PostgresStore``: erasure, on its pool."""

    @riding
    def erase(self, session_id: str, rewritten: Sequence[tuple[int, str, str]], *,
              drop_private: bool = True) -> None:
        with self._connection() as db:
            found = db.execute(self._sql("SELECT 1 FROM {s}.sessions WHERE session_id = %s "
                                         "FOR UPDATE"), (session_id,)).fetchone()
            if found is None:
                raise NotFound(f"no session {session_id!r} in {self.url}")
            with db.cursor() as cursor:
                cursor.executemany(self._sql(
                    "UPDATE {s}.events SET type = %s, data = %s, jsonb_era = FALSE "
                    "WHERE session_id = %s AND seq = %s"),
                    [(type, data, session_id, seq) for seq, type, data in rewritten])
            if drop_private:
                db.execute(self._sql("DELETE FROM {s}.private_arguments WHERE session_id = %s"),
                           (session_id,))
            db.execute(self._sql("UPDATE {s}.thread_turns SET turn = NULL WHERE session_id = %s"),
                       (session_id,))

    @riding
    def purge_erased(self) -> tuple[str, ...]:
        with self._connection() as db:
            after = db.execute("SELECT txid_current() % 4294967296").fetchone()[0]
            db.commit()  # VACUUM runs outside a transaction
            older = _older_transactions(db, after)
            db.autocommit = True
            try:
                locked = self._vacuum(db)
            finally:
                db.autocommit = False
        left = []
        if older:
            left.append(f"{len(older)} transaction(s) of this database older than the erasure "
                        f"were still open after {OLDER_WAIT:g} s (pids "
                        f"{', '.join(map(str, older))}), so VACUUM FULL had to keep the old row "
                        "versions they may read; run `tether store purge` once they end")
        if locked:
            left.append(f"VACUUM FULL of {', '.join(locked)} could not take its lock within "
                        f"{LOCK_WAIT:g} s (a transaction was using the table), so their old row "
                        "versions stay; run `tether store purge` once it ends")
        return (*left, WAL_LEFT)

    def _vacuum(self, db: Any) -> list[str]:
        """VACUUM FULL each rewritten table, waiting at most ``LOCK_WAIT`` for its lock (every
        append queues behind a VACUUM that waits); the tables it could not lock."""
        import psycopg

        locked = []
        db.execute(f"SET lock_timeout = {int(LOCK_WAIT * 1000)}")
        try:
            for table in REWRITTEN:
                try:
                    db.execute(self._sql(f"VACUUM FULL {{s}}.{table}"))
                except psycopg.errors.LockNotAvailable:
                    locked.append(table)
        finally:
            db.execute("RESET lock_timeout")
        return locked


def _older_transactions(db: Any, after: int) -> list[int]:
    """The backends of this database whose snapshot or transaction is older than the
    transaction ``after`` (begun once the erasure had committed), waited out for up to
    ``OLDER_WAIT`` seconds: VACUUM FULL keeps every row version such a one may still read."""
    deadline, pause = time.monotonic() + OLDER_WAIT, 0.01
    while True:
        rows = db.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
            "pid <> pg_backend_pid() AND (age(backend_xmin) > age(%(x)s::text::xid) OR "
            "age(backend_xid) > age(%(x)s::text::xid)) ORDER BY pid", {"x": after}).fetchall()
        db.commit()
        if not rows or time.monotonic() > deadline:
            return [int(pid) for (pid,) in rows]
        time.sleep(pause)  # a back-off between looks: the catalogue has no event to wait on
        pause = min(pause * 2, 0.5)
