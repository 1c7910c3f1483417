"""Halts in the SQLite store (``tether.store.halts`` says what a halt is and the rule it keeps).

Decision: a halt and an append that starts a side effect are both ``BEGIN IMMEDIATE`` write
transactions, which SQLite runs one at a time across every process on the file; the append
reads the standing halts inside its own transaction, after its session's row, so whichever
commits first is seen by the other. ``halt_state`` holds how many halts
stand (no more is read while none does) and the version watchers read.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence

from tether.store.halts import COLUMNS, Halt, Halted, halt_from_row, scope_params, starts_effect
from tether.store.sqlite_open import guarded, transaction
from tether.types import Event

# the standing halts that cover the session whose index row has ``key``
COVERING = (f"SELECT {', '.join('h.' + c for c in COLUMNS.split(', '))} FROM halts AS h "
            "JOIN sessions AS s ON s.key = ? WHERE h.lifted_at IS NULL "
            "AND (h.session_id IS NULL OR h.session_id = s.session_id) "
            "AND (h.agent IS NULL OR h.agent = s.agent) "
            "AND (h.tenant_id IS NULL OR h.tenant_id = s.tenant_id) LIMIT 1")


class SQLiteHalts:
    """Halts of ``SQLiteStore``, mixed in; they use its connection, lock and helpers."""

    _db: sqlite3.Connection
    _cursor: sqlite3.Cursor
    _lock: threading.RLock
    path: str
    url: str

    def _writable(self, session_id: str | None = None) -> None: ...

    def _refuse_halted(self, key: int | None, session_id: str,
                       events: Sequence[Event]) -> None:
        """In ``append``'s transaction: Halted (rolling it back) if ``events`` start a side
        effect of a session a standing halt covers."""
        if key is None or not starts_effect(events):
            return
        cursor = self._cursor
        if not cursor.execute("SELECT standing FROM halt_state").fetchone()[0]:
            return  # none stands: no more to read
        row = cursor.execute(COVERING, (key,)).fetchone()
        if row is not None:
            raise Halted(halt_from_row(row), session_id)

    def put_halt(self, halt: Halt) -> None:
        with self._lock:
            self._writable()
            with transaction(self._db, self.path, self.url):
                self._db.execute(f"INSERT INTO halts ({COLUMNS}) VALUES "
                                 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", scope_params(halt))
                self._db.execute("UPDATE halt_state SET version = version + 1, "
                                 "standing = standing + 1")

    def lift_halt(self, halt_id: str, by: str, by_method: str) -> Halt | None:
        with self._lock:
            self._writable()
            with transaction(self._db, self.path, self.url):
                moved = self._db.execute(
                    "UPDATE halts SET lifted_at = ?, lifted_by = ?, lifted_method = ? "
                    "WHERE id = ? AND lifted_at IS NULL",
                    (time.time(), by, by_method, halt_id)).rowcount
                if moved != 1:
                    return None
                self._db.execute("UPDATE halt_state SET version = version + 1, "
                                 "standing = standing - 1")
                row = self._db.execute(f"SELECT {COLUMNS} FROM halts WHERE id = ?",
                                       (halt_id,)).fetchone()
        return halt_from_row(row)

    def list_halts(self, *, standing: bool = True) -> list[Halt]:
        where = " WHERE lifted_at IS NULL" if standing else ""
        with self._lock:
            rows = self._db.execute(f"SELECT {COLUMNS} FROM halts{where} "
                                    "ORDER BY created_at").fetchall()
        return [halt_from_row(row) for row in rows]

    def halt_version(self) -> int:
        with self._lock, guarded(self.path, self.url):
            row = self._db.execute("SELECT version FROM halt_state").fetchone()
        return int(row[0]) if row else 0

    def session_owner(self, session_id: str) -> tuple[str | None, str | None] | None:
        with self._lock:
            row = self._db.execute("SELECT tenant_id, agent FROM sessions WHERE session_id = ?",
                                   (session_id,)).fetchone()
        return None if row is None else (row[0], row[1])
