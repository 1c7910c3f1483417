"""What each part of the PostgreSQL store mixed into ``PostgresStore`` uses of the store itself.

Why: the store is one class made of parts, one module each (threads, erasure, approvals,
leases, anchors: ``store.postgres`` lists them); each part runs its SQL on the store's pool,
through its ride-through, in its schema. Declaring that once keeps every part's view of the
store the same, and type-checked.

Decision: a part holds no state of its own and defines no ``__init__``; ``PostgresStore`` makes
the pool, the ride-through and whatever state a part reads (declared on the part).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from tether.store.postgres_outage import RideThrough


class PostgresPart:
    """A part of ``PostgresStore``: its URL (secrets masked), ride-through, SQL and pool."""

    url: str
    _ride: RideThrough

    if TYPE_CHECKING:  # the store's own, which it mixes the parts into
        def _sql(self, statement: str) -> str: ...

        def _connection(self) -> contextlib.AbstractContextManager[Any]: ...
