"""SQLite: the embedded default store — one file, WAL, one transaction per step.

Decision: SQLite in WAL mode gives crash-safe commits without a server, readers that never block
the writer, and safe use by several processes on one machine (``BEGIN IMMEDIATE`` serialises
writers; a busy timeout makes them wait rather than fail). ``synchronous=NORMAL`` is the default:
in WAL mode a commit survives the process being killed at any instant, which is what resume
needs; ``?synchronous=full`` adds an fsync per commit for power-loss durability at about a
millisecond each. Schema changes are numbered migrations; a file written by a newer tether is
refused with a clear error instead of being misread.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from tether.errors import NotFound
from tether.store.anchor_chain import (
    ANCHOR_GENESIS,
    Anchor,
    approval_anchor,
    attempt_anchor,
    audit_key,
    head_anchor,
    seal_anchor,
)
from tether.store.base import (
    ConflictError,
    Lease,
    SchemaError,
    SessionBusy,
    StoreError,
    StoreFull,
    holder_is_gone,
    lease_columns,
)
from tether.store.checkpoints import SQLiteCheckpoints
from tether.store.session_index import StepFacts, step_facts
from tether.store.sqlite_checkpoint import BACKSTOP_PAGES, Checkpointer
from tether.store.sqlite_erasure import SQLiteErasure
from tether.store.sqlite_halts import SQLiteHalts
from tether.store.sqlite_listing import SQLiteListing
from tether.store.sqlite_open import (
    connect,
    connect_read_only,
    guarded,
    is_full,
    transaction,
)
from tether.store.sqlite_quotas import SQLiteQuotas
from tether.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, statements
from tether.store.sqlite_threads import SQLiteThreads
from tether.types import Event

# the sessions row is the writers' check: it moves on only from the seq the writer read (and,
# for a leased session, only for the lease's holder, whose lease it renews)
MOVE_ON = ("UPDATE sessions SET updated_at = ?, events = ?, last_type = ? "
           "WHERE key = ? AND events = ?")
MOVE_ON_LEASED = ("UPDATE sessions SET updated_at = ?, events = ?, last_type = ?, "
                  "lease_expires = ? WHERE key = ? AND events = ? AND lease_token = ?")
# a step that pauses or ends the session: the row also takes its stop reason and spend
STOPPED = "stop_reason = ?, cost = ?, "
MOVE_ON_STOPPED = MOVE_ON.replace("SET ", "SET " + STOPPED)
MOVE_ON_LEASED_STOPPED = MOVE_ON_LEASED.replace("SET ", "SET " + STOPPED)
KEYS_KEPT = 4096  # session keys remembered by a store (a cache: a forgotten one is looked up)
ROWS_PER_INSERT = 256  # a step's events go in one statement; 256 x 7 values is far below the limit


@functools.lru_cache(maxsize=ROWS_PER_INSERT)
def _insert_events(rows: int) -> str:
    return "INSERT INTO events VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * rows)


def path_of(url: str) -> str:
    """The file a ``sqlite:`` URL names: ``sqlite:///relative.db``, ``sqlite:////abs/path.db``
    ("" when it names none)."""
    parsed = urlparse(url)
    path = parsed.path if url.startswith("sqlite:///") else parsed.netloc + parsed.path
    if url.startswith("sqlite:////"):
        return "/" + path.lstrip("/")
    if url.startswith("sqlite:///"):
        return path[1:] if path.startswith("/") else path
    return path


class SQLiteStore(SQLiteListing, SQLiteThreads, SQLiteErasure, SQLiteCheckpoints,
                  SQLiteQuotas, SQLiteHalts):
    """The embedded default store: one SQLite file in WAL mode (``sqlite:///tether.db``), safe
    for several processes on one machine.

    Args:
        path: The database file, made if missing.
        synchronous: SQLite's ``synchronous``: ``"NORMAL"`` (a commit survives the process
            being killed at any instant), ``"FULL"`` or ``"EXTRA"`` (an fsync per commit, for
            power-loss durability).
    """

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise StoreError(f"synchronous must be NORMAL, FULL or EXTRA, got {synchronous!r}")
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self._lock = threading.RLock()
        self._keys: dict[str, int] = {}  # session id -> key, for sessions appended to
        self._audit_key = audit_key()  # signs anchors; kept outside the database
        self.read_only = False  # opened for audit only: its disk was full
        try:
            self._db = connect(self.path)
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")  # see checkpoint
            self._migrate()
        except sqlite3.Error as exc:
            if not is_full(exc, self.path):
                raise StoreError(f"cannot open SQLite store {self.path!r}: {exc}") from None
            self._open_read_only(exc)
        self._checkpoints = Checkpointer(self.path)
        self._cursor = self._db.cursor()  # for appends (Connection.execute makes one per call)

    def _open_read_only(self, full: sqlite3.Error) -> None:
        """Open for audit a file whose disk is full (every write refused with StoreFull); only
        a file of this tether's schema can be read so: an older one must be migrated first."""
        with contextlib.suppress(Exception):
            self._db.close()
        try:
            self._db = connect_read_only(self.path)
            version = self._version()
        except sqlite3.Error as exc:
            raise StoreFull(self.url, f"SQLite: {full}; it cannot even be opened read-only: "
                            f"{exc}") from None
        if version != SCHEMA_VERSION:
            self._db.close()
            raise StoreFull(self.url, f"SQLite: {full}; " + (
                "a new store cannot be created there" if version == 0 else
                "its schema must be migrated first, which needs space"))
        self.read_only = True

    def _writable(self, session_id: str | None = None) -> None:
        if self.read_only:
            raise StoreFull(self.url, "this store was opened read-only, for audit, because its "
                            "disk was full; open it again once space is freed",
                            session_id=session_id)

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        path = path_of(url)
        if not path:
            raise StoreError(f"no file in {url!r}; write sqlite:///relative.db or "
                             "sqlite:////absolute/path.db")
        options = {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}
        return cls(path, synchronous=options.get("synchronous", "NORMAL"))

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _migrate(self) -> None:
        with self._lock:
            if self._version() == SCHEMA_VERSION:  # nothing to write: opens on a full disk
                return
            self._db.execute("BEGIN IMMEDIATE")  # creation and migration wait their turn
            try:
                self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, "
                                 "value TEXT NOT NULL)")
                version = self._version()
                if version > SCHEMA_VERSION:
                    raise SchemaError(
                        f"{self.path} has schema version {version}, newer than this tether "
                        f"understands ({SCHEMA_VERSION}); upgrade tether to open it")
                for number in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in statements(MIGRATIONS[number]):
                        self._db.execute(statement)
                if version and version < 6:  # what was stored before anchoring, anchored now
                    self._anchor_existing()
                if version != SCHEMA_VERSION:
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                                     (str(SCHEMA_VERSION),))
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a full disk has rolled it back already
                    self._db.execute("ROLLBACK")
                raise

    def _version(self) -> int:
        """The file's schema version (0 for a new file), read without writing."""
        try:
            row = self._db.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return 0
            raise
        return int(row[0]) if row else 0

    def append(self, session_id: str, events: Sequence[Event],
               data_json: Sequence[str] | None = None, lease: Lease | None = None) -> None:
        if not events:
            return
        if data_json is None or len(data_json) != len(events):
            data_json = [e.json_text or json.dumps(e.data, ensure_ascii=False) for e in events]
        first, last = events[0], events[-1]
        facts = step_facts(events)  # what the index keeps beside the row's count and type
        with self._lock:
            self._writable(session_id)
            cursor = self._cursor
            with transaction(cursor, self.path, self.url, session_id):
                if first.seq == 1:
                    subject = first.data.get("subject") or {}
                    cursor.execute(
                        "INSERT OR IGNORE INTO sessions (session_id, tenant_id, agent, "
                        "created_at, updated_at, events, last_type, lease_holder, lease_token, "
                        "lease_expires, user_id, thread_id, stop_reason, cost) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (session_id, subject.get("tenant_id"), first.data.get("agent"),
                         first.timestamp, last.timestamp, last.seq, last.type,
                         *lease_columns(lease), facts.user_id, facts.thread_id,
                         facts.stop_reason, facts.cost))
                    key, moved = cursor.lastrowid, cursor.rowcount
                else:
                    key = self._keys.get(session_id)
                    moved = self._move_on(key, first.seq - 1, last, lease, facts)
                if moved != 1:  # another writer came first, the lease moved, or a stale key
                    row = cursor.execute("SELECT key, events, lease_token, lease_holder, "
                                         "lease_expires FROM sessions WHERE session_id = ?",
                                         (session_id,)).fetchone()
                    if row is None or row[1] != first.seq - 1:
                        raise ConflictError(f"session {session_id}: expected seq "
                                            f"{(row[1] if row else 0) + 1}, got {first.seq}; "
                                            "another writer appended first")
                    if lease is not None and row[2] != lease.token:
                        raise SessionBusy(session_id, row[3], row[4], lost=True)
                    key = row[0]  # e.g. pruned and begun anew by another process
                    self._move_on(key, row[1], last, lease, facts)
                self._refuse_halted(key, session_id, events)  # tether.store.halts
                values: list[Any] = []
                for e, text in zip(events, data_json, strict=True):
                    values += (key, e.seq, e.type, e.timestamp, text, e.prev_hash, e.hash)
                for at in range(0, len(values), 7 * ROWS_PER_INSERT):
                    rows = values[at:at + 7 * ROWS_PER_INSERT]
                    cursor.execute(_insert_events(len(rows) // 7), rows)
                head = head_anchor(session_id, events)
                if head is not None:
                    self._anchor("head", session_id, head)
            self._checkpoints.committed()
            assert key is not None  # the sessions row moved on, so it exists and has a key
            if len(self._keys) >= KEYS_KEPT:
                self._keys.clear()
            self._keys[session_id] = key

    def _anchor(self, kind: str, session_id: str, body: Mapping[str, Any]) -> None:
        """Append to the anchor chain (inside the caller's transaction)."""
        row = self._db.execute("SELECT hash FROM anchors ORDER BY seq DESC LIMIT 1").fetchone()
        prev = row[0] if row else ANCHOR_GENESIS
        text, digest, mac = seal_anchor(prev, body, self._audit_key)
        self._db.execute("INSERT INTO anchors (kind, session_id, body, prev, hash, mac) VALUES "
                         "(?, ?, ?, ?, ?, ?)", (kind, session_id, text, prev, digest, mac))

    def _anchor_existing(self) -> None:
        """Anchor the heads of the sessions and the approval decisions a file already holds."""
        heads = self._db.execute(
            "SELECT s.session_id, e.seq, e.hash, e.type FROM sessions AS s JOIN events AS e "
            "ON e.session_key = s.key AND e.seq = s.events ORDER BY s.key").fetchall()
        for sid, seq, digest, kind in heads:
            self._anchor("head", sid, {"session_id": sid, "seq": seq, "head": digest,
                                       "type": kind})
        for (record,) in self._db.execute("SELECT record FROM approvals ORDER BY rowid"):
            decided = approval_anchor(json.loads(record))
            if decided is not None:
                self._anchor("approval", decided["session_id"], decided)

    def anchor_lanes(self) -> int:
        return 1  # one writer at a time anyway: one chain

    def anchors(self) -> list[Anchor]:
        with self._lock:
            rows = self._db.execute("SELECT seq, kind, session_id, body, prev, hash, mac FROM "
                                    "anchors ORDER BY seq").fetchall()
        return [Anchor(*row) for row in rows]

    def _move_on(self, key: int | None, stored: int, last: Event, lease: Lease | None,
                 facts: StepFacts) -> int:
        stop: tuple[Any, ...] = ()
        if facts.stopped:  # the index keeps a pause's or an end's reason and spend
            stop = (facts.stop_reason, facts.cost)
        if lease is None:
            return self._cursor.execute(MOVE_ON_STOPPED if stop else MOVE_ON, (
                *stop, last.timestamp, last.seq, last.type, key, stored)).rowcount
        return self._cursor.execute(MOVE_ON_LEASED_STOPPED if stop else MOVE_ON_LEASED, (
            *stop, last.timestamp, last.seq, last.type, time.time() + lease.ttl, key, stored,
            lease.token)).rowcount

    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease:
        with self._lock:
            self._writable(session_id)
            db = self._db
            with transaction(db, self.path, self.url, session_id):
                row = db.execute("SELECT lease_holder, lease_token, lease_expires FROM sessions "
                                 "WHERE session_id = ?", (session_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no session {session_id!r} in {self.url}")
                current, token, expires = row
                if current not in (None, holder) and expires > time.time() and \
                        not holder_is_gone(current):
                    raise SessionBusy(session_id, current, expires)
                db.execute("UPDATE sessions SET lease_holder = ?, lease_token = ?, "
                           "lease_expires = ? WHERE session_id = ?",
                           (holder, token + 1, time.time() + ttl, session_id))
        return Lease(holder, token + 1, ttl)

    def renew(self, session_id: str, lease: Lease) -> None:
        with self._lock:
            self._writable(session_id)
            with guarded(self.path, self.url, session_id):
                moved = self._db.execute(
                    "UPDATE sessions SET lease_expires = ? WHERE session_id = ? AND "
                    "lease_token = ?", (time.time() + lease.ttl, session_id, lease.token)).rowcount
                if moved != 1:
                    row = self._db.execute("SELECT lease_holder, lease_expires FROM sessions WHERE "
                                           "session_id = ?", (session_id,)).fetchone()
                    raise SessionBusy(session_id, row[0] if row else None, row[1] if row else 0.0,
                                      lost=True)

    def release(self, session_id: str, lease: Lease) -> None:
        with self._lock:
            self._writable(session_id)
            with guarded(self.path, self.url, session_id):
                self._db.execute("UPDATE sessions SET lease_holder = NULL, lease_expires = 0 WHERE "
                                 "session_id = ? AND lease_token = ?", (session_id, lease.token))

    def read(self, session_id: str, after_seq: int = 0) -> list[Event]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, type, ts, data, prev_hash, hash FROM events WHERE session_key = "
                "(SELECT key FROM sessions WHERE session_id = ?) AND seq > ? ORDER BY seq",
                (session_id, after_seq)
            ).fetchall()
        return [Event.from_json(seq, type, session_id, ts, data, prev, digest)
                for seq, type, ts, data, prev, digest in rows]

    def unverifiable(self, session_id: str) -> frozenset[int]:
        return frozenset()  # SQLite has always kept the exact text

    def unlisted(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT session_key FROM events WHERE session_key "
                                    "NOT IN (SELECT key FROM sessions) ORDER BY 1").fetchall()
        return [f"key {key}" for (key,) in rows]

    def prune(self, before: float) -> int:
        with self._lock:
            self._writable()
            db = self._db
            with transaction(db, self.path, self.url):
                doomed = db.execute("SELECT key, session_id FROM sessions WHERE updated_at < ?",
                                    (before,)).fetchall()
                for key, sid in doomed:
                    self._anchor("prune", sid, {"session_id": sid, "before": before})
                    db.execute("DELETE FROM events WHERE session_key = ?", (key,))
                    db.execute("DELETE FROM approvals WHERE session_id = ?", (sid,))
                    db.execute("DELETE FROM private_arguments WHERE session_id = ?", (sid,))
                    db.execute("DELETE FROM threads WHERE session_id = ?", (sid,))
                    db.execute("UPDATE thread_turns SET turn = NULL WHERE session_id = ?", (sid,))
                    db.execute("DELETE FROM sessions WHERE session_id = ?", (sid,))
        return len(doomed)

    def put_approval(self, record: Mapping[str, Any]) -> None:
        with self._lock:
            self._writable()
            with guarded(self.path, self.url):
                try:
                    self._db.execute("INSERT INTO approvals VALUES (?, ?, ?, ?)",
                                     (record["id"], record["session_id"], record["status"],
                                      json.dumps(dict(record))))
                except sqlite3.IntegrityError:
                    raise ConflictError(f"approval {record['id']} already exists") from None

    def put_private(self, session_id: str, call_id: str, arguments: Mapping[str, Any]) -> None:
        with self._lock:
            self._writable(session_id)
            with guarded(self.path, self.url, session_id):
                self._db.execute("INSERT OR REPLACE INTO private_arguments VALUES (?, ?, ?)",
                                 (session_id, call_id, json.dumps(dict(arguments))))

    def get_private(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT arguments FROM private_arguments WHERE session_id = ? "
                                   "AND call_id = ?", (session_id, call_id)).fetchone()
        return dict(json.loads(row[0])) if row else None

    def drop_private(self, session_id: str) -> None:
        with self._lock:
            self._writable(session_id)
            with guarded(self.path, self.url, session_id):
                self._db.execute("DELETE FROM private_arguments WHERE session_id = ?",
                                 (session_id,))

    def get_approval(self, approval_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT record FROM approvals WHERE id = ?",
                                   (approval_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def list_approvals(self, *, status: str | None = None,
                       session_id: str | None = None) -> list[dict[str, Any]]:
        query, args = "SELECT record FROM approvals WHERE 1 = 1", list[str]()
        if status is not None:
            query, args = query + " AND status = ?", [*args, status]
        if session_id is not None:
            query, args = query + " AND session_id = ?", [*args, session_id]
        with self._lock:
            rows = self._db.execute(query + " ORDER BY rowid", args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def update_approval(self, approval_id: str, expected_status: str,
                        changes: Mapping[str, Any]) -> bool:
        with self._lock:
            self._writable()
            db = self._db
            with transaction(db, self.path, self.url):
                row = db.execute("SELECT record FROM approvals WHERE id = ? AND status = ?",
                                 (approval_id, expected_status)).fetchone()
                if row is None:
                    return False
                record = {**json.loads(row[0]), **changes}
                db.execute("UPDATE approvals SET status = ?, record = ? WHERE id = ?",
                           (record["status"], json.dumps(record), approval_id))
                decided = approval_anchor(record) if "status" in changes else None
                if decided is not None:
                    self._anchor("approval", record["session_id"], decided)
                tried = attempt_anchor(record, changes)
                if tried is not None:
                    self._anchor("attempt", record["session_id"], tried)
                return True

    def close(self) -> None:
        with self._lock:
            self._checkpoints.close()
            self._db.close()
