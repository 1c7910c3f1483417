"""Where a store keeps the signed checkpoints of its anchor chain.

Why apart from the stores' classes: a checkpoint (``tether.journal.checkpoint``) is a record the
verifier reads, written by ``tether audit checkpoint`` (or its Python API) after it was signed
outside the database and, optionally, cosigned by a witness; it is not part of appending or
reading a journal. Each store mixes in its part: memory and SQLite here, PostgreSQL in
``store.postgres_checkpoints``.

Decision: the store keeps the note exactly as signed (its text and every signature line) and its
tree size, and never checks it: a checkpoint is evidence against the store, so only the
verifier, holding the public keys, judges it. Deleting checkpoint rows is therefore possible for
whoever can write the database — which is why a witness keeps the newest one it cosigned on its
own side, and why verify can be given a checkpoint from outside the store.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Protocol

from tether.store.base import StoredCheckpoint
from tether.store.sqlite_open import transaction


class Checkpoints(Protocol):
    """A store that keeps checkpoints: every tether store."""

    def put_checkpoint(self, size: int, note: str) -> None:
        """Keep a signed checkpoint of ``size`` anchors (the note as signed)."""

    def checkpoints(self) -> list[StoredCheckpoint]:
        """Every kept checkpoint, oldest first."""


class MemoryCheckpoints:
    """Mixed into ``MemoryStore``."""

    _checkpoints: list[StoredCheckpoint]
    _lock: threading.Lock

    def put_checkpoint(self, size: int, note: str) -> None:
        with self._lock:
            self._checkpoints.append(StoredCheckpoint(size, note, time.time()))

    def checkpoints(self) -> list[StoredCheckpoint]:
        with self._lock:
            return list(self._checkpoints)


class SQLiteCheckpoints:
    """Mixed into ``SQLiteStore``: on its connection and lock."""

    path: str
    url: str
    _db: sqlite3.Connection
    _lock: threading.RLock

    def put_checkpoint(self, size: int, note: str) -> None:
        with self._lock, transaction(self._db, self.path, self.url):
            self._db.execute("INSERT INTO checkpoints (size, note, created_at) VALUES (?, ?, ?)",
                             (size, note, time.time()))

    def checkpoints(self) -> list[StoredCheckpoint]:
        with self._lock:
            rows = self._db.execute("SELECT size, note, created_at FROM checkpoints ORDER BY "
                                    "id").fetchall()
        return [StoredCheckpoint(*row) for row in rows]
