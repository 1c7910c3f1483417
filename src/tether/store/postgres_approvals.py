"""The PostgreSQL store's approvals, and the hidden arguments of calls kept for a resume.

Why apart from ``store.postgres``: approval records and kept arguments are held beside the
journal, not in it (never chained, shown or exported), and are decided and read by other
processes than the session's writer; the store class mixes them in.

Decision: an approval decision is compare-and-set: the record is locked only if its status is
still the expected one (``SELECT ... WHERE status = %s FOR UPDATE``), changed, and its decision
anchored, in one transaction. A retry after a lost commit reply recognises its own earlier write
(``_changed_by``, or the same record already put) instead of reporting a conflict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tether.store.anchor_chain import approval_anchor, attempt_anchor
from tether.store.base import ConflictError
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart

NEXT_STATUS = {"approved": ("used",)}  # what an approval's status can become after it


class PostgresApprovals(PostgresPart):
    """Mixed into ``PostgresStore``: approvals and kept arguments, on its pool."""

    if TYPE_CHECKING:  # the anchors part's (store.postgres_anchors), beside this one
        def _anchor(self, db: Any, kind: str, session_id: str,
                    body: Mapping[str, Any]) -> None: ...

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
            tried = attempt_anchor(record, changes)
            if tried is not None:
                self._anchor(db, "attempt", record["session_id"], tried)
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
