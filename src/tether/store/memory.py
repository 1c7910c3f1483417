"""An in-process store: the reference implementation of the store contract, for tests and for
runs that need no durability. Thread-safe, so approvers may act from other threads."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tether.errors import NotFound
from tether.store.anchor_chain import (
    ANCHOR_GENESIS,
    Anchor,
    approval_anchor,
    attempt_anchor,
    audit_key,
    head_anchor,
    seal_anchor,
)
from tether.store.base import (
    ConflictError,
    Lease,
    SessionBusy,
    SessionInfo,
    StoredCheckpoint,
    ThreadEntry,
    holder_is_gone,
    session_info,
)
from tether.store.checkpoints import MemoryCheckpoints
from tether.store.halts import Halt, MemoryHalts
from tether.store.memory_quotas import MemoryQuotas
from tether.store.memory_threads import MemoryThreads
from tether.store.session_index import ANY_TENANT, SessionFilter
from tether.types import Event


class MemoryStore(MemoryCheckpoints, MemoryQuotas, MemoryHalts, MemoryThreads):
    """The in-memory store (``memory://``): this process only, gone when it exits. For tests and
    for runs whose record need not outlive them."""
    url = "memory://"

    def __init__(self) -> None:
        self._events: dict[str, list[Event]] = {}
        self._approvals: dict[str, dict[str, Any]] = {}
        self._private: dict[tuple[str, str], str] = {}  # (session, call) -> arguments as JSON
        self._leases: dict[str, tuple[str | None, int, float]] = {}  # holder, token, expires
        self._anchors: list[Anchor] = []
        self._checkpoints: list[StoredCheckpoint] = []
        # (tenant, user) -> the index of their threads, one entry per session on one
        self._threads: dict[tuple[str, str], list[ThreadEntry]] = {}
        self._turns = {}  # tether.store.memory_threads: each thread's kept turns
        self._audit_key = audit_key()
        self._lock = threading.Lock()
        self._quota_rows = {}  # tether.store.memory_quotas
        self._halts: dict[str, Halt] = {}  # tether.store.halts
        self._halt_version = self._standing = 0

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._events)} sessions)"

    def append(self, session_id: str, events: Sequence[Event],
               data_json: Sequence[str] | None = None, lease: Lease | None = None) -> None:
        if not events:
            return
        with self._lock:
            stored = self._events.setdefault(session_id, [])
            if events[0].seq != len(stored) + 1:
                raise ConflictError(f"session {session_id}: expected seq {len(stored) + 1}, "
                                    f"got {events[0].seq}; another writer appended first")
            self._refuse_halted(session_id, events)  # tether.store.halts
            if lease is not None:
                if events[0].seq > 1:
                    self._check(session_id, lease)
                self._leases[session_id] = (lease.holder, lease.token, time.time() + lease.ttl)
            stored.extend(events)
            head = head_anchor(session_id, events)
            if head is not None:
                self._anchor("head", session_id, head)

    def _anchor(self, kind: str, session_id: str, body: Mapping[str, Any]) -> None:
        prev = self._anchors[-1].hash if self._anchors else ANCHOR_GENESIS
        text, digest, mac = seal_anchor(prev, body, self._audit_key)
        self._anchors.append(Anchor(len(self._anchors) + 1, kind, session_id, text, prev,
                                    digest, mac))

    def anchor_lanes(self) -> int:
        return 1  # one writer at a time anyway: one chain

    def anchors(self) -> list[Anchor]:
        with self._lock:
            return list(self._anchors)

    def _check(self, session_id: str, lease: Lease) -> None:
        holder, token, expires = self._leases.get(session_id, (None, 0, 0.0))
        if token != lease.token:
            raise SessionBusy(session_id, holder, expires, lost=True)

    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease:
        with self._lock:
            if not self._events.get(session_id):
                raise NotFound(f"no session {session_id!r} in {self.url}")
            current, token, expires = self._leases.get(session_id, (None, 0, 0.0))
            if current not in (None, holder) and expires > time.time() and \
                    not holder_is_gone(current):
                raise SessionBusy(session_id, current, expires)
            lease = Lease(holder, token + 1, ttl)
            self._leases[session_id] = (holder, lease.token, time.time() + ttl)
            return lease

    def renew(self, session_id: str, lease: Lease) -> None:
        with self._lock:
            self._check(session_id, lease)
            self._leases[session_id] = (lease.holder, lease.token, time.time() + lease.ttl)

    def release(self, session_id: str, lease: Lease) -> None:
        with self._lock:
            if self._leases.get(session_id, (None, 0, 0.0))[1] == lease.token:
                self._leases[session_id] = (None, lease.token, 0.0)

    def read(self, session_id: str, after_seq: int = 0) -> list[Event]:
        return list(self._events.get(session_id, ())[after_seq:])

    def unverifiable(self, session_id: str) -> frozenset[int]:
        return frozenset()

    def unlisted(self) -> list[str]:
        return []  # the index is the events themselves

    def sessions(self, *, since: float | None = None,
                 until: float | None = None) -> list[SessionInfo]:
        infos = [session_info(sid, evs) for sid, evs in self._events.items() if evs]
        return sorted((i for i in infos if (since is None or i.updated_at >= since)
                       and (until is None or i.updated_at < until)),
                      key=lambda i: i.created_at)

    def page_sessions(self, where: SessionFilter, limit: int,
                      after: tuple[float, str] | None = None) -> list[SessionInfo]:
        with self._lock:
            infos = [session_info(sid, evs) for sid, evs in self._events.items() if evs]
        chosen = sorted((i for i in infos if (after is None or
                                              (i.created_at, i.session_id) < after)
                         and matches(i, where)),
                        key=lambda i: (i.created_at, i.session_id), reverse=True)
        return chosen[:limit]

    def prune(self, before: float) -> int:
        with self._lock:
            doomed = [sid for sid, evs in self._events.items() if evs[-1].timestamp < before]
            for sid in doomed:
                del self._events[sid]
                self._anchor("prune", sid, {"session_id": sid, "before": before})
                for aid in [a for a, r in self._approvals.items() if r["session_id"] == sid]:
                    del self._approvals[aid]
                self._drop_private(sid)
                self._leases.pop(sid, None)
            doomed_set = set(doomed)
            for owner, rows in self._threads.items():
                self._threads[owner] = [r for r in rows if r.session_id not in doomed_set]
            self._remove_turn_text(doomed_set)
            return len(doomed)

    def erase(self, session_id: str, rewritten: Sequence[tuple[int, str, str]], *,
              drop_private: bool = True) -> None:
        with self._lock:
            stored = self._events.get(session_id, [])
            for seq, type, data_json in rewritten:
                e = stored[seq - 1]
                stored[seq - 1] = Event.from_json(e.seq, type, session_id, e.timestamp,
                                                  data_json, e.prev_hash, e.hash)
            if drop_private:
                self._drop_private(session_id)
            self._remove_turn_text({session_id})

    def purge_erased(self) -> tuple[str, ...]:
        return ()  # the process's memory: nothing of it outlives the store

    def put_private(self, session_id: str, call_id: str, arguments: Mapping[str, Any]) -> None:
        # kept as JSON, like the durable stores: the caller's dict may change, values round-trip
        with self._lock:
            self._private[session_id, call_id] = json.dumps(dict(arguments))

    def get_private(self, session_id: str, call_id: str) -> dict[str, Any] | None:
        text = self._private.get((session_id, call_id))
        return None if text is None else dict(json.loads(text))

    def drop_private(self, session_id: str) -> None:
        with self._lock:
            self._drop_private(session_id)

    def _drop_private(self, session_id: str) -> None:
        for key in [k for k in self._private if k[0] == session_id]:
            del self._private[key]

    def put_approval(self, record: Mapping[str, Any]) -> None:
        with self._lock:
            if record["id"] in self._approvals:
                raise ConflictError(f"approval {record['id']} already exists")
            self._approvals[record["id"]] = dict(record)

    def get_approval(self, approval_id: str) -> dict[str, Any] | None:
        record = self._approvals.get(approval_id)
        return dict(record) if record is not None else None

    def list_approvals(self, *, status: str | None = None,
                       session_id: str | None = None) -> list[dict[str, Any]]:
        return [dict(r) for r in self._approvals.values()
                if (status is None or r["status"] == status)
                and (session_id is None or r["session_id"] == session_id)]

    def update_approval(self, approval_id: str, expected_status: str,
                        changes: Mapping[str, Any]) -> bool:
        with self._lock:
            record = self._approvals.get(approval_id)
            if record is None or record["status"] != expected_status:
                return False
            record.update(changes)
            decided = approval_anchor(record) if "status" in changes else None
            if decided is not None:
                self._anchor("approval", record["session_id"], decided)
            tried = attempt_anchor(record, changes)
            if tried is not None:
                self._anchor("attempt", record["session_id"], tried)
            return True

    def close(self) -> None:
        """Nothing to release: the events live as long as this object."""


def matches(info: SessionInfo, where: SessionFilter) -> bool:
    """Whether ``info`` is one ``where`` lists: ``store.session_index.where_sql``, in Python."""
    if where.status is not None and info.status != where.status:
        return False
    if where.tenant_id is not ANY_TENANT and info.tenant_id != where.tenant_id:
        return False
    for wanted, value in ((where.stop_reason, info.stop_reason), (where.agent, info.agent),
                          (where.user_id, info.user_id), (where.thread_id, info.thread_id)):
        if wanted is not None and value != wanted:
            return False
    if where.since is not None and info.created_at < where.since:
        return False
    if where.until is not None and info.created_at >= where.until:
        return False
    if where.min_cost is not None and (info.cost is None or info.cost < where.min_cost):
        return False
    if where.max_cost is not None and (info.cost is None or info.cost > where.max_cost):
        return False
    if where.ids is not None and info.session_id not in where.ids:
        return False
    return info.session_id not in where.excluding
