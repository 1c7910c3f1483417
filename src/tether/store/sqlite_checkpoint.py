"""WAL checkpoints off the writer's path: the SQLite store's commits never wait for an fsync.

Why: in WAL mode a commit appends pages to the log; every so often the log is copied back into
the database file (a checkpoint), and a checkpoint syncs the file to disk even with
``synchronous=NORMAL``. SQLite runs it by default inside the commit that crosses 1,000 log pages,
so one step in a few hundred waited tens of milliseconds for two fsyncs: measured, that was half
of the SQLite journal's whole cost per step (a commit's median 70 µs, its mean 190 µs).

Decision: the writer's own automatic checkpoint is raised to a backstop (``BACKSTOP_PAGES``), and
every ``EVERY_COMMITS`` commits a daemon thread runs a PASSIVE checkpoint on a connection of its
own — it copies what it can without blocking the writer or any reader, and the sqlite3 module
releases the GIL while it waits for the disk. Under a load that never pauses, a passive
checkpoint cannot catch up with the log's end, so the log would never start over: the backstop
(the writer's own checkpoint, mostly already done by then) bounds it. Durability is SQLite's
own, unchanged: a commit is in the log, and the log is never cut before its pages are in the file.
A failed background checkpoint is only logged: the next one, or the backstop, does the work.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

EVERY_COMMITS = 100  # commits between background checkpoints (~500 log pages of steps)
BACKSTOP_PAGES = 10_000  # the writer checkpoints itself past this many log pages (~40 MB)

log = logging.getLogger(__name__)


class Checkpointer:
    """Runs a store's WAL checkpoints on a daemon thread, one at a time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._commits = 0
        self._running = False
        self._closed = False
        self._lock = threading.Lock()

    def committed(self) -> None:
        """Count a commit; start a background checkpoint when one is due and none runs."""
        self._commits += 1
        if self._commits < EVERY_COMMITS:
            return
        with self._lock:
            if self._running or self._closed:
                return
            self._running, self._commits = True, 0
        threading.Thread(target=self._checkpoint, name="tether-sqlite-checkpoint",
                         daemon=True).start()

    def close(self) -> None:
        """No checkpoint starts after this; one already running ends on its own."""
        with self._lock:
            self._closed = True

    def _checkpoint(self) -> None:
        try:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            try:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                db.close()
        except sqlite3.Error as exc:  # e.g. the file was removed meanwhile
            log.debug("background checkpoint of %s failed: %s", self.path, exc)
        finally:
            with self._lock:
                self._running = False
