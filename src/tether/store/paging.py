"""Listing sessions a page at a time, filtered, in an order that holds while sessions arrive.

Why: a store with 100,000 sessions cannot be listed whole on every page view (``tether audit
list`` printed every one); the console's session list and the CLI need the newest first, a
filter, and the next page — without OFFSET, whose cost grows with the page number and whose pages
shift as new sessions arrive. Keyset paging does: a page ends at a (created_at, session_id) key,
and the next page starts strictly after it.

Decision: the cursor is opaque text (the key, encoded) that the caller hands back; a cursor that
does not decode is a clear error, never the first page. ``ANY_TENANT`` lists every tenant's
sessions (an operator); a tenant id (or None: sessions without one) lists only those. The
query itself is each store's (``Store.page_sessions``: one keyset query in SQL; the filter's
meaning is ``tether.store.session_index``'s); this module adds the cursor.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
from dataclasses import dataclass

from tether.errors import InvalidArgument
from tether.store.base import SessionInfo, Store
from tether.store.session_index import ANY_TENANT, SessionFilter

__all__ = ["ANY_TENANT", "SessionFilter", "SessionPage", "decode_cursor", "encode_cursor",
           "page_sessions"]

EVERY_SESSION = SessionFilter()  # no filter: every session of every tenant


@dataclass(frozen=True, slots=True)
class SessionPage:
    """One page of sessions, newest first, and the cursor of the next (None: the last page)."""

    sessions: list[SessionInfo]
    next: str | None


def encode_cursor(info: SessionInfo) -> str:
    raw = json.dumps([info.created_at, info.session_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """The key a cursor names; InvalidArgument for one this module did not write."""
    key: object = None
    with contextlib.suppress(ValueError, TypeError):
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    if not (isinstance(key, list) and len(key) == 2 and isinstance(key[1], str)
            and isinstance(key[0], (int, float)) and not isinstance(key[0], bool)
            and math.isfinite(key[0])):
        raise InvalidArgument(f"cursor {cursor[:40]!r} is not one a session listing gave; "
                              "start from the first page (no cursor)")
    return float(key[0]), key[1]


def page_sessions(store: Store, where: SessionFilter = EVERY_SESSION, *, limit: int = 50,
                  after: str | None = None) -> SessionPage:
    """Up to ``limit`` sessions matching ``where``, newest first, after the cursor ``after``."""
    if limit < 1:
        raise InvalidArgument(f"limit must be at least 1, got {limit}")
    key = decode_cursor(after) if after is not None else None
    chosen = store.page_sessions(where, limit + 1, key)  # one more: is there a next page?
    more = len(chosen) > limit
    chosen = chosen[:limit]
    return SessionPage(chosen, encode_cursor(chosen[-1]) if more else None)
