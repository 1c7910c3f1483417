"""Which sessions an audit command reads: the store's, scoped to one tenant when asked.

Why a module of its own: ``tether audit`` (``tether.cli.audit``) registers the trust commands
(``tether.cli.audit_trust``), and both read sessions the same tenant-scoped way; kept in
``audit.py``, the reading would make the two modules import each other. Decision: a session of
another tenant is "not found", exactly as a session that does not exist is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.store.base import SessionInfo, Store
    from tether.types import Event


def tenant_sessions(store: Store, tenant: str | None,
                    since: float | None = None) -> list[SessionInfo]:
    """The store's sessions (of ``tenant`` only, when one is given)."""
    infos = store.sessions(since=since)
    return infos if tenant is None else [i for i in infos if i.tenant_id == tenant]


def read_sessions(store: Store, tenant: str | None,
                  since: float | None = None) -> Iterator[list[Event]]:
    """Each session's events, one session at a time (of ``tenant`` only, when given)."""
    for info in tenant_sessions(store, tenant, since):
        yield store.read(info.session_id)


def read_session(store: Store, session_id: str, tenant: str | None) -> list[Event]:
    """A session's events; none when it belongs to another tenant than ``tenant`` (it is then
    "not found", as a session that does not exist is)."""
    events = store.read(session_id)
    if tenant is not None and events and (
            events[0].type not in (EventType.SESSION_START, EventType.CONTENT_ERASED)
            or (events[0].data.get("subject") or {}).get("tenant_id") != tenant):
        return []  # an erased start keeps its tenant: an erased session is shown as erased
    return events
