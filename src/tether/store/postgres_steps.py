"""Many sessions' appends in a few PostgreSQL statements.

Why: the group committer (``store.group_commit``) writes on threads, and a thread that gives up
the GIL for a network round trip waits up to the interpreter's switch interval (5 ms) to get it
back from a busy event loop. Written append by append — a session's start alone took seven
round trips, its anchor under a store-wide lock — a hundred sessions' commits on PostgreSQL took
three times what SQLite took.

Decision: a batch's appends are written by statement, not by append. The sessions' first steps
go in one statement (rows created only where none exists, events added only for the rows it
created); their later steps in another, which locks the rows in session order (two batches never
deadlock), moves each on only from the seq its writer read and only for its lease holder, and
adds the events of the rows that moved; the anchors of every written head go in one insert, to
one anchor lane (``tether.store.base``) taken for the transaction. Each statement returns the
rows as it found them, so a refused append can say why (another writer came first, the lease
was taken); it changes nothing and fails alone. A session that appears twice in one batch is
written by itself, in order.

Anchor lanes: one chain under one lock was the store's serial point — every transaction that
anchored a session's start or end waited for the one before to commit, across all workers. A
transaction now takes the first lane no other holds (``FOR UPDATE SKIP LOCKED`` on the lane's row,
which also gives its head, in the same round trip; each connection starts looking at a lane of
its own, by backend pid), waits only when every lane is held, and writes its anchors and the
lane's new head in one statement: two round trips instead of three, and no wait while there
are more lanes than writers. The batch's first anchor carries the witness: how many anchors
each lane held then (committed ones; its own lane's exact).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tether.store.anchor_chain import head_anchor, lane_genesis, seal_anchor
from tether.store.base import ConflictError, SessionBusy, lease_columns
from tether.store.postgres_halts import halted_in
from tether.store.postgres_plans import Append, Plan, T
from tether.store.session_index import step_facts

# The rows a statement writes arrive as two JSON documents (one row per session, one per event),
# not as arrays: adapting thousands of array elements in Python cost more than the statement.
# JSON's text and numbers come back exactly (a float as its shortest repr, a string unescaped).
_STEPS = """
step AS (SELECT r->>0 AS sid, (r->>1)::bigint AS stored, (r->>2)::bigint AS last,
                (r->>3)::float8 AS ts, r->>4 AS type, (r->>5)::bool AS leased,
                (r->>6)::bigint AS token, (r->>7)::float8 AS expires, r->>8 AS tenant,
                r->>9 AS agent, (r->>10)::float8 AS created, r->>11 AS holder,
                r->>12 AS user_id, r->>13 AS thread_id, (r->>14)::bool AS stopped,
                r->>15 AS stop_reason, (r->>16)::float8 AS cost
         FROM json_array_elements(%(steps)s::json) AS r),"""
# the events of the sessions a statement's ``written`` names, added in the same statement
_EVENTS = """
added AS (INSERT INTO {s}.events (session_id, seq, type, ts, data, prev_hash, hash)
          SELECT r->>0, (r->>1)::bigint, r->>2, (r->>3)::float8, r->>4, r->>5, r->>6
          FROM json_array_elements(%(events)s::json) AS r
          WHERE r->>0 IN (SELECT session_id FROM written) RETURNING 1)"""

START = "WITH" + _STEPS + """
written AS (
    INSERT INTO {s}.sessions (session_id, tenant_id, agent, created_at, updated_at, events,
                             last_type, lease_holder, lease_token, lease_expires, user_id,
                             thread_id, stop_reason, cost)
    SELECT sid, tenant, agent, created, ts, last, type, holder, token, expires, user_id,
           thread_id, stop_reason, cost FROM step
    ON CONFLICT (session_id) DO NOTHING RETURNING session_id),""" + _EVENTS + """
SELECT step.sid, row.events, row.lease_token, row.lease_holder, row.lease_expires,
       step.sid IN (SELECT session_id FROM written), (SELECT count(*) FROM added)
FROM step LEFT JOIN {s}.sessions AS row ON row.session_id = step.sid"""

MOVE_ON = "WITH" + _STEPS + """
cur AS (SELECT session_id, events, lease_token, lease_holder, lease_expires FROM {s}.sessions
        WHERE session_id IN (SELECT sid FROM step) ORDER BY session_id FOR UPDATE),
written AS (UPDATE {s}.sessions AS row SET updated_at = step.ts, events = step.last,
              last_type = step.type,
              lease_expires = CASE WHEN step.leased THEN step.expires ELSE row.lease_expires END,
              stop_reason = CASE WHEN step.stopped THEN step.stop_reason
                                 ELSE row.stop_reason END,
              cost = CASE WHEN step.stopped THEN step.cost ELSE row.cost END
          FROM step JOIN cur ON cur.session_id = step.sid
          WHERE row.session_id = step.sid AND row.events = step.stored
            AND (NOT step.leased OR row.lease_token = step.token)
          RETURNING row.session_id),""" + _EVENTS + """
SELECT cur.*, cur.session_id IN (SELECT session_id FROM written), (SELECT count(*) FROM added)
FROM cur"""


# a free lane, the one this connection looks at first, locked with its head and every lane's
# count; and, when every lane is held, this connection's own lane, waited for
_LANE = """SELECT lane, hash, length, (SELECT array_agg(length ORDER BY lane) FROM {s}.anchor_lanes)
FROM {s}.anchor_lanes """
TAKE_LANE = _LANE + """WHERE lane < %(n)s
ORDER BY (lane + %(n)s - pg_backend_pid() %% %(n)s) %% %(n)s LIMIT 1 FOR UPDATE SKIP LOCKED"""
WAIT_LANE = _LANE + "WHERE lane = pg_backend_pid() %% %(n)s FOR UPDATE"
EXTEND_LANE = """WITH added AS (
    INSERT INTO {s}.anchors (lane, kind, session_id, body, prev, hash, mac)
    SELECT %(lane)s, * FROM unnest(%(kind)s::text[], %(sid)s::text[], %(body)s::text[],
                                   %(prev)s::text[], %(hash)s::text[], %(mac)s::text[])
    RETURNING 1)
UPDATE {s}.anchor_lanes SET hash = %(head)s, length = length + (SELECT count(*) FROM added)
WHERE lane = %(lane)s"""



class Statements:
    """The batch statements in one store's schema, and the audit key that signs its anchors.

    Each method returns a plan: a generator that yields the statements to run next and is sent
    their rows, so the same logic runs on a thread (``run``) and on the event loop (``arun``)."""

    def __init__(self, schema: str, audit_key: bytes | None, lanes: int = 1) -> None:
        self.schema = schema
        self.start = START.replace("{s}", schema)
        self.move_on = MOVE_ON.replace("{s}", schema)
        self.take_lane, self.wait_lane, self.extend_lane = (
            q.replace("{s}", schema) for q in (TAKE_LANE, WAIT_LANE, EXTEND_LANE))
        self.audit_key = audit_key
        self.lanes = lanes  # the store's anchor lanes, read from it when it opens

    def write(self, batch: Sequence[Append],
              retried: bool = False) -> Plan[list[BaseException | None]]:
        """Write ``batch`` in the current transaction: for each append, None when written, else
        the refusal that says why it was not (nothing of it written). ``retried``: an earlier
        try may have been committed before its connection dropped, so an append refused as a
        conflict whose events are stored as they are (by hash) was written, by that try."""
        counts = Counter(append[0] for append in batch)
        results: list[BaseException | None] = [None] * len(batch)
        halted = yield from halted_in(self.schema, batch)  # tether.store.postgres_halts
        for i, refused in halted.items():
            results[i] = refused
        alone = [i for i, append in enumerate(batch) if counts[append[0]] == 1 and append[1]
                 and i not in halted]
        chosen = [[i for i in alone if batch[i][1][0].seq <= 1],
                  [i for i in alone if batch[i][1][0].seq > 1]]
        queries = []
        for statement, indices in zip((self.start, self.move_on), chosen, strict=True):
            indices.sort(key=lambda i: batch[i][0])  # rows locked in session order
            if indices:
                queries.append((statement, _params(statement is self.start,
                                                   [batch[i] for i in indices])))
        answers = (yield queries) if queries else []
        for indices, rows in zip([c for c in chosen if c], answers, strict=True):
            found = {row[0]: row for row in rows}
            for i in indices:
                results[i] = refusal(batch[i], found.get(batch[i][0]))
        heads = []
        for i in alone:
            head = head_anchor(batch[i][0], batch[i][1]) if results[i] is None else None
            if head is not None:
                heads.append(("head", batch[i][0], head))
        yield from self.anchor(heads)
        if retried:  # after the anchors: what the earlier try wrote, it anchored
            for i in alone:
                if isinstance(results[i], ConflictError) and \
                        (yield from self._stored_already(batch[i])):
                    results[i] = None
        done = set(alone)
        for i, append in enumerate(batch):  # a session twice in one batch: by itself, in order
            if i not in done and append[1] and i not in halted:
                results[i] = (yield from self.write([append], retried))[0]
        return results

    def _stored_already(self, append: Append) -> Plan[bool]:
        """Whether the store holds ``append``'s events exactly (its last event's hash covers
        the chain up to it)."""
        session_id, events, _, _ = append
        (rows,) = yield [(f"SELECT hash FROM {self.schema}.events WHERE session_id = %s AND "
                          "seq = %s", (session_id, events[-1].seq))]
        return bool(rows) and rows[0][0] == events[-1].hash

    def anchor(self, anchors: Sequence[tuple[str, str, Mapping[str, Any]]]) -> Plan[None]:
        """Append ``anchors`` (kind, session, body) to a free anchor lane in the current
        transaction (the lane's row stays locked to the commit: one writer a lane)."""
        if not anchors:
            return
        (found,) = yield [(self.take_lane, {"n": self.lanes})]
        if not found:  # every lane is held: wait for this connection's own
            (found,) = yield [(self.wait_lane, {"n": self.lanes})]
        lane, prev, length, counts = found[0]
        seen = [int(c) for c in counts]
        seen[lane] = int(length)
        rows: dict[str, Any] = {"kind": [], "sid": [], "body": [], "prev": [], "hash": [],
                                "mac": []}
        for number, (kind, session_id, body) in enumerate(anchors):
            if number == 0 and self.lanes > 1:
                body = {**body, "witness": seen}
            text, digest, mac = seal_anchor(prev, body, self.audit_key)
            for column, value in zip(rows.values(), (kind, session_id, text, prev, digest, mac),
                                     strict=True):
                column.append(value)
            prev = digest
        yield [(self.extend_lane, {**rows, "lane": lane, "head": prev})]

    def open_lanes(self, lanes: int) -> Plan[None]:
        """Create the store's ``lanes`` anchor lanes (once, when the schema reaches them): lane
        0 continues the single chain a store kept before (its anchors are lane 0's), every
        other lane starts at its own genesis."""
        (tail,) = yield [(f"SELECT hash, (SELECT count(*) FROM {self.schema}.anchors) FROM "
                          f"{self.schema}.anchors ORDER BY seq DESC LIMIT 1", None)]
        head, length = tail[0] if tail else (lane_genesis(0), 0)
        yield [(f"INSERT INTO {self.schema}.anchor_lanes (lane, hash, length) SELECT * FROM "
                "unnest(%s::int[], %s::text[], %s::bigint[])",
                (list(range(lanes)), [head] + [lane_genesis(k) for k in range(1, lanes)],
                 [length] + [0] * (lanes - 1))),
               (f"INSERT INTO {self.schema}.meta VALUES ('anchor_lanes', %s)", (str(lanes),))]
        self.lanes = lanes


def run(db: Any, plan: Plan[T]) -> T:
    """Carry out ``plan`` on a psycopg connection."""
    try:
        queries = next(plan)
        while True:
            answers = []
            for statement, params in queries:
                cursor = db.execute(statement, params)
                answers.append(cursor.fetchall() if cursor.description else [])
            queries = plan.send(answers)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun(db: Any, plan: Plan[T]) -> T:
    """Carry out ``plan`` on a psycopg async connection, on the event loop."""
    try:
        queries = next(plan)
        while True:
            answers = []
            for statement, params in queries:
                cursor = await db.execute(statement, params)
                answers.append(await cursor.fetchall() if cursor.description else [])
            queries = plan.send(answers)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _params(first: bool, appends: Sequence[Append]) -> dict[str, str]:
    """The two documents a batch statement reads: a row per session, a row per event."""
    steps: list[tuple[Any, ...]] = []
    rows: list[tuple[Any, ...]] = []
    for session_id, events, data_json, lease in appends:
        head, last = events[0], events[-1]
        holder, token, expires = lease_columns(lease)
        tenant = (head.data.get("subject") or {}).get("tenant_id") if first else None
        facts = step_facts(events)  # what the index keeps beside the row's count and type
        steps.append((session_id, head.seq - 1, last.seq, last.timestamp, last.type,
                      lease is not None, token, expires, tenant,
                      head.data.get("agent") if first else None, head.timestamp, holder,
                      facts.user_id, facts.thread_id, facts.stopped, facts.stop_reason,
                      facts.cost))
        rows.extend((session_id, event.seq, event.type, event.timestamp, text, event.prev_hash,
                     event.hash) for event, text in zip(events, data_json, strict=True))
    return {"steps": _document(steps), "events": _document(rows)}


def _document(rows: list[tuple[Any, ...]]) -> str:
    return json.dumps(rows, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def refusal(append: Append, row: Any) -> BaseException | None:
    """Why a statement did not write ``append`` (None when it did); ``row`` is the session's row
    as the statement found it: (id, events, lease token, holder, expiry, written, added)."""
    session_id, events, _, lease = append
    if row is not None and row[5]:
        return None
    stored = row[1] if row is not None and row[1] is not None else 0
    if events[0].seq == stored + 1 == 1:  # created by a writer this statement did not see
        return ConflictError(f"session {session_id} already exists; another writer started it "
                             "first")
    if events[0].seq != stored + 1 or row is None or lease is None:
        return ConflictError(f"session {session_id}: expected seq {stored + 1}, got "
                             f"{events[0].seq}; another writer appended first")
    return SessionBusy(session_id, row[3], row[4], lost=True)
