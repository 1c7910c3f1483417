"""Halts in the PostgreSQL store (``tether.store.halts`` says what a halt is and its rule).

Decision: one row, ``halt_state``, is the lock the rule turns on. An append batch that starts a
side effect first takes that row ``FOR SHARE``, reading how many halts stand (a row a halt
updated while the batch waited is read as that halt committed it), and, when some stand, reads
those covering its sessions in a statement of its own (so, under READ COMMITTED, with a snapshot
taken after the lock was granted); the lock is held to the batch's commit. A halt or an unhalt
updates the row (an exclusive lock) in the transaction that inserts or lifts it. So a halt waits
for every append that already holds the share lock to commit, and every append that asks for it
after the halt took it waits for the halt to commit and then sees it: no ``tool.started`` of a
covered session commits after the halt does. Appends never wait on each other (share locks do
not conflict), only on a halt being committed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.store.halts import COLUMNS, Halt, Halted, halt_from_row, scope_params, starts_effect
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart

if TYPE_CHECKING:
    from tether.store.postgres_plans import Append, Plan

LOCK = "SELECT standing FROM {s}.halt_state FOR SHARE"
COVERING = (f"SELECT s.session_id, {', '.join('h.' + c for c in COLUMNS.split(', '))} "
            "FROM {s}.sessions AS s JOIN {s}.halts AS h ON h.lifted_at IS NULL "
            "AND (h.session_id IS NULL OR h.session_id = s.session_id) "
            "AND (h.agent IS NULL OR h.agent = s.agent) "
            "AND (h.tenant_id IS NULL OR h.tenant_id = s.tenant_id) "
            "WHERE s.session_id = ANY(%s)")


def halted_in(schema: str, appends: Sequence[Append]) -> Plan[dict[int, BaseException]]:
    """A plan (``store.postgres_steps``) that locks and reads the halts covering the appends
    that start a side effect: each refused one's index in ``appends``, with its Halted."""
    starting = [i for i, a in enumerate(appends) if a[1] and starts_effect(a[1])]
    if not starting:
        return {}
    (state,) = yield [(LOCK.replace("{s}", schema), None)]
    if not state[0][0]:  # no halt stands (as of the lock, which a halt's commit releases)
        return {}
    sessions = sorted({appends[i][0] for i in starting})
    (rows,) = yield [(COVERING.replace("{s}", schema), (sessions,))]
    found: dict[str, Halt] = {}  # one covering halt of each session
    for row in rows:
        found.setdefault(row[0], halt_from_row(row[1:]))
    return {i: Halted(found[appends[i][0]], appends[i][0]) for i in starting
            if appends[i][0] in found}


class PostgresHalts(PostgresPart):
    """Mixed into ``PostgresStore``: halts, on its pool."""

    @riding
    def put_halt(self, halt: Halt) -> None:
        with self._connection() as db:
            db.execute(self._sql("UPDATE {s}.halt_state SET version = version + 1, "
                                 "standing = standing + 1"))
            db.execute(self._sql(f"INSERT INTO {{s}}.halts ({COLUMNS}) VALUES "
                                 "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"),
                       scope_params(halt))

    @riding
    def lift_halt(self, halt_id: str, by: str, by_method: str) -> Halt | None:
        with self._connection() as db:
            db.execute(self._sql("UPDATE {s}.halt_state SET version = version + 1, "
                                 "standing = standing - 1"))
            row = db.execute(self._sql(
                f"UPDATE {{s}}.halts SET lifted_at = %s, lifted_by = %s, lifted_method = %s "
                f"WHERE id = %s AND lifted_at IS NULL RETURNING {COLUMNS}"),
                (time.time(), by, by_method, halt_id)).fetchone()
            if row is None:
                db.rollback()
                return None
        return halt_from_row(row)

    @riding
    def list_halts(self, *, standing: bool = True) -> list[Halt]:
        where = " WHERE lifted_at IS NULL" if standing else ""
        with self._connection() as db:
            rows = db.execute(self._sql(f"SELECT {COLUMNS} FROM {{s}}.halts{where} "
                                        "ORDER BY created_at")).fetchall()
        return [halt_from_row(row) for row in rows]

    @riding
    def halt_version(self) -> int:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT version FROM {s}.halt_state")).fetchone()
        return int(row[0]) if row else 0

    @riding
    def session_owner(self, session_id: str) -> tuple[str | None, str | None] | None:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT tenant_id, agent FROM {s}.sessions WHERE "
                                       "session_id = %s"), (session_id,)).fetchone()
        return None if row is None else (row[0], row[1])
