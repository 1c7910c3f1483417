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
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tether.errors import RunError
from tether.store.anchor_chain import ERASED_TYPE, ERASURE_TYPE, Anchor
from tether.store.session_index import STOPS, SessionFilter, cost_of
from tether.store.turn_chain import ThreadTurn
from tether.types import Event
from tether.vocabulary import EventType

DEFAULT_URL = "sqlite:///tether.db"
"""The store the CLI opens when given none (``--store`` or ``TETHER_STORE``): a SQLite file in
the working directory."""


class StoreError(RunError):
    """A store cannot do what was asked; the message says why and what to do."""


class ConflictError(StoreError):
    """Another writer appended to the session first (the seq did not follow)."""


class SchemaError(StoreError):
    """The store's schema is newer than this tether understands, or is not tether's."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or written for now: a database restart or failover that
    outlasted the store's ride-through bound, a full disk. What was stored is intact; the
    session stopped at its last stored step and is resumed once the cause is gone."""

    def __init__(self, store: str, cause: str, *, session_id: str | None = None,
                 remedy: str = "once the database is reachable again") -> None:
        self.store, self.cause, self.session_id, self.remedy = store, cause, session_id, remedy
        if session_id is not None:
            then = (f"session {session_id} stopped at its last stored step and is resumable: "
                    f"{remedy}, run `tether resume {session_id} --agent MODULE:ATTR --store "
                    f"{store}` (in code: Agent.resume({session_id!r}))")
        else:
            then = f"nothing was changed by this request; {remedy}, try it again"
        super().__init__(f"the store {store} is unavailable: {cause}; {then}")

    def for_session(self, session_id: str) -> StoreUnavailable:
        """The same error told to ``session_id`` (one outage stops many sessions)."""
        return StoreUnavailable(self.store, self.cause, session_id=session_id,
                                remedy=self.remedy)


class StoreFull(StoreUnavailable):
    """The disk holding the store is full: nothing more can be written until space is freed
    (the store still opens read-only, for audit)."""

    def __init__(self, store: str, cause: str, *, session_id: str | None = None) -> None:
        self.disk_cause = cause
        super().__init__(store, f"the disk is full ({cause})", session_id=session_id,
                         remedy="once space is freed on that disk")

    def for_session(self, session_id: str) -> StoreFull:
        return StoreFull(self.store, self.disk_cause, session_id=session_id)


class SessionBusy(StoreError):
    """Another worker holds the session's lease (or took it over from this one)."""

    def __init__(self, session_id: str, holder: str | None, expires_at: float,
                 lost: bool = False) -> None:
        self.session_id, self.holder, self.expires_at = session_id, holder, expires_at
        left = max(0.0, expires_at - time.time())
        if lost:
            message = (f"session {session_id} was taken over by {holder or 'another worker'} "
                       "after this worker's lease lapsed; this worker stops here, and what it "
                       "had not journaled is settled by the new holder")
        else:
            message = (f"session {session_id} is running in {holder} (its lease expires in "
                       f"{left:.0f}s); wait for it to pause or end, or resume it after the lease "
                       "expires if that worker died")
        super().__init__(message)


class SessionMoved(SessionBusy):
    """The session was written by another worker after this copy of it was loaded: running on
    from the copy would fork the journal. Nothing was written and no lease is kept."""

    def __init__(self, session_id: str, loaded: int, stored: int) -> None:
        StoreError.__init__(self, (
            f"session {session_id} has {stored} events in the store, but this copy was loaded "
            f"with {loaded}: another worker ran it since; load it again (agent.load) and resume "
            "that"))
        self.session_id, self.holder, self.expires_at = session_id, None, 0.0


@dataclass(frozen=True, slots=True)
class Lease:
    """A worker's hold on a running session. ``token`` is the fencing token: it grows with each
    new holder, and every append is refused unless it carries the current one."""

    holder: str
    token: int
    ttl: float


def lease_columns(lease: Lease | None) -> tuple[str | None, int, float]:
    """A session row's lease columns for ``lease``: holder, token, expiry."""
    if lease is None:
        return None, 0, 0.0
    return lease.holder, lease.token, time.time() + lease.ttl


def lease_holder() -> str:
    """Who this process is, in a lease: host, pid and a nonce (a restarted pid is another)."""
    import socket
    import uuid

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_is_gone(holder: str | None) -> bool:
    """Whether ``holder`` is a process of this host that no longer exists: its lease can be
    taken at once instead of waiting for it to expire."""
    import socket

    if not holder:
        return True
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """A signed checkpoint of the anchor chain as a store keeps it (``tether.store.checkpoints``):
    the C2SP signed note as signed and cosigned, and its tree size."""

    size: int
    note: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ThreadEntry:
    """One session of a conversation thread, at its place in the thread (1, 2, ...) — the
    order sessions joined it — and, once its turn has ended, at its place in the thread's
    history (``ended``: 1, 2, ..., the order turns ended; ``tether.runtime.lifecycle.thread``)."""

    thread_id: str
    position: int
    session_id: str
    user_id: str | None
    created_at: float
    ended: int | None = None


@dataclass(frozen=True, slots=True)
class ThreadTail:
    """What is new in a thread to a reader who read its history up to a place
    (``Store.thread_tail``): the sessions not placed yet or placed after it, the turns kept
    after it, and the thread's revision, which the database counts up whenever a kept turn is
    changed, removed or put before another. ``revision`` None: the store counts none, and
    ``turns`` holds every kept turn, for the reader to compare the ones it read."""

    entries: list[ThreadEntry]
    turns: list[ThreadTurn]
    revision: int | None


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A stored session, as a store lists it: its id, when it was created and last written, how
    many events it has, the type of the last, its tenant and its agent's name; its user and
    thread (from its start); the stop reason and spend in US dollars its last pause or end
    recorded (``tether.store.session_index``)."""
    session_id: str
    created_at: float
    updated_at: float
    events: int
    last_type: str
    tenant_id: str | None = None
    agent: str | None = None
    user_id: str | None = None
    thread_id: str | None = None
    stop_reason: str | None = None
    cost: float | None = None

    @property
    def status(self) -> str:
        status: dict[str, str] = {EventType.SESSION_END: "ended",
                                  EventType.SESSION_PAUSED: "paused", ERASURE_TYPE: "erasure"}
        return status.get(self.last_type, "open")


class Store(Protocol):
    """What every store keeps: journals (appended a step at a time, atomically, chained),
    approvals, leases and the private table (``MemoryStore``, ``SQLiteStore``,
    ``PostgresStore``; ``open_store(url)`` picks one)."""
    url: str

    def append(self, session_id: str, events: Sequence[Event],
               data_json: Sequence[str] | None = None, lease: Lease | None = None) -> None:
        """Add one step's sealed events atomically; ConflictError if the seqs do not follow.
        ``data_json``, when given, is each event's data already encoded as JSON. With a
        ``lease``: a first append takes the session's lease for it, a later one is refused
        (SessionBusy) unless the lease is still the session's, and renews it. StoreUnavailable
        (StoreFull for a full disk) when the store cannot be reached or written: nothing of
        the step is stored, and the session resumes from its last stored step."""
        ...

    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease:
        """Take the lease of a stored session for ``ttl`` seconds, or SessionBusy naming the
        holder when another worker holds an unexpired one (a holder whose process is gone, on
        this host, holds nothing)."""
        ...

    def renew(self, session_id: str, lease: Lease) -> None:
        """Extend the lease; SessionBusy (lost) if another worker took it meanwhile."""
        ...

    def release(self, session_id: str, lease: Lease) -> None:
        """Give the lease up (nothing happens if it is no longer this one)."""
        ...

    def anchors(self) -> list[Anchor]:
        """The store's anchors, in the order written (see ``seal_anchor``); each names its lane."""
        ...

    def anchor_lanes(self) -> int:
        """How many anchor lanes the store keeps, fixed when it was created (1: one chain):
        the verifier expects every anchor in one of them."""
        ...

    def put_checkpoint(self, size: int, note: str) -> None:
        """Keep a signed checkpoint of the anchors (``tether.store.checkpoints``)."""
        ...

    def checkpoints(self) -> list[StoredCheckpoint]:
        """The kept checkpoints, oldest first."""
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

    def page_sessions(self, where: SessionFilter, limit: int,
                      after: tuple[float, str] | None = None) -> list[SessionInfo]:
        """Up to ``limit`` sessions matching ``where``, newest first by (created_at,
        session_id), strictly below the key ``after``: a keyset query, no OFFSET
        (``tether.store.paging`` wraps it in cursors)."""
        ...

    def prune(self, before: float) -> int:
        """Delete whole sessions last written before ``before``, and the text of their kept
        turns (their digests and links stay); return how many."""
        ...

    def put_approval(self, record: Mapping[str, Any]) -> None: ...

    def get_approval(self, approval_id: str) -> dict[str, Any] | None: ...

    def list_approvals(self, *, status: str | None = None,
                       session_id: str | None = None) -> list[dict[str, Any]]: ...

    def unlisted(self) -> list[str]:
        """Sessions whose events are stored but which the session index does not list (written
        outside tether, or their index row deleted): each one's id, or ``key N`` where only the
        deleted row named it. Audits look here; nothing else does."""
        ...

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

    def join_thread(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    session_id: str) -> int:
        """Put a session at the end of a thread of (tenant, user) — created by its first
        session — and return its place (1, 2, ...). Two sessions joining at once get two
        places. Threads of another tenant or user with the same id are other threads."""
        ...

    def thread_entries(self, tenant_id: str | None, user_id: str | None,
                       thread_id: str | None = None, *,
                       every_user: bool = False) -> list[ThreadEntry]:
        """The sessions of one thread of (tenant, user) in order, or of all that user's threads
        (``thread_id`` None), or of every user of the tenant (``every_user``)."""
        ...

    def end_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                  session_ids: Sequence[str], turns: Mapping[str, str] | None = None) -> None:
        """Give each of ``session_ids`` (sessions of the thread whose turn has ended) that has
        no place in the thread's history yet the next one (``ThreadEntry.ended``), in the order
        given, in one transaction; a session that has one keeps it. Two callers at once get
        distinct places, and a place is visible only once every place below it is. A session
        placed here whose turn ``turns`` gives (its canonical JSON) has it kept at its place,
        chained onto the turn kept before it (``tether.store.turn_chain``) — unless the
        thread's earlier places were given with nothing kept (by a tether before turns were
        kept): ``fill_turns`` then keeps them all, in place order, when a session next joins."""
        ...

    def thread_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                     through: int | None = None) -> list[ThreadTurn]:
        """The turns kept of one thread of (tenant, user), by place (up to ``through``)."""
        ...

    def thread_tail(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    after: int) -> ThreadTail:
        """What is new in one thread of (tenant, user) to a reader who read its history up to
        place ``after`` (``ThreadTail``; with ``after`` 0, all of it), read in that order: the
        revision first, so a change made while it reads shows at the next read."""
        ...

    def fill_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                   turns: Sequence[tuple[int, str, str]]) -> None:
        """Keep turns that took their place without their text (placed by a tether before
        turns were kept): each ``(place, session, turn JSON)``, in order, chained like
        ``end_turns``'; one at or below the last place kept is left out (a chain is only ever
        extended)."""
        ...

    def leave_threads(self, tenant_id: str | None, user_id: str | None) -> int:
        """Remove every thread of (tenant, user) from the index, and their kept turns; return
        how many sessions were listed. The sessions themselves stay."""
        ...

    def erase(self, session_id: str, rewritten: Sequence[tuple[int, str, str]], *,
              drop_private: bool = True) -> None:
        """Replace the type and data of events ``(seq, type, data as JSON)`` of a session,
        keeping each event's timestamp, hash and link (``tether.journal.erasure`` decides what
        is written and vouches for it); with ``drop_private``, also drops the session's private
        arguments. The text of the session's kept turn is removed (its digest and link stay).
        One transaction."""
        ...

    def purge_erased(self) -> tuple[str, ...]:
        """After ``erase``: make the store's own files keep no earlier version of what was
        rewritten (SQLite: deleted content is zeroed, ``secure_delete``, and the write-ahead log
        checkpointed and truncated; PostgreSQL: ``VACUUM FULL`` of the tables that held it).
        Returns what still may hold it, each said in a sentence (empty: nothing)."""
        ...

    def close(self) -> None: ...


def thread_key(tenant_id: str | None, user_id: str | None) -> tuple[str, str]:
    """How a thread's owner is stored: no tenant or no user is the empty string (stores key
    threads by (tenant, user, thread), and NULL never equals NULL in SQL)."""
    return tenant_id or "", user_id or ""


def session_info(session_id: str, events: Sequence[Event]) -> SessionInfo:
    """Listing facts of a session from its events (used by stores that keep no index)."""
    first, last = events[0], events[-1]
    start = first.data if first.type in (EventType.SESSION_START, ERASED_TYPE) else {}
    subject = start.get("subject") or {}
    last_type = last.data.get("type", last.type) if last.type == ERASED_TYPE else last.type
    stop = next((e.data for e in reversed(events) if e.type in STOPS), {})
    return SessionInfo(session_id, first.timestamp, last.timestamp, len(events),
                       last_type, subject.get("tenant_id"), start.get("agent"),
                       subject.get("user_id"), (start.get("thread") or {}).get("id"),
                       stop.get("reason"), cost_of((stop.get("spend") or {}).get("cost_usd")))
