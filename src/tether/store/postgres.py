"""PostgreSQL: the store for deployments where many workers share sessions.

Decision: psycopg 3 with a connection pool; the same tables and rules as SQLite. An append locks
the session's index row before checking that its first seq follows the stored ones, so
concurrent writers to one session serialise and the loser gets a ConflictError instead of a
forked chain; writers to different sessions never wait on each other. Appends are written by
statement, many sessions at a time (``store.postgres_steps``), and the async runtime's are
group-committed on its event loop (``store.loop_commit``).
Approval decisions are single ``UPDATE ... WHERE status = expected`` statements: compare-and-set
in one round trip. Tables live in a schema (``tether`` by default) so a shared database stays
tidy, and the schema version is checked on open like SQLite's.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from tether.errors import NotFound
from tether.store.base import (
    Anchor,
    ConflictError,
    Lease,
    SchemaError,
    SessionBusy,
    SessionInfo,
    StoreError,
    StoreUnavailable,
    approval_anchor,
    audit_key,
    holder_is_gone,
)
from tether.store.loop_commit import LoopCommitters
from tether.store.postgres_erasure import PostgresErasure
from tether.store.postgres_outage import (
    DEFAULT_RIDE_THROUGH,
    DOWN_GRACE,
    RideThrough,
    lost_connection,
    riding,
)
from tether.store.postgres_probe import probe
from tether.store.postgres_schema import ANCHOR_LANES, MIGRATIONS, SCHEMA_VERSION
from tether.store.postgres_steps import Append, Statements, arun, run
from tether.store.postgres_threads import PostgresThreads
from tether.types import Event
from tether.urls import redact_text, redact_url

DEFAULT_SCHEMA = "tether"
RENEW_BOUND = 2.0  # seconds a lease renewal (on the event loop) waits out a lost database


class PostgresStore(PostgresThreads, PostgresErasure):
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
            raise StoreError("the PostgreSQL store needs psycopg: pip install -e '.[postgres]' in "
                             "tether's checkout") from None
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

    def _anchor(self, db: Any, kind: str, session_id: str, body: Mapping[str, Any]) -> None:
        run(db, self._statements.anchor([(kind, session_id, body)]))

    def _anchor_existing(self, db: Any) -> None:
        """Anchor the heads of the sessions and the approval decisions already stored."""
        heads = db.execute(self._sql(
            "SELECT s.session_id, e.seq, e.hash, e.type FROM {s}.sessions AS s JOIN {s}.events "
            "AS e ON e.session_id = s.session_id AND e.seq = s.events ORDER BY s.created_at"))\
            .fetchall()
        for sid, seq, digest, kind in heads:
            self._anchor(db, "head", sid, {"session_id": sid, "seq": seq, "head": digest,
                                           "type": kind})
        for (record,) in db.execute(self._sql("SELECT record FROM {s}.approvals ORDER BY "
                                              "created")).fetchall():
            decided = approval_anchor(json.loads(record))
            if decided is not None:
                self._anchor(db, "approval", decided["session_id"], decided)

    def _read_lanes(self, db: Any) -> int:
        """The store's anchor lanes: as its meta records them, else as many as have a row."""
        row = db.execute(self._sql("SELECT value FROM {s}.meta WHERE key = 'anchor_lanes'"))\
            .fetchone()
        if row is None:
            row = db.execute(self._sql("SELECT count(*) FROM {s}.anchor_lanes")).fetchone()
        return max(1, int(row[0]))

    @riding
    def anchor_lanes(self) -> int:
        with self._connection() as db:
            return self._read_lanes(db)

    @riding
    def anchors(self) -> list[Anchor]:
        with self._connection() as db:
            rows = db.execute(self._sql("SELECT seq, kind, session_id, body, prev, hash, mac, "
                                        "lane FROM {s}.anchors ORDER BY seq")).fetchall()
        return [Anchor(*row) for row in rows]

    @riding
    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT lease_holder, lease_token, lease_expires FROM "
                                       "{s}.sessions WHERE session_id = %s FOR UPDATE"),
                             (session_id,)).fetchone()
            if row is None:
                raise NotFound(f"no session {session_id!r} in {self.url}")
            current, token, expires = row
            if current not in (None, holder) and expires > time.time() and \
                    not holder_is_gone(current) and self._unreleased.get(session_id) != token:
                raise SessionBusy(session_id, current, expires)
            db.execute(self._sql("UPDATE {s}.sessions SET lease_holder = %s, lease_token = %s, "
                                 "lease_expires = %s WHERE session_id = %s"),
                       (holder, token + 1, time.time() + ttl, session_id))
        self._unreleased.pop(session_id, None)
        return Lease(holder, token + 1, ttl)

    def renew(self, session_id: str, lease: Lease) -> None:
        """Not ridden through for the whole bound: renewing runs on the event loop and must not
        hold it that long (each append renews the lease too, and says so if it was lost)."""
        self._ride.call(lambda: self._renew(session_id, lease), session_id,
                        bound=min(self._ride.bound, RENEW_BOUND))

    def _renew(self, session_id: str, lease: Lease) -> None:
        with self._connection() as db:
            moved = db.execute(self._sql("UPDATE {s}.sessions SET lease_expires = %s WHERE "
                                         "session_id = %s AND lease_token = %s"),
                               (time.time() + lease.ttl, session_id, lease.token)).rowcount
            if moved != 1:
                row = db.execute(self._sql("SELECT lease_holder, lease_expires FROM "
                                           "{s}.sessions WHERE session_id = %s"),
                                 (session_id,)).fetchone()
                raise SessionBusy(session_id, row[0] if row else None,
                                  row[1] if row else 0.0, lost=True)

    def release(self, session_id: str, lease: Lease) -> None:
        """One try: a lease not released lapses by itself, and the session's next acquire
        through this store takes it at once."""
        try:
            self._ride.call(lambda: self._release(session_id, lease), session_id, bound=0.0)
        except StoreUnavailable:
            self._unreleased[session_id] = lease.token
            raise

    def _release(self, session_id: str, lease: Lease) -> None:
        with self._connection() as db:
            db.execute(self._sql("UPDATE {s}.sessions SET lease_holder = NULL, lease_expires = 0 "
                                 "WHERE session_id = %s AND lease_token = %s"),
                       (session_id, lease.token))

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
                "SELECT session_id, created_at, updated_at, events, last_type, tenant_id, agent "
                "FROM {s}.sessions WHERE updated_at >= %s AND updated_at < %s "
                "ORDER BY created_at"),
                (since if since is not None else float("-inf"),
                 until if until is not None else float("inf"))).fetchall()
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
        return len(doomed)

    @riding
    def put_approval(self, record: Mapping[str, Any]) -> None:
        import psycopg

        try:
            with self._connection() as db:
                db.execute(self._sql("INSERT INTO {s}.approvals (id, session_id, status, record) "
                                     "VALUES (%s, %s, %s, %s)"),
                           (record["id"], record["session_id"], record["status"],
                            json.dumps(dict(record))))
        except psycopg.errors.UniqueViolation:
            if self._ride.retrying() and self.get_approval(record["id"]) == dict(record):
                return  # put by the try whose commit's reply the dropped connection lost
            raise ConflictError(f"approval {record['id']} already exists") from None

    @riding
    def put_private(self, session_id: str, call_id: str, arguments: Mapping[str, Any]) -> None:
        with self._connection() as db:
            db.execute(self._sql("INSERT INTO {s}.private_arguments VALUES (%s, %s, %s) "
                                 "ON CONFLICT (session_id, call_id) "
                                 "DO UPDATE SET arguments = excluded.arguments"),
                       (session_id, call_id, json.dumps(dict(arguments))))

    @riding
    def get_private(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT arguments FROM {s}.private_arguments "
                                       "WHERE session_id = %s AND call_id = %s"),
                             (session_id, call_id)).fetchone()
        return dict(json.loads(row[0])) if row else None

    @riding
    def drop_private(self, session_id: str) -> None:
        with self._connection() as db:
            db.execute(self._sql("DELETE FROM {s}.private_arguments WHERE session_id = %s"),
                       (session_id,))

    @riding
    def get_approval(self, approval_id: str) -> dict[str, Any] | None:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT record FROM {s}.approvals WHERE id = %s"),
                             (approval_id,)).fetchone()
        return json.loads(row[0]) if row else None

    @riding
    def list_approvals(self, *, status: str | None = None,
                       session_id: str | None = None) -> list[dict[str, Any]]:
        with self._connection() as db:
            rows = db.execute(self._sql(
                "SELECT record FROM {s}.approvals WHERE (%s::text IS NULL OR status = %s) "
                "AND (%s::text IS NULL OR session_id = %s) ORDER BY created"),
                (status, status, session_id, session_id)).fetchall()
        return [json.loads(r[0]) for r in rows]

    @riding
    def update_approval(self, approval_id: str, expected_status: str,
                        changes: Mapping[str, Any]) -> bool:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT record FROM {s}.approvals WHERE id = %s AND "
                                       "status = %s FOR UPDATE"),
                             (approval_id, expected_status)).fetchone()
            if row is None:  # on a retry: was it this call's earlier try that changed it?
                return self._ride.retrying() and self._changed_by(db, approval_id, changes)
            record = {**json.loads(row[0]), **changes}
            db.execute(self._sql("UPDATE {s}.approvals SET status = %s, record = %s "
                                 "WHERE id = %s"),
                       (record["status"], json.dumps(record), approval_id))
            decided = approval_anchor(record) if "status" in changes else None
            if decided is not None:
                self._anchor(db, "approval", record["session_id"], decided)
        return True

    def _changed_by(self, db: Any, approval_id: str, changes: Mapping[str, Any]) -> bool:
        """Whether the approval holds every one of ``changes`` (a decision carries who decided
        and when): what a try committed before its connection dropped left behind. Its status
        may have moved on since, as only a committed approval's can (the session used it)."""
        row = db.execute(self._sql("SELECT record FROM {s}.approvals WHERE id = %s"),
                         (approval_id,)).fetchone()
        if row is None:
            return False
        record = json.loads(row[0])
        status = changes.get("status", record["status"])
        return record["status"] in (status, *NEXT_STATUS.get(status, ())) and all(
            record.get(key) == value for key, value in changes.items() if key != "status")

    def close(self) -> None:
        self._committers.close()
        self._pool.close()


NEXT_STATUS = {"approved": ("used",)}  # what an approval's status can become after it


def ride_through_in_url(url: str, given: float | None) -> tuple[str, float]:
    """The URL without tether's ``ride_through`` parameter, and the bound in seconds: the one
    given, else the URL's, else ``DEFAULT_RIDE_THROUGH``."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    named = [value for name, value in pairs if name == "ride_through"]
    if not named:
        return url, DEFAULT_RIDE_THROUGH if given is None else given
    try:
        bound = float(named[-1].removesuffix("s"))
    except ValueError:
        raise StoreError(f"ride_through={named[-1]!r} in the store URL must be a number of "
                         "seconds, e.g. ?ride_through=30") from None
    if given is not None and given != bound:
        raise StoreError(f"the URL sets ride_through={bound:g} and ride_through={given:g} was "
                         "given; set it once")
    kept = urlencode([(n, v) for n, v in pairs if n != "ride_through"], quote_via=quote)
    return urlunsplit(parts._replace(query=kept)), bound


_SEARCH_PATH = re.compile(r"-c\s*search_path\s*=\s*([^\s,]+)")


def schema_in_url(url: str) -> tuple[str, str | None]:
    """The URL to hand libpq (without tether's own ``schema`` parameter) and the schema the URL
    names, if any: ``?schema=NAME`` or ``?options=-csearch_path%3DNAME``."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    named = [value for name, value in pairs if name == "schema"]
    for name, value in pairs:
        found = _SEARCH_PATH.search(value) if name == "options" else None
        if found:
            named.append(found.group(1))
    if len(set(named)) > 1:
        raise StoreError(f"the URL names more than one schema ({', '.join(sorted(set(named)))});"
                         " name one")
    if not any(name == "schema" for name, _ in pairs):
        return url, named[0] if named else None
    kept = urlencode([(n, v) for n, v in pairs if n != "schema"], quote_via=quote)
    return urlunsplit(parts._replace(query=kept)), named[0]
