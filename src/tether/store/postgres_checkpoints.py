"""The PostgreSQL store's signed checkpoints (see ``tether.store.checkpoints``).

Why apart from ``store.postgres``: one part per concern, as the store's other parts; the store
class mixes it in. Decision: as the other stores, the note is kept as signed and never judged.
"""

from __future__ import annotations

import time

from tether.store.base import StoredCheckpoint
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart


class PostgresCheckpoints(PostgresPart):
    """Mixed into ``PostgresStore``: checkpoints, on its pool."""

    @riding
    def put_checkpoint(self, size: int, note: str) -> None:
        with self._connection() as db:
            db.execute(self._sql("INSERT INTO {s}.checkpoints (size, note, created_at) VALUES "
                                 "(%s, %s, %s)"), (size, note, time.time()))

    @riding
    def checkpoints(self) -> list[StoredCheckpoint]:
        with self._connection() as db:
            rows = db.execute(self._sql("SELECT size, note, created_at FROM {s}.checkpoints "
                                        "ORDER BY id")).fetchall()
        return [StoredCheckpoint(*row) for row in rows]
