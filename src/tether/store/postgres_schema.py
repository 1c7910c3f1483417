"""The PostgreSQL store's schema: numbered migrations (``{s}`` is the store's schema name), each
applied once, in order, under the migration's advisory lock, so workers starting together
create and upgrade a schema one at a time.

Why apart: the migrations are history — each one says what changed and why, and none is ever
edited — while ``store.postgres`` is the code that runs on them.
"""

from __future__ import annotations

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
    # Conversation threads (agent.session(task, thread=...)): which sessions continue which
    # conversation of a tenant's user, in order. No tenant or user is stored as ''.
    6: [
        """CREATE TABLE {s}.threads (
            tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
            position BIGINT NOT NULL, session_id TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (tenant_id, user_id, thread_id, position))""",
        "CREATE INDEX threads_by_session ON {s}.threads (session_id)",
    ],
    # Anchor lanes (tether.store.base): the anchors of before are lane 0's; the lanes' rows
    # (each lane's head and length, locked by the writer that extends it) are made by the
    # store when it migrates (store.postgres_steps.Statements.open_lanes), their number in meta.
    7: [
        "ALTER TABLE {s}.anchors ADD COLUMN lane INT NOT NULL DEFAULT 0",
        """CREATE TABLE {s}.anchor_lanes (
            lane INT PRIMARY KEY, hash TEXT NOT NULL, length BIGINT NOT NULL)""",
    ],
    # A thread's history is the turns that ended, in the order they ended
    # (tether.runtime.lifecycle.thread): each session's place in it, given when its turn ends,
    # unique within the thread (NULLs, the turns still running, are distinct).
    8: [
        "ALTER TABLE {s}.threads ADD COLUMN IF NOT EXISTS ended BIGINT",
        """CREATE UNIQUE INDEX IF NOT EXISTS threads_by_end ON {s}.threads
            (tenant_id, user_id, thread_id, ended)""",
    ],
    # Listing a page of 100,000 sessions by keyset (tether.store.session_index): the index row
    # keeps the user and thread its start named and the stop reason and spend (US dollars) its
    # last pause or end recorded, backfilled here from the stored events; the newest-first walk
    # and the tenant and user filters have an index that ends in the page key (its session id in
    # byte order, as store.session_index compares it); an agent is not indexed (agents are few:
    # see the SQLite migration). The columns a later step changes (last_type, stop_reason, cost)
    # are in no index, so a step's update of the row stays a HOT update.
    9: [
        "ALTER TABLE {s}.sessions ADD COLUMN IF NOT EXISTS user_id TEXT",
        "ALTER TABLE {s}.sessions ADD COLUMN IF NOT EXISTS thread_id TEXT",
        "ALTER TABLE {s}.sessions ADD COLUMN IF NOT EXISTS stop_reason TEXT",
        "ALTER TABLE {s}.sessions ADD COLUMN IF NOT EXISTS cost DOUBLE PRECISION",
        """UPDATE {s}.sessions AS row SET user_id = e.d->'subject'->>'user_id',
                                         thread_id = e.d->'thread'->>'id'
           FROM (SELECT session_id, data::json AS d FROM {s}.events
                 WHERE seq = 1 AND type = 'session.start') AS e
           WHERE e.session_id = row.session_id""",
        """UPDATE {s}.sessions AS row SET stop_reason = e.d->>'reason',
                                         cost = (e.d->'spend'->>'cost_usd')::float8
           FROM (SELECT DISTINCT ON (session_id) session_id, data::json AS d FROM {s}.events
                 WHERE type IN ('session.paused', 'session.end')
                 ORDER BY session_id, seq DESC) AS e
           WHERE e.session_id = row.session_id""",
        """CREATE INDEX IF NOT EXISTS sessions_newest ON {s}.sessions
            (created_at, session_id COLLATE "C")""",
        """CREATE INDEX IF NOT EXISTS sessions_by_tenant ON {s}.sessions
            (tenant_id, created_at, session_id COLLATE "C")""",
        """CREATE INDEX IF NOT EXISTS sessions_by_user ON {s}.sessions
            (user_id, created_at, session_id COLLATE "C")""",
    ],
    # Signed checkpoints of the anchor chain (tether.journal.checkpoint, store.checkpoints).
    10: [
        """CREATE TABLE IF NOT EXISTS {s}.checkpoints (
            id bigserial PRIMARY KEY,
            size bigint NOT NULL,
            note text NOT NULL,
            created_at double precision NOT NULL)""",
    ],
    # Quotas across sessions and workers (tether.store.quotas): see the SQLite migration.
    11: [
        """CREATE TABLE IF NOT EXISTS {s}.quota_use (
            id TEXT PRIMARY KEY, key TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,
            amount BIGINT NOT NULL, hold BIGINT NOT NULL, settled SMALLINT NOT NULL,
            session_id TEXT NOT NULL, holder TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS quota_use_window ON {s}.quota_use (key, at, settled, amount)",
        """CREATE INDEX IF NOT EXISTS quota_use_holds ON {s}.quota_use (key, session_id)
            WHERE hold > 0""",
        "CREATE INDEX IF NOT EXISTS quota_use_open ON {s}.quota_use (key) WHERE settled = 0",
    ],
    # Halts (tether.store.halts): an append that starts a side effect reads halt_state's one
    # row (how many halts stand) under a shared lock, and the standing halts when some stand;
    # a halt or an unhalt updates that row (an exclusive lock) in its own transaction, so the
    # two are ordered (store.postgres_halts).
    12: [
        """CREATE TABLE IF NOT EXISTS {s}.halts (
            id TEXT PRIMARY KEY, session_id TEXT, agent TEXT, tenant_id TEXT,
            reason TEXT NOT NULL, by_name TEXT NOT NULL, by_method TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, lifted_at DOUBLE PRECISION, lifted_by TEXT,
            lifted_method TEXT)""",
        """CREATE TABLE IF NOT EXISTS {s}.halt_state (
            version BIGINT NOT NULL, standing BIGINT NOT NULL)""",
        """INSERT INTO {s}.halt_state SELECT 0, 0
            WHERE NOT EXISTS (SELECT 1 FROM {s}.halt_state)""",
    ],
    # A thread's turns, each kept once at its place in the history, chained by digest
    # (tether.store.turn_chain): a session's start names the history it was shown by its last
    # place and link instead of carrying every earlier turn. ``turn`` is NULL once removed.
    13: [
        """CREATE TABLE IF NOT EXISTS {s}.thread_turns (
            tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
            ended BIGINT NOT NULL, session_id TEXT NOT NULL, digest TEXT NOT NULL,
            link TEXT NOT NULL, turn TEXT,
            PRIMARY KEY (tenant_id, user_id, thread_id, ended))""",
        "CREATE INDEX IF NOT EXISTS thread_turns_by_session ON {s}.thread_turns (session_id)",
    ],
    # A thread's revision: counted up by the database itself whenever one of its kept turns is
    # changed or removed, or one is put before another (by tether, a prune, an erasure, or
    # anyone's SQL), so a process that checked the turns up to a place knows, by one read,
    # whether they are still the turns it checked (tether.runtime.lifecycle.thread_memo).
    14: [
        """CREATE TABLE IF NOT EXISTS {s}.thread_revisions (
            tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, thread_id TEXT NOT NULL,
            revision BIGINT NOT NULL, PRIMARY KEY (tenant_id, user_id, thread_id))""",
        """CREATE OR REPLACE FUNCTION {s}.thread_turns_revised() RETURNS trigger
            LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                INSERT INTO {s}.thread_revisions
                    VALUES (OLD.tenant_id, OLD.user_id, OLD.thread_id, 1)
                    ON CONFLICT (tenant_id, user_id, thread_id)
                    DO UPDATE SET revision = {s}.thread_revisions.revision + 1;
            END IF;
            IF TG_OP = 'UPDATE' OR (TG_OP = 'INSERT' AND EXISTS (
                    SELECT 1 FROM {s}.thread_turns WHERE tenant_id = NEW.tenant_id AND
                    user_id = NEW.user_id AND thread_id = NEW.thread_id AND
                    ended > NEW.ended)) THEN
                INSERT INTO {s}.thread_revisions
                    VALUES (NEW.tenant_id, NEW.user_id, NEW.thread_id, 1)
                    ON CONFLICT (tenant_id, user_id, thread_id)
                    DO UPDATE SET revision = {s}.thread_revisions.revision + 1;
            END IF;
            RETURN NULL;
        END $$""",
        "DROP TRIGGER IF EXISTS thread_turns_revised ON {s}.thread_turns",
        """CREATE TRIGGER thread_turns_revised AFTER INSERT OR UPDATE OR DELETE
            ON {s}.thread_turns FOR EACH ROW EXECUTE FUNCTION {s}.thread_turns_revised()""",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)
ANCHOR_LANES = 16  # lanes of a store created or migrated by this tether: more than its writers
