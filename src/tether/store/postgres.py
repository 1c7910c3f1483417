"""PostgreSQL: the store for deployments where many workers share sessions.

Decision: psycopg 3 with a connection pool; the same tables and rules as SQLite. An append locks
the session's index row before checking that its first seq follows the stored ones, so
concurrent writers to one session serialise and the loser gets a ConflictError instead of a
forked chain; writers to different sessions never wait on each other. Appends are written by
statement, many sessions at a time (``store.postgres_steps``), and the async runtime's are
group-committed on its event loop (``store.loop_commit``). Tables live in a schema (``tether``
by default) so a shared database stays tidy, and the schema version is checked on open like
SQLite's.

This module is the pool, the schema and the journal's own SQL (append, read, list, prune); what
is held beside the journal is mixed in from a module each: leases (``store.postgres_leases``),
anchors (``store.postgres_anchors``), approvals and kept arguments
(``store.postgres_approvals``), threads (``store.postgres_threads``) and erasure
(``store.postgres_erasure``); the URL's own settings are read by ``store.postgres_url``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from tether.errors import install_command
from tether.store.anchor_chain import audit_key
from tether.store.base import Lease, SchemaError, SessionInfo, StoreError, StoreUnavailable
from tether.store.loop_commit import LoopCommitters
from tether.store.postgres_anchors import PostgresAnchors
from tether.store.postgres_approvals import PostgresApprovals
from tether.store.postgres_checkpoints import PostgresCheckpoints
from tether.store.postgres_erasure import PostgresErasure
from tether.store.postgres_halts import PostgresHalts
from tether.store.postgres_leases import PostgresLeases
from tether.store.postgres_outage import DOWN_GRACE, RideThrough, lost_connection, riding
from tether.store.postgres_plans import Append
from tether.store.postgres_probe import probe
from tether.store.postgres_quotas import PostgresQuotas
from tether.store.postgres_schema import ANCHOR_LANES, MIGRATIONS, SCHEMA_VERSION
from tether.store.postgres_steps import Statements, arun, run
from tether.store.postgres_threads import PostgresThreads
from tether.store.postgres_url import ride_through_in_url, schema_in_url
from tether.store.session_index import LISTED, PG_SESSION_ID, SessionFilter, where_sql
from tether.types import Event
from tether.urls import redact_text, redact_url

DEFAULT_SCHEMA = "tether"


class PostgresStore(PostgresThreads, PostgresErasure, PostgresApprovals, PostgresLeases,
                    PostgresAnchors, PostgresCheckpoints, PostgresQuotas, PostgresHalts):
    """``url`` is a libpq URL; the store's tables live in ``schema``, which may also be named in
    the URL as ``?schema=NAME`` or libpq's ``?options=-csearch_path%3DNAME``. A lost database
    (a restart, a failover) is waited out for ``ride_through`` seconds (30 by default, or
    ``?ride_through=N`` in the URL) before an operation fails with StoreUnavailable
    (``store.postgres_outage``). ``url`` as this object shows it has every secret masked
    (``tether.urls.redact_url``)."""

    def __init__(self, url: str, *, schema: str | None = None, min_size: int = 1,
                 max_size: int = 8, ride_through: float | None = None) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError("the PostgreSQL store needs psycopg: "
                             f"{install_command('postgres')}") from None
        url, bound = ride_through_in_url(url, ride_through)
        dsn, named = schema_in_url(url)
        if schema is not None and named is not None and schema != named:
            raise StoreError(f"the URL names schema {named!r} and schema={schema!r} was given; "
                             "name it once")
        schema = schema or named or DEFAULT_SCHEMA
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", schema):
            raise StoreError(f"schema name {schema!r} must be a plain lower-case identifier")
        self.url = redact_url(url)
        self.schema = schema
        # the batch statements, and the audit key that signs anchors (kept outside the database)
        self._statements = Statements(schema, audit_key())
        self._ride = RideThrough(bound, self.url, dsn, recover=self._recover)
        self._unreleased: dict[str, int] = {}  # session -> lease token a lost database kept
        probe(dsn, self.url)  # a bad URL fails now, with its cause (tether.store.postgres_probe)
        self._pool_of = functools.partial(ConnectionPool, dsn, min_size=min_size,
                                          max_size=max_size, open=False,
                                          kwargs={"autocommit": False})
        self._pool = self._pool_of()
        self._renewing, self._renewed_at = threading.Lock(), -DOWN_GRACE  # see _recover
        try:
            self._pool.open(wait=True, timeout=10)
        except Exception as exc:
            self._pool.close()
            raise StoreUnavailable(self.url, "cannot connect to PostgreSQL: "
                                   f"{redact_text(str(exc), dsn)}") from None
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise
        self._dsn = dsn
        self._committers = LoopCommitters(self._connect, self._write_async, self._ride)

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r}, schema={self.schema!r})"

    def _sql(self, statement: str) -> str:
        return statement.replace("{s}", self.schema)

    def _recover(self, down: bool) -> None:
        """Drop the pool's dead connections; once the store was given up for down, the whole
        pool (its reconnection attempts back off for seconds), for one that connects at once —
        at most once a DOWN_GRACE, however many operations find the store down."""
        if not down:
            self._pool.check()
            return
        with self._renewing:
            if time.monotonic() - self._renewed_at < DOWN_GRACE:
                return
            fresh = self._pool_of()
            fresh.open(wait=False)
            old, self._pool = self._pool, fresh
            self._renewed_at = time.monotonic()
        old.close(timeout=0)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection, waited for no longer than the current try may wait; one that
        lost its server (or reached a read-only standby) is closed, so the pool drops it."""
        with self._pool.connection(timeout=self._ride.wait()) as db:
            try:
                yield db
            except Exception as exc:
                if lost_connection(exc):
                    db.close()
                raise

    @riding
    def _migrate(self) -> None:
        with self._connection() as db:  # creation and migration: one worker at a time
            db.execute("SELECT pg_advisory_xact_lock(hashtext('tether-migrate'))")
            db.execute(self._sql("CREATE SCHEMA IF NOT EXISTS {s}"))
            db.execute(self._sql("CREATE TABLE IF NOT EXISTS {s}.meta "
                                 "(key TEXT PRIMARY KEY, value TEXT NOT NULL)"))
            row = db.execute(self._sql("SELECT value FROM {s}.meta WHERE key = "
                                       "'schema_version'")).fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise SchemaError(f"{self.url} schema {self.schema!r} has version "
                                  f"{version}, newer than this tether understands "
                                  f"({SCHEMA_VERSION}); upgrade tether to open it")
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number]:
                    db.execute(self._sql(statement))
            if version < 7:  # the anchor lanes, lane 0 continuing the chain of before
                run(db, self._statements.open_lanes(ANCHOR_LANES))
            else:
                self._statements.lanes = self._read_lanes(db)
            if version and version < 5:  # what was stored before anchoring, anchored now
                self._anchor_existing(db)
            db.execute(self._sql("INSERT INTO {s}.meta VALUES ('schema_version', %s) ON "
                                 "CONFLICT (key) DO UPDATE SET value = excluded.value"),
                       (str(SCHEMA_VERSION),))

    def append(self, session_id: str, events: Sequence[Event],
               data_json: Sequence[str] | None = None, lease: Lease | None = None) -> None:
        if not events:
            return
        self._ride.call(lambda: self._append(session_id, events, data_json, lease), session_id)

    def _append(self, session_id: str, events: Sequence[Event],
                data_json: Sequence[str] | None, lease: Lease | None) -> None:
        append = self._as_append(session_id, events, data_json, lease)
        with self._connection() as db:
            refused = run(db, self._statements.write([append], self._ride.retrying()))[0]
        if refused is not None:
            raise refused

    async def append_async(self, session_id: str, events: Sequence[Event],
                           data_json: Sequence[str] | None = None,
                           lease: Lease | None = None) -> None:
        """``append`` for the async runtime: made on the event loop by its committer, in a
        commit shared with other sessions' appends (``store.loop_commit``); it returns once the
        append is durable."""
        if events:
            await self._committers.submit(session_id, list(events), data_json, lease)

    async def _connect(self) -> Any:
        import psycopg  # its errors are classified by the committer's ride-through

        return await psycopg.AsyncConnection.connect(
            self._dsn, autocommit=False, application_name=f"tether-commit-{self.schema}")

    async def _write_async(self, db: Any, batch: list[tuple[Any, ...]],
                           retried: bool) -> list[BaseException | None]:
        return await arun(db, self._statements.write([self._as_append(*args) for args in batch],
                                                     retried))

    @staticmethod
    def _as_append(session_id: str, events: Sequence[Event], data_json: Sequence[str] | None,
                lease: Lease | None) -> Append:
        if data_json is None or len(data_json) != len(events):
            data_json = [e.json_text or json.dumps(e.data, ensure_ascii=False) for e in events]
        return session_id, events, data_json, lease

    @riding
    def read(self, session_id: str, after_seq: int = 0) -> list[Event]:
        with self._connection() as db:
            rows = db.execute(self._sql(
                "SELECT seq, type, ts, data, prev_hash, hash FROM {s}.events "
                "WHERE session_id = %s AND seq > %s ORDER BY seq"),
                (session_id, after_seq)).fetchall()
        return [Event.from_json(seq, type, session_id, ts, data, prev, digest)
                for seq, type, ts, data, prev, digest in rows]

    @riding
    def unlisted(self) -> list[str]:
        with self._connection() as db:
            rows = db.execute(self._sql(
                "SELECT DISTINCT session_id FROM {s}.events WHERE session_id NOT IN "
                "(SELECT session_id FROM {s}.sessions) ORDER BY 1")).fetchall()
        return [sid for (sid,) in rows]

    @riding
    def unverifiable(self, session_id: str) -> frozenset[int]:
        with self._connection() as db:
            rows = db.execute(self._sql("SELECT seq FROM {s}.events WHERE session_id = %s "
                                        "AND jsonb_era"), (session_id,)).fetchall()
        return frozenset(r[0] for r in rows)

    @riding
    def sessions(self, *, since: float | None = None,
                 until: float | None = None) -> list[SessionInfo]:
        with self._connection() as db:
            rows = db.execute(self._sql(
                f"SELECT {LISTED} FROM {{s}}.sessions WHERE updated_at >= %s AND "
                "updated_at < %s ORDER BY created_at"),
                (since if since is not None else float("-inf"),
                 until if until is not None else float("inf"))).fetchall()
        return [SessionInfo(*row) for row in rows]

    @riding
    def page_sessions(self, where: SessionFilter, limit: int,
                      after: tuple[float, str] | None = None) -> list[SessionInfo]:
        clause, args = where_sql(where, after, "%s", PG_SESSION_ID)
        with self._connection() as db:
            rows = db.execute(self._sql(
                f"SELECT {LISTED} FROM {{s}}.sessions WHERE {clause} "
                f"ORDER BY created_at DESC, {PG_SESSION_ID} DESC LIMIT %s"),
                [*args, limit]).fetchall()
        return [SessionInfo(*row) for row in rows]

    @riding
    def prune(self, before: float) -> int:
        with self._connection() as db:
            doomed = [r[0] for r in db.execute(self._sql(
                "SELECT session_id FROM {s}.sessions WHERE updated_at < %s FOR UPDATE"),
                (before,)).fetchall()]
            for sid in doomed:
                self._anchor(db, "prune", sid, {"session_id": sid, "before": before})
            for table in ("events", "approvals", "private_arguments", "threads", "sessions"):
                db.execute(self._sql(f"DELETE FROM {{s}}.{table} WHERE session_id = ANY(%s)"),
                           (doomed,))
            db.execute(self._sql("UPDATE {s}.thread_turns SET turn = NULL WHERE session_id = "
                                 "ANY(%s)"), (doomed,))
        return len(doomed)

    def close(self) -> None:
        self._committers.close()
        self._pool.close()

