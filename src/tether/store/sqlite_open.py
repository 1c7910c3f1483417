"""Opening a SQLite store, and writing to it, on a bad day: workers starting together, a full disk.

Why: workers start together as a matter of course (``--workers``, a fleet restarting), and
switching a new file to WAL takes an exclusive lock that SQLite refuses at once, without waiting
out the busy timeout, when another connection holding a read lock wants the same upgrade (its
deadlock rule): four processes opening one new file lost one open in eight to ``database is
locked``. And a disk that fills under a run made SQLite roll the transaction back itself, so
the store's own ``ROLLBACK`` failed and hid the cause ("cannot rollback - no transaction is
active"); reopening the file then failed the same way, so not even an audit could read it.

Decision: the busy timeout is set before anything else, and the switch to WAL is made only when
the file is not in WAL already, retried while SQLite answers busy (each try a statement of its
own, so its read lock is let go between tries) up to the same bound the busy timeout gives;
creation and migration run in one ``BEGIN IMMEDIATE`` transaction, which waits its turn. Every
write runs in ``transaction``: a rollback only when a transaction is still open, and a full disk
raised as ``StoreFull``, which names the cause and says the session is resumable. A file that
cannot be opened for writing because its disk is full is opened read-only for audit (its WAL
read as usual; when SQLite cannot even create its shared-memory file and no WAL content is
waiting, the main file alone, which then holds everything), and every write to it is refused
with ``StoreFull``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from urllib.parse import quote

from tether.store.base import StoreFull

BUSY_SECONDS = 30.0  # how long an open or a write waits for another worker's lock
NEARLY_FULL = 1 << 20  # bytes free under which an I/O error on open is taken as a full disk


def connect(path: str) -> sqlite3.Connection:
    """A connection for writing, waiting its turn behind other workers opening the same file;
    sqlite3.OperationalError when it cannot be had (see ``is_full``)."""
    db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None,
                         check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
        db.execute("PRAGMA secure_delete=ON")  # erased rows leave no bytes (sqlite_erasure)
        use_wal(db)
    except BaseException:
        db.close()
        raise
    return db


def use_wal(db: sqlite3.Connection) -> None:
    """Put the file in WAL mode unless it is already, retrying while another worker holds the
    lock the switch needs (SQLite refuses it without waiting when waiting could deadlock)."""
    deadline, pause = time.monotonic() + BUSY_SECONDS, 0.002
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or \
                    time.monotonic() > deadline:
                raise
        time.sleep(pause)  # a back-off between tries, not a wait for an outcome
        pause = min(pause * 2, 0.1)


def connect_read_only(path: str) -> sqlite3.Connection:
    """A read-only connection to a store whose disk is full. It reads the WAL as usual when
    SQLite can map its shared memory; when it cannot (no room to create that file) and no WAL
    content waits to be checkpointed, the main file holds everything and is read alone."""
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None,
                         check_same_thread=False)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
        wal = f"{path}-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > 0:
            raise
    db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None,
                         check_same_thread=False)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return db


def is_full(exc: sqlite3.Error, path: str) -> bool:
    """Whether ``exc`` means the disk holding ``path`` is full: SQLite says so (SQLITE_FULL),
    or an I/O error came while (almost) no space is left there."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_FULL:
        return True
    if code != sqlite3.SQLITE_IOERR:
        return False
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free < NEARLY_FULL
    except OSError:
        return False


class guarded:  # lower case: used as a function, ``with guarded(...)``
    """A write outside ``transaction`` (one statement): a full disk raised as ``StoreFull``.

    A class rather than a generator: it wraps every append, where a ``contextmanager`` pair
    (``transaction`` inside ``guarded``) cost a step about 2% more instructions."""

    __slots__ = ("_path", "_session_id", "_url")

    def __init__(self, path: str, url: str, session_id: str | None = None) -> None:
        self._path, self._url, self._session_id = path, url, session_id

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: object) -> None:
        if isinstance(exc, sqlite3.OperationalError) and is_full(exc, self._path):
            raise StoreFull(self._url, f"SQLite: {exc}", session_id=self._session_id) from None


class transaction(guarded):  # lower case: ``with transaction(...)``
    """One ``BEGIN IMMEDIATE`` transaction, committed on leaving; rolled back on an error if
    SQLite has not rolled it back itself; a full disk raised as ``StoreFull``."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection | sqlite3.Cursor, path: str, url: str,
                 session_id: str | None = None) -> None:
        self._db, self._path, self._url, self._session_id = db, path, url, session_id

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            guarded.__exit__(self, type(exc), exc, None)
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: object) -> None:
        db = self._db
        try:
            if kind is None:
                db.execute("COMMIT")
                return
            connection = db if isinstance(db, sqlite3.Connection) else db.connection
            if connection.in_transaction:
                db.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            guarded.__exit__(self, type(error), error, None)
            raise
        guarded.__exit__(self, kind, exc, traceback)
