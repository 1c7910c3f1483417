"""The SQLite store's schema: numbered migrations, each applied once, in order, in one transaction.

Why apart: the migrations are history — each one says what changed and why, and none is ever
edited — while ``store.sqlite`` is the code that runs on them; a file written by a newer tether
(a version above ``SCHEMA_VERSION``) is refused there rather than misread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE events (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
        ts REAL NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
    CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY, tenant_id TEXT, agent TEXT, created_at REAL NOT NULL,
        updated_at REAL NOT NULL, events INTEGER NOT NULL, last_type TEXT NOT NULL);
    CREATE INDEX sessions_updated ON sessions (updated_at);
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL,
        record TEXT NOT NULL);
    CREATE INDEX approvals_status ON approvals (status, session_id);
    """,
    # Events appended at the end of a rowid table, found through a small unique index, instead
    # of a clustered table into which every step inserted at a random place (session ids are
    # random); and sessions.updated_at no longer indexed (listing and pruning read one row per
    # session). Each step's commit writes 12 WAL pages instead of 17, about a quarter less time.
    2: """
    CREATE TABLE events_v2 (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
        ts REAL NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
    INSERT INTO events_v2 SELECT session_id, seq, type, ts, data, prev_hash, hash FROM events
        ORDER BY session_id, seq;
    DROP TABLE events;
    ALTER TABLE events_v2 RENAME TO events;
    CREATE UNIQUE INDEX events_by_session ON events (session_id, seq);
    DROP INDEX sessions_updated;
    """,
    # Arguments the journal hides, kept apart from it (Agent(keep_hidden_arguments=True)).
    3: """
    CREATE TABLE private_arguments (
        session_id TEXT NOT NULL, call_id TEXT NOT NULL, arguments TEXT NOT NULL,
        PRIMARY KEY (session_id, call_id));
    """,
    # Each session gets an integer key in the order sessions start, and events are indexed by
    # (key, seq) instead of (session id, seq): a running session's index entries go at the end
    # of the index rather than at a random place in it (session ids are random), so a step no
    # longer splits index pages in the middle of the tree. 5.5 -> 4.5 WAL pages per commit.
    # The key is an explicit INTEGER PRIMARY KEY (VACUUM keeps it) and AUTOINCREMENT (a pruned
    # session's key is never given to another). An events row must carry an integer key: a
    # tether from before this schema still running on the file would write the session id there,
    # and is refused instead of misfiling its events.
    4: """
    INSERT INTO sessions (session_id, created_at, updated_at, events, last_type)
        SELECT session_id, min(ts), max(ts), max(seq), '' FROM events
        WHERE session_id NOT IN (SELECT session_id FROM sessions) GROUP BY session_id;
    CREATE TABLE sessions_v4 (
        key INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL UNIQUE,
        tenant_id TEXT, agent TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL,
        events INTEGER NOT NULL, last_type TEXT NOT NULL);
    INSERT INTO sessions_v4 (session_id, tenant_id, agent, created_at, updated_at, events,
                             last_type)
        SELECT session_id, tenant_id, agent, created_at, updated_at, events, last_type
        FROM sessions ORDER BY created_at;
    CREATE TABLE events_v4 (
        session_key INTEGER NOT NULL CHECK (typeof(session_key) = 'integer'),
        seq INTEGER NOT NULL, type TEXT NOT NULL, ts REAL NOT NULL, data TEXT NOT NULL,
        prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
    INSERT INTO events_v4 SELECT s.key, e.seq, e.type, e.ts, e.data, e.prev_hash, e.hash
        FROM events AS e JOIN sessions_v4 AS s USING (session_id) ORDER BY s.key, e.seq;
    DROP TABLE events;
    DROP TABLE sessions;
    ALTER TABLE sessions_v4 RENAME TO sessions;
    ALTER TABLE events_v4 RENAME TO events;
    CREATE UNIQUE INDEX events_by_session ON events (session_key, seq);
    """,
    # A running session is leased to one worker: who holds it, the fencing token every append
    # must carry, and when the lease lapses (renewed by each append of its holder).
    5: """
    ALTER TABLE sessions ADD COLUMN lease_holder TEXT;
    ALTER TABLE sessions ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN lease_expires REAL NOT NULL DEFAULT 0;
    """,
    # The store-wide anchor chain (tether.store.base): sessions' heads at start, pause and end,
    # and approval decisions, each chained to the one before (and signed with an audit key).
    6: """
    CREATE TABLE anchors (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, session_id TEXT NOT NULL,
        body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL, mac TEXT);
    """,
    # Conversation threads (agent.session(task, thread=...)): which sessions continue which
    # conversation of a tenant's user, in order. No tenant or user is stored as ''.
    7: """
    CREATE TABLE threads (
        tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
        position INTEGER NOT NULL, session_id TEXT NOT NULL, created_at REAL NOT NULL,
        PRIMARY KEY (tenant_id, user_id, thread_id, position)) WITHOUT ROWID;
    CREATE INDEX threads_by_session ON threads (session_id);
    """,
    # A thread's history is the turns that ended, in the order they ended
    # (tether.runtime.lifecycle.thread): each session's place in it, given when its turn ends,
    # unique within the thread (NULLs, the turns still running, are distinct).
    8: """
    ALTER TABLE threads ADD COLUMN ended INTEGER;
    CREATE UNIQUE INDEX threads_by_end ON threads (tenant_id, user_id, thread_id, ended);
    """,
    # Listing a page of 100,000 sessions by keyset (tether.store.session_index): the index row
    # keeps the user and thread its start named and the stop reason and spend (US dollars) its
    # last pause or end recorded, backfilled here from the stored events; the newest-first walk
    # and the tenant and user filters (many values, each a few sessions) have an index that ends
    # in the page key. An agent is not indexed: agents are few, so the newest-first index finds
    # a page of one agent's sessions within a few thousand rows, and each index costs every
    # session's start (100,000 sessions of two steps each: 17-18 s to write, 13-14 s before this
    # schema, the indexes most of the difference; docs/benchmarks.md).
    # The columns a later step changes (last_type, stop_reason, cost) are in no index, so a
    # step's commit writes no more index pages than before.
    9: """
    ALTER TABLE sessions ADD COLUMN user_id TEXT;
    ALTER TABLE sessions ADD COLUMN thread_id TEXT;
    ALTER TABLE sessions ADD COLUMN stop_reason TEXT;
    ALTER TABLE sessions ADD COLUMN cost REAL;
    UPDATE sessions SET (user_id, thread_id) = (
        SELECT json_extract(data, '$.subject.user_id'), json_extract(data, '$.thread.id')
        FROM events WHERE session_key = sessions.key AND seq = 1 AND type = 'session.start');
    UPDATE sessions SET (stop_reason, cost) = (
        SELECT json_extract(data, '$.reason'), CAST(json_extract(data, '$.spend.cost_usd') AS REAL)
        FROM events WHERE session_key = sessions.key
            AND type IN ('session.paused', 'session.end') ORDER BY seq DESC LIMIT 1);
    CREATE INDEX sessions_newest ON sessions (created_at, session_id);
    CREATE INDEX sessions_by_tenant ON sessions (tenant_id, created_at, session_id);
    CREATE INDEX sessions_by_user ON sessions (user_id, created_at, session_id);
    """,
    # Signed checkpoints of the anchor chain (tether.journal.checkpoint, store.checkpoints): the
    # C2SP signed note as signed (and cosigned), its tree size; read by verify.
    10: """
    CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY,
        size INTEGER NOT NULL,
        note TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    """,
    # Quotas across sessions and workers (tether.store.quotas): one row per reserved call, its
    # amount in whole units and the hold its session keeps for a wrap-up; summed by key over
    # the window (by time), the unsettled rows and the holds, each with its own index.
    11: """
    CREATE TABLE quota_use (
        id TEXT PRIMARY KEY, key TEXT NOT NULL, at REAL NOT NULL, amount INTEGER NOT NULL,
        hold INTEGER NOT NULL, settled INTEGER NOT NULL,
        session_id TEXT NOT NULL, holder TEXT NOT NULL, expires_at REAL NOT NULL);
    CREATE INDEX quota_use_window ON quota_use (key, at, settled, amount);
    CREATE INDEX quota_use_holds ON quota_use (key, session_id) WHERE hold > 0;
    CREATE INDEX quota_use_open ON quota_use (key) WHERE settled = 0;
    """,
    # Halts (tether.store.halts): who stopped which sessions and why; and one row, the version
    # every halt and unhalt increments (watchers read it: tether.runtime.chokepoint.halts) and
    # how many halts stand. An append that starts a side effect reads that count, and the
    # standing halts only when some stand, in its own write transaction.
    12: """
    CREATE TABLE halts (
        id TEXT PRIMARY KEY, session_id TEXT, agent TEXT, tenant_id TEXT, reason TEXT NOT NULL,
        by_name TEXT NOT NULL, by_method TEXT NOT NULL, created_at REAL NOT NULL,
        lifted_at REAL, lifted_by TEXT, lifted_method TEXT);
    CREATE INDEX halts_standing ON halts (lifted_at);
    CREATE TABLE halt_state (version INTEGER NOT NULL, standing INTEGER NOT NULL);
    INSERT INTO halt_state VALUES (0, 0);
    """,
    # A thread's turns, each kept once at its place in the history, chained by digest
    # (tether.store.turn_chain): a session's start names the history it was shown by its last
    # place and link instead of carrying every earlier turn. ``turn`` is NULL once removed.
    13: """
    CREATE TABLE thread_turns (
        tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
        ended INTEGER NOT NULL, session_id TEXT NOT NULL, digest TEXT NOT NULL,
        link TEXT NOT NULL, turn TEXT,
        PRIMARY KEY (tenant_id, user_id, thread_id, ended)) WITHOUT ROWID;
    CREATE INDEX thread_turns_by_session ON thread_turns (session_id);
    """,
    # A thread's revision: counted up by the database itself whenever one of its kept turns is
    # changed or removed, or one is put before another (by tether, a prune, an erasure, or
    # anyone's SQL), so a process that checked the turns up to a place knows, by one read,
    # whether they are still the turns it checked (tether.runtime.lifecycle.thread_memo).
    14: """
    CREATE TABLE thread_revisions (
        tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, user_id, thread_id)) WITHOUT ROWID;
    CREATE TRIGGER thread_turns_changed AFTER UPDATE ON thread_turns BEGIN
        INSERT INTO thread_revisions VALUES (old.tenant_id, old.user_id, old.thread_id, 1)
            ON CONFLICT DO UPDATE SET revision = revision + 1;
        INSERT INTO thread_revisions VALUES (new.tenant_id, new.user_id, new.thread_id, 1)
            ON CONFLICT DO UPDATE SET revision = revision + 1;
    END;
    CREATE TRIGGER thread_turns_removed AFTER DELETE ON thread_turns BEGIN
        INSERT INTO thread_revisions VALUES (old.tenant_id, old.user_id, old.thread_id, 1)
            ON CONFLICT DO UPDATE SET revision = revision + 1;
    END;
    CREATE TRIGGER thread_turns_put_before AFTER INSERT ON thread_turns
    WHEN EXISTS (SELECT 1 FROM thread_turns WHERE tenant_id = new.tenant_id AND
                 user_id = new.user_id AND thread_id = new.thread_id AND ended > new.ended)
    BEGIN
        INSERT INTO thread_revisions VALUES (new.tenant_id, new.user_id, new.thread_id, 1)
            ON CONFLICT DO UPDATE SET revision = revision + 1;
    END;
    """,
}
SCHEMA_VERSION = max(MIGRATIONS)


def statements(migration: str) -> Iterator[str]:
    """A migration's statements, in order (a trigger's body holds ``;`` of its own)."""
    pending = ""
    for piece in migration.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""
