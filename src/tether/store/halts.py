"""Halts kept in the store: who stopped which sessions, why, and the rule every append obeys.

Why here, below the runtime: a halt must stop every process on a store, whatever code runs the
session (an agent's loop, a DBOS workflow, a foreign framework's run, a gateway). All of them
write a side-effecting call's ``tool.started`` through ``Store.append`` before the call runs, so
the store is the one place none of them can pass by.

Decision: **an append that carries a ``tool.started`` is refused (``Halted``, nothing of it
written) when a standing halt covers its session, and the check runs inside the very
transaction that would commit it.** A halt is committed by a transaction that conflicts with
that check (SQLite: both are write transactions, which SQLite serialises; PostgreSQL: the
append reads the halts under a shared lock on the one ``halt_state`` row, which a halt or an
unhalt updates under its exclusive lock), so the two are ordered by the store itself: every
``tool.started`` that was committed, was committed before the halt was, and none is committed
after it while the halt stands. A halt covers a session when each scope field it names
(session, agent, tenant) equals the session's; a halt naming none (``--all``) covers every one.

``halt_state`` also holds how many halts stand (an append reads the halts only when some do)
and a version that every halt and unhalt increments: a process reads it
(one small read, at most every half second, ``tether.runtime.halting``) to stop model calls and
read-only calls, which write nothing the store could refuse.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from tether.store.base import StoreError
from tether.types import Event
from tether.vocabulary import EventType

_STARTED = EventType.TOOL_STARTED


@dataclass(frozen=True, slots=True)
class HaltScope:
    """Which sessions a halt covers: those whose every named field matches (all None: every
    session on the store, ``--all``)."""

    session_id: str | None = None
    agent: str | None = None
    tenant_id: str | None = None

    def covers(self, session_id: str, tenant_id: str | None, agent: str | None) -> bool:
        return ((self.session_id is None or self.session_id == session_id)
                and (self.agent is None or self.agent == agent)
                and (self.tenant_id is None or self.tenant_id == tenant_id))

    def __str__(self) -> str:
        named = [f"{k} {v}" for k, v in (("session", self.session_id), ("agent", self.agent),
                                          ("tenant", self.tenant_id)) if v is not None]
        return ", ".join(named) or "every session"


@dataclass(frozen=True, slots=True)
class Halt:
    """A halt as the store keeps it: its scope, who issued it (a name and how it was
    established, ``tether.runtime.approvals.identity``) and why; ``lifted_*`` once unhalted."""

    id: str
    scope: HaltScope
    reason: str
    by: str
    by_method: str
    at: float
    lifted_at: float | None = None
    lifted_by: str | None = None
    lifted_method: str | None = None

    @property
    def standing(self) -> bool:
        return self.lifted_at is None

    def record(self) -> dict[str, Any]:
        """The halt as plain data (a journal event's, a listing's)."""
        data = asdict(self)
        data["scope"] = asdict(self.scope)
        return data

    def describe(self) -> str:
        return (f"halt {self.id} ({self.scope}) by {self.by} ({self.by_method}): "
                f"{self.reason or 'no reason given'}")


def new_halt(scope: HaltScope, reason: str, by: str, by_method: str) -> Halt:
    import uuid  # here: a run that issues no halt does not load it (tests/test_start_cost.py)

    return Halt(f"halt_{uuid.uuid4().hex[:16]}", scope, reason, by, by_method, time.time())


def halt_from_row(row: Sequence[Any]) -> Halt:
    """A halt from its columns: id, session, agent, tenant, reason, by, method, at, lifted at,
    lifted by, lifted method (the order every store selects them in: ``COLUMNS``)."""
    return Halt(row[0], HaltScope(row[1], row[2], row[3]), row[4], row[5], row[6], row[7],
                row[8], row[9], row[10])


COLUMNS = ("id, session_id, agent, tenant_id, reason, by_name, by_method, created_at, "
           "lifted_at, lifted_by, lifted_method")


class Halted(StoreError):
    """A standing halt covers the session: a side-effecting call may not start, or a halted
    session may not be resumed, until someone lifts it."""

    def __init__(self, halt: Halt, session_id: str) -> None:
        self.halt, self.session_id = halt, session_id
        super().__init__(f"session {session_id} is halted: {halt.describe()}; nothing more "
                         f"runs while it stands. To let it go on, run `tether unhalt --id "
                         f"{halt.id}` (in code: tether.runtime.unhalt(store, "
                         f"{halt.id!r}, by=...)), then resume the session")


def starts_effect(events: Sequence[Event]) -> bool:
    """Whether an append carries a side-effecting call's start (the appends a halt refuses)."""
    return any(event.type == _STARTED for event in events)


class HaltStore(Protocol):
    """What a store keeps of halts (every store: memory, SQLite, PostgreSQL)."""

    def put_halt(self, halt: Halt) -> None:
        """Commit ``halt``; from that commit on no append carrying a ``tool.started`` of a
        session it covers is committed."""
        ...

    def lift_halt(self, halt_id: str, by: str, by_method: str) -> Halt | None:
        """Lift a standing halt; the halt as lifted, or None when none stands by that id."""
        ...

    def list_halts(self, *, standing: bool = True) -> list[Halt]: ...

    def halt_version(self) -> int:
        """A number every halt and unhalt changes: one cheap read, for watchers."""
        ...

    def session_owner(self, session_id: str) -> tuple[str | None, str | None] | None:
        """The session's tenant and agent, as its index keeps them (None: no such session)."""
        ...


class MemoryHalts:
    """Halts of the in-memory store, checked under the store's lock like its appends."""

    _lock: threading.Lock
    _events: dict[str, list[Event]]
    _halts: dict[str, Halt]
    _halt_version: int
    _standing: int

    def _covering(self, session_id: str) -> Halt | None:
        """The first standing halt covering ``session_id`` (the caller holds the lock)."""
        if not self._standing:
            return None
        owner = self._owner(session_id)
        if owner is None:
            return None
        for halt in self._halts.values():
            if halt.standing and halt.scope.covers(session_id, *owner):
                return halt
        return None

    def _owner(self, session_id: str) -> tuple[str | None, str | None] | None:
        events = self._events.get(session_id)
        if not events:
            return None
        start = events[0].data
        return (start.get("subject") or {}).get("tenant_id"), start.get("agent")

    def _refuse_halted(self, session_id: str, events: Sequence[Event]) -> None:
        """In ``append``, under the lock: Halted if ``events`` start a covered side effect."""
        if starts_effect(events):
            halt = self._covering(session_id)
            if halt is not None:
                raise Halted(halt, session_id)

    def put_halt(self, halt: Halt) -> None:
        with self._lock:
            self._halts[halt.id] = halt
            self._halt_version += 1
            self._standing += 1

    def lift_halt(self, halt_id: str, by: str, by_method: str) -> Halt | None:
        with self._lock:
            halt = self._halts.get(halt_id)
            if halt is None or not halt.standing:
                return None
            lifted = Halt(halt.id, halt.scope, halt.reason, halt.by, halt.by_method, halt.at,
                          time.time(), by, by_method)
            self._halts[halt_id] = lifted
            self._halt_version += 1
            self._standing -= 1
            return lifted

    def list_halts(self, *, standing: bool = True) -> list[Halt]:
        with self._lock:
            return [h for h in self._halts.values() if h.standing or not standing]

    def halt_version(self) -> int:
        return self._halt_version

    def session_owner(self, session_id: str) -> tuple[str | None, str | None] | None:
        with self._lock:
            return self._owner(session_id)


def scope_params(halt: Halt) -> tuple[Any, ...]:
    """A halt's columns as an insert takes them (``COLUMNS`` order)."""
    s = halt.scope
    return (halt.id, s.session_id, s.agent, s.tenant_id, halt.reason, halt.by, halt.by_method,
            halt.at, halt.lifted_at, halt.lifted_by, halt.lifted_method)
