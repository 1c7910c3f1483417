"""The PostgreSQL store's anchors: the signed records of each session's head and of each
approval decision, in lanes.

Why apart from ``store.postgres``: anchoring is what makes a deleted or rewritten session
detectable from outside its own chain (``store.anchor_chain.seal_anchor``); it is written inside
the transactions of appends, prunes and approval decisions, but it is a record of its own, read
by the verifier, not part of appending and reading a journal. The store class mixes it in.

Decision: anchors are written in the same transaction as what they record (the batch statements
of ``store.postgres_steps``), so there is never a head without its anchor; a store created
before anchoring anchors what it holds when it is migrated (``_anchor_existing``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tether.store.anchor_chain import Anchor, approval_anchor
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart
from tether.store.postgres_steps import Statements, run


class PostgresAnchors(PostgresPart):
    """Mixed into ``PostgresStore``: anchors and their lanes, on its pool."""

    _statements: Statements

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
