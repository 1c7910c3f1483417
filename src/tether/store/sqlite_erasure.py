"""The SQLite store's erasure: events rewritten in place, and no earlier version left in its files.

Why apart from ``store.sqlite``: erasure (a user's content removed, hashes kept) is a rewrite
beside the journal, not part of appending and reading it; and rewriting a row is not enough to
forget it. SQLite leaves a deleted cell's bytes in its page unless ``secure_delete`` is on
(Debian's build turns it on by default, others do not), and in WAL mode every commit appends
whole page images to the ``-wal`` file, so each step that touched a session's pages left a copy
of its text there — 16 to 35 copies of each text, until the last connection closed.

Decision: every writing connection sets ``secure_delete`` (``sqlite_open.connect``), so a
rewritten or deleted row's bytes are zeroed in its page whatever the build's default; and after
an erasure ``purge_erased`` checkpoints the log into the file and truncates it to zero bytes
(``wal_checkpoint(TRUNCATE)``), waiting out readers up to the busy timeout. A checkpoint that a
reader still blocks is said, not hidden: the log then keeps earlier page images until the next
checkpoint that completes. The store rewrites an event's type and data in place and never its
hash, link or timestamp, which ``tether.journal.erasure`` vouches for from the erasure record.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.errors import NotFound
from tether.store.sqlite_open import guarded, transaction


class SQLiteErasure:
    """Mixed into ``SQLiteStore``: erasure, on its connection and lock."""

    path: str
    url: str
    _db: sqlite3.Connection
    _lock: threading.RLock

    if TYPE_CHECKING:  # the store's own, which it mixes this into
        def _writable(self, session_id: str | None = None) -> None: ...

    def erase(self, session_id: str, rewritten: Sequence[tuple[int, str, str]], *,
              drop_private: bool = True) -> None:
        with self._lock:
            self._writable(session_id)
            db = self._db
            with transaction(db, self.path, self.url, session_id):
                row = db.execute("SELECT key FROM sessions WHERE session_id = ?",
                                 (session_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no session {session_id!r} in {self.url}")
                db.executemany("UPDATE events SET type = ?, data = ? WHERE session_key = ? "
                               "AND seq = ?",
                               [(type, data, row[0], seq) for seq, type, data in rewritten])
                if drop_private:
                    db.execute("DELETE FROM private_arguments WHERE session_id = ?",
                               (session_id,))
                db.execute("UPDATE thread_turns SET turn = NULL WHERE session_id = ?",
                           (session_id,))

    def purge_erased(self) -> tuple[str, ...]:
        with self._lock:
            self._writable()
            with guarded(self.path, self.url):
                busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            return (f"{self.path}-wal still holds earlier versions of the erased events: "
                    "another connection was reading the store throughout the checkpoint; run "
                    "`tether store purge` once the other connections are done",)
        return ()
