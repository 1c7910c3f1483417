"""Listing sessions a page at a time, filtered, in an order that holds while sessions arrive.

Why: a store with 100,000 sessions cannot be listed whole on every page view (``tether audit
list`` printed every one); the console's session list and the CLI need the newest first, a
filter, and the next page — without OFFSET, whose cost grows with the page number and whose pages
shift as new sessions arrive. Keyset paging does: a page ends at a (created_at, session_id) key,
and the next page starts strictly after it.

Decision: the cursor is opaque text (the key, encoded) that the caller hands back; a cursor that
does not decode is a clear error, never the first page. ``ANY_TENANT`` lists every tenant's
sessions (an operator); a tenant id (or None: sessions without one) lists only those.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument
from tether.store.base import SessionInfo, Store

ANY_TENANT: Any = object()


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions to list; a field left None does not filter.

    Args:
        status: ``open``, ``paused``, ``ended`` or ``erasure`` (``SessionInfo.status``).
        stop_reason: The stop reason it ended with (``finished``, ``cost_budget``, ...).
        agent: The agent's name.
        tenant_id: One tenant (None: sessions without a tenant); ``ANY_TENANT``: every one.
        user_id: The user it ran for.
        thread_id: The conversation thread it belongs to.
        since: Created at or after (epoch seconds).
        until: Created before (epoch seconds).
        min_cost: Spent at least this many US dollars.
        max_cost: Spent at most this many US dollars."""

    status: str | None = None
    stop_reason: str | None = None
    agent: str | None = None
    tenant_id: Any = ANY_TENANT
    user_id: str | None = None
    thread_id: str | None = None
    since: float | None = None
    until: float | None = None
    min_cost: float | None = None
    max_cost: float | None = None


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
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, session_id = json.loads(raw)
        return float(created_at), str(session_id)
    except (ValueError, TypeError) as exc:
        raise InvalidArgument(f"cursor {cursor[:40]!r} is not one a session listing gave; "
                              "start from the first page (no cursor)") from exc


def page_sessions(store: Store, where: SessionFilter = SessionFilter(), *, limit: int = 50,
                  after: str | None = None) -> SessionPage:
    """Up to ``limit`` sessions matching ``where``, newest first, after the cursor ``after``."""
    if limit < 1:
        raise InvalidArgument(f"limit must be at least 1, got {limit}")
    key = decode_cursor(after) if after is not None else None
    found = sorted(store.sessions(since=None, until=None),
                   key=lambda s: (s.created_at, s.session_id), reverse=True)
    chosen: list[SessionInfo] = []
    for info in found:
        if key is not None and (info.created_at, info.session_id) >= key:
            continue
        if not _matches(info, where):
            continue
        chosen.append(info)
        if len(chosen) > limit:
            break
    more = len(chosen) > limit
    chosen = chosen[:limit]
    return SessionPage(chosen, encode_cursor(chosen[-1]) if more else None)


def _matches(info: SessionInfo, where: SessionFilter) -> bool:
    if where.status is not None and info.status != where.status:
        return False
    if where.agent is not None and info.agent != where.agent:
        return False
    if where.tenant_id is not ANY_TENANT and info.tenant_id != where.tenant_id:
        return False
    if where.since is not None and info.created_at < where.since:
        return False
    return where.until is None or info.created_at < where.until
