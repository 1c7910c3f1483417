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

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from tether.store.base import (
    Anchor,
    ConflictError,
    Lease,
    SchemaError,
    SessionBusy,
    SessionInfo,
    StoreError,
    approval_anchor,
    audit_key,
    holder_is_gone,
)
from tether.store.loop_commit import LoopCommitters
from tether.store.postgres_probe import probe
from tether.store.postgres_steps import Append, Statements, arun, run
from tether.types import Event
from tether.urls import redact_text, redact_url

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE {s}.events (
            session_id TEXT NOT NULL, seq BIGINT NOT NULL, type TEXT NOT NULL,
            ts DOUBLE PRECISION NOT NULL, data JSONB NOT NULL, prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL, PRIMARY KEY (session_id, seq))""",
        """CREATE TABLE {s}.sessions (
            session_id TEXT PRIMARY KEY, tenant_id TEXT, agent TEXT,
            created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
            events BIGINT NOT NULL, last_type TEXT NOT NULL)""",
        "CREATE INDEX sessions_updated ON {s}.sessions (updated_at)",
        """CREATE TABLE {s}.approvals (
            id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL,
            record JSONB NOT NULL, created BIGSERIAL)""",
        "CREATE INDEX approvals_status ON {s}.approvals (status, session_id)",
    ],
    # Arguments the journal hides, kept apart from it (Agent(keep_hidden_arguments=True)).
    2: [
        """CREATE TABLE {s}.private_arguments (
            session_id TEXT NOT NULL, call_id TEXT NOT NULL, arguments TEXT NOT NULL,
            PRIMARY KEY (session_id, call_id))""",
    ],
    # Event data and approval records as the exact JSON text tether wrote, not JSONB: JSONB
    # rewrote numbers (1e20 came back as 100000000000000000000), so a recomputed hash no longer
    # matched, and refused \u0000. Rows stored before this keep JSONB's rendering and are
    # marked, so verify can tell a row it cannot re-hash from a tampered one.
    3: [
        "ALTER TABLE {s}.events ALTER COLUMN data TYPE TEXT USING data::text",
        "ALTER TABLE {s}.events ADD COLUMN jsonb_era BOOLEAN NOT NULL DEFAULT TRUE",
        "ALTER TABLE {s}.events ALTER COLUMN jsonb_era SET DEFAULT FALSE",
        "ALTER TABLE {s}.approvals ALTER COLUMN record TYPE TEXT USING record::text",
    ],
    # A running session is leased to one worker: who holds it, the fencing token every append
    # must carry, and when the lease lapses (renewed by each append of its holder).
    4: [
        "ALTER TABLE {s}.sessions ADD COLUMN lease_holder TEXT",
        "ALTER TABLE {s}.sessions ADD COLUMN lease_token BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE {s}.sessions ADD COLUMN lease_expires DOUBLE PRECISION NOT NULL DEFAULT 0",
    ],
    # The store-wide anchor chain (tether.store.base): sessions' heads at start, pause and end,
    # and approval decisions, each chained to the one before (and signed with an audit key).
    5: [
        """CREATE TABLE {s}.anchors (
            seq BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, session_id TEXT NOT NULL,
            body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL, mac TEXT)""",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)
DEFAULT_SCHEMA = "tether"


class PostgresStore:
    """``url`` is a libpq URL; the store's tables live in ``schema``, which may also be named in
    the URL as ``?schema=NAME`` or libpq's ``?options=-csearch_path%3DNAME``. ``url`` as this
    object shows it has every secret masked (``tether.urls.redact_url``)."""


    def __init__(self, url: str, *, schema: str | None = None, min_size: int = 1,
                 max_size: int = 8) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError("the PostgreSQL store needs psycopg: pip install -e '.[postgres]' in "
                             "tether's checkout") from None
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
        probe(dsn, self.url)  # a bad URL fails now, with its cause (tether.store.postgres_probe)
        self._pool = ConnectionPool(dsn, min_size=min_size, max_size=max_size, open=False,
                                    kwargs={"autocommit": False})
        try:
            self._pool.open(wait=True, timeout=10)
        except Exception as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to PostgreSQL at {self.url}: "
                             f"{redact_text(str(exc), dsn)}") from None
        self._migrate()
        self._dsn = dsn
        self._committers = LoopCommitters(self._connect, self._write_async)

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r}, schema={self.schema!r})"

    def _sql(self, statement: str) -> str:
        return statement.replace("{s}", self.schema)

    def _migrate(self) -> None:
        with self._pool.connection() as db:
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
            if version and version < 5:  # what was stored before anchoring, anchored now
                self._anchor_existing(db)
            db.execute(self._sql("INSERT INTO {s}.meta VALUES ('schema_version', %s) ON "
                                 "CONFLICT (key) DO UPDATE SET value = excluded.value"),
                       (str(SCHEMA_VERSION),))

    def append(self, session_id: str, events: Sequence[Event],
               data_json: Sequence[str] | None = None, lease: Lease | None = None) -> None:
        if not events:
            return
        with self._pool.connection() as db:
            refused = run(db, self._statements.write([self._as_append(session_id, events,
                                                                    data_json, lease)]))[0]
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
        import psycopg

        try:
            return await psycopg.AsyncConnection.connect(
                self._dsn, autocommit=False, application_name=f"tether-commit-{self.schema}")
        except Exception as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.url}: "
                             f"{redact_text(str(exc), self._dsn)}") from None

    async def _write_async(self, db: Any, batch: list[tuple[Any, ...]]
                           ) -> list[BaseException | None]:
        return await arun(db, self._statements.write([self._as_append(*args) for args in batch]))

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

    def anchors(self) -> list[Anchor]:
        with self._pool.connection() as db:
            rows = db.execute(self._sql("SELECT seq, kind, session_id, body, prev, hash, mac "
                                        "FROM {s}.anchors ORDER BY seq")).fetchall()
        return [Anchor(*row) for row in rows]

    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease:
        with self._pool.connection() as db:
            row = db.execute(self._sql("SELECT lease_holder, lease_token, lease_expires FROM "
                                       "{s}.sessions WHERE session_id = %s FOR UPDATE"),
                             (session_id,)).fetchone()
            if row is None:
                raise LookupError(f"no session {session_id!r} in {self.url}")
            current, token, expires = row
            if current not in (None, holder) and expires > time.time() and \
                    not holder_is_gone(current):
                raise SessionBusy(session_id, current, expires)
            db.execute(self._sql("UPDATE {s}.sessions SET lease_holder = %s, lease_token = %s, "
                                 "lease_expires = %s WHERE session_id = %s"),
                       (holder, token + 1, time.time() + ttl, session_id))
        return Lease(holder, token + 1, ttl)

    def renew(self, session_id: str, lease: Lease) -> None:
        with self._pool.connection() as db:
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
        with self._pool.connection() as db:
            db.execute(self._sql("UPDATE {s}.sessions SET lease_holder = NULL, lease_expires = 0 "
                                 "WHERE session_id = %s AND lease_token = %s"),
                       (session_id, lease.token))

    def read(self, session_id: str, after_seq: int = 0) -> list[Event]:
        with self._pool.connection() as db:
            rows = db.execute(self._sql(
                "SELECT seq, type, ts, data, prev_hash, hash FROM {s}.events "
                "WHERE session_id = %s AND seq > %s ORDER BY seq"),
                (session_id, after_seq)).fetchall()
        return [Event.from_json(seq, type, session_id, ts, data, prev, digest)
                for seq, type, ts, data, prev, digest in rows]

    def unverifiable(self, session_id: str) -> frozenset[int]:
        with self._pool.connection() as db:
            rows = db.execute(self._sql("SELECT seq FROM {s}.events WHERE session_id = %s "
                                        "AND jsonb_era"), (session_id,)).fetchall()
        return frozenset(r[0] for r in rows)

    def sessions(self, *, since: float | None = None,
                 until: float | None = None) -> list[SessionInfo]:
        with self._pool.connection() as db:
            rows = db.execute(self._sql(
                "SELECT session_id, created_at, updated_at, events, last_type, tenant_id, agent "
                "FROM {s}.sessions WHERE updated_at >= %s AND updated_at < %s "
                "ORDER BY created_at"),
                (since if since is not None else float("-inf"),
                 until if until is not None else float("inf"))).fetchall()
        return [SessionInfo(*row) for row in rows]

    def prune(self, before: float) -> int:
        with self._pool.connection() as db:
            doomed = [r[0] for r in db.execute(self._sql(
                "SELECT session_id FROM {s}.sessions WHERE updated_at < %s FOR UPDATE"),
                (before,)).fetchall()]
            for sid in doomed:
                self._anchor(db, "prune", sid, {"session_id": sid, "before": before})
            for table in ("events", "approvals", "private_arguments", "sessions"):
                db.execute(self._sql(f"DELETE FROM {{s}}.{table} WHERE session_id = ANY(%s)"),
                           (doomed,))
        return len(doomed)

    def put_approval(self, record: Mapping[str, Any]) -> None:
        import psycopg

        try:
            with self._pool.connection() as db:
                db.execute(self._sql("INSERT INTO {s}.approvals (id, session_id, status, record) "
                                     "VALUES (%s, %s, %s, %s)"),
                           (record["id"], record["session_id"], record["status"],
                            json.dumps(dict(record))))
        except psycopg.errors.UniqueViolation:
            raise ConflictError(f"approval {record['id']} already exists") from None

    def put_private(self, session_id: str, call_id: str, arguments: Mapping[str, Any]) -> None:
        with self._pool.connection() as db:
            db.execute(self._sql("INSERT INTO {s}.private_arguments VALUES (%s, %s, %s) "
                                 "ON CONFLICT (session_id, call_id) "
                                 "DO UPDATE SET arguments = excluded.arguments"),
                       (session_id, call_id, json.dumps(dict(arguments))))

    def get_private(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        with self._pool.connection() as db:
            row = db.execute(self._sql("SELECT arguments FROM {s}.private_arguments "
                                       "WHERE session_id = %s AND call_id = %s"),
                             (session_id, call_id)).fetchone()
        return dict(json.loads(row[0])) if row else None

    def drop_private(self, session_id: str) -> None:
        with self._pool.connection() as db:
            db.execute(self._sql("DELETE FROM {s}.private_arguments WHERE session_id = %s"),
                       (session_id,))

    def get_approval(self, approval_id: str) -> dict[str, Any] | None:
        with self._pool.connection() as db:
            row = db.execute(self._sql("SELECT record FROM {s}.approvals WHERE id = %s"),
                             (approval_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def list_approvals(self, *, status: str | None = None,
                       session_id: str | None = None) -> list[dict[str, Any]]:
        with self._pool.connection() as db:
            rows = db.execute(self._sql(
                "SELECT record FROM {s}.approvals WHERE (%s::text IS NULL OR status = %s) "
                "AND (%s::text IS NULL OR session_id = %s) ORDER BY created"),
                (status, status, session_id, session_id)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def update_approval(self, approval_id: str, expected_status: str,
                        changes: Mapping[str, Any]) -> bool:
        with self._pool.connection() as db:
            row = db.execute(self._sql("SELECT record FROM {s}.approvals WHERE id = %s AND "
                                       "status = %s FOR UPDATE"),
                             (approval_id, expected_status)).fetchone()
            if row is None:
                return False
            record = {**json.loads(row[0]), **changes}
            db.execute(self._sql("UPDATE {s}.approvals SET status = %s, record = %s "
                                 "WHERE id = %s"),
                       (record["status"], json.dumps(record), approval_id))
            decided = approval_anchor(record) if "status" in changes else None
            if decided is not None:
                self._anchor(db, "approval", record["session_id"], decided)
        return True

    def close(self) -> None:
        self._committers.close()
        self._pool.close()


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
