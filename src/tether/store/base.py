"""The store seam: where journals, approvals and session listings live beyond one process.

Decision: one small protocol, three implementations (memory, SQLite, PostgreSQL) passing the same
contract tests. A store keeps sealed events exactly as given (their hashes are computed by the
journal, above this layer, and verified by reading them back), appends a step's events in one
transaction, and refuses an append whose first seq does not follow the stored ones — two writers
on one session cannot interleave silently. Approvals are kept as plain records with a status
column, so "use an approved request once" is a single compare-and-set in every store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tether.types import Event
from tether.urls import redact_url

DEFAULT_URL = "sqlite:///tether.db"


class StoreError(Exception):
    """A store cannot do what was asked; the message says why and what to do."""


class ConflictError(StoreError):
    """Another writer appended to the session first (the seq did not follow)."""


class SchemaError(StoreError):
    """The store's schema is newer than this tether understands, or is not tether's."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    created_at: float
    updated_at: float
    events: int
    last_type: str
    tenant_id: str | None = None
    agent: str | None = None

    @property
    def status(self) -> str:
        return {"session.end": "ended", "session.paused": "paused"}.get(self.last_type, "open")


class Store(Protocol):
    url: str

    def append(self, session_id: str, events: Sequence[Event],
               data_json: Sequence[str] | None = None) -> None:
        """Add one step's sealed events atomically; ConflictError if the seqs do not follow.
        ``data_json``, when given, is each event's data already encoded as JSON."""
        ...

    def read(self, session_id: str, after_seq: int = 0) -> list[Event]:
        """A session's events as stored: each with the exact JSON text its hash covers."""
        ...

    def unverifiable(self, session_id: str) -> frozenset[int]:
        """Seqs of events stored in a form whose hash cannot be recomputed exactly (PostgreSQL
        rows written as JSONB by a tether before its schema 3); verify checks only their links
        and reports them as unverifiable, never as intact."""
        ...

    def sessions(self, *, since: float | None = None,
                 until: float | None = None) -> list[SessionInfo]: ...

    def prune(self, before: float) -> int:
        """Delete whole sessions last written before ``before``; return how many."""
        ...

    def put_approval(self, record: Mapping[str, Any]) -> None: ...

    def get_approval(self, approval_id: str) -> dict[str, Any] | None: ...

    def list_approvals(self, *, status: str | None = None,
                       session_id: str | None = None) -> list[dict[str, Any]]: ...

    def update_approval(self, approval_id: str, expected_status: str,
                        changes: Mapping[str, Any]) -> bool:
        """Apply ``changes`` only if the status is still ``expected_status`` (compare-and-set)."""
        ...

    def put_private(self, session_id: str, call_id: str, arguments: Mapping[str, Any]) -> None:
        """Keep arguments of a call that the journal hides (with
        ``Agent(keep_hidden_arguments=True)``), so the call can run when the session resumes in
        another process. Not part of the journal: never chained, shown or exported; deleted
        when the session ends (``drop_private``) or is pruned."""
        ...

    def get_private(self, session_id: str, call_id: str) -> dict[str, Any] | None: ...

    def drop_private(self, session_id: str) -> None: ...

    def close(self) -> None: ...


def session_info(session_id: str, events: Sequence[Event]) -> SessionInfo:
    """Listing facts of a session from its events (used by stores that keep no index)."""
    start = events[0].data if events and events[0].type == "session.start" else {}
    subject = start.get("subject") or {}
    return SessionInfo(session_id, events[0].timestamp, events[-1].timestamp, len(events),
                       events[-1].type, subject.get("tenant_id"), start.get("agent"))


def open_store(url: str | None = None) -> Store:
    """A store from a URL: ``memory://``, ``sqlite:///path`` (the default, from ``TETHER_STORE``
    or ``sqlite:///tether.db``) or ``postgresql://...``."""
    url = url or os.environ.get("TETHER_STORE") or DEFAULT_URL
    if url.startswith("memory:"):
        from tether.store.memory import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite:"):
        from tether.store.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if url.startswith(("postgresql:", "postgres:")):
        from tether.store.postgres import PostgresStore

        store: Store = PostgresStore(url)
        return store
    raise StoreError(f"unknown store URL {redact_url(url)!r}; use memory://, "
                     "sqlite:///path/to/file.db or postgresql://user@host/db")
