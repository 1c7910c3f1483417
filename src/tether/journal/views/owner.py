"""Whose a session is: the tenant its first event recorded, for every reader that scopes by it.

Why: the console's pages, its live streams and a person's decision on an approval all must
treat a session of another tenant as not there, and all read the tenant from the same place —
the session's first event: its ``session.start``, the erased start an erasure leaves (which
keeps the tenant, ``tether.journal.erasure.marker``), or an erasure record (the tenant whose
user it erased). Written once here, below the runtime and the faces, so no reader can drift.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.types import Event
from tether.vocabulary import EventType

# first events that name the tenant: a start, an erased start, and an erasure record
OPENINGS = frozenset({EventType.SESSION_START, EventType.CONTENT_ERASED,
                      EventType.ERASURE_RECORDED})


def tenant_of(events: Sequence[Event]) -> str | None:
    """The tenant a session's first event recorded (None: no tenant, or no such event)."""
    if not events or events[0].type not in OPENINGS:
        return None
    tenant = (events[0].data.get("subject") or {}).get("tenant_id")
    return None if tenant is None else str(tenant)
