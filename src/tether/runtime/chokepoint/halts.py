"""A halt, from the chokepoint's side: issuing and lifting one, and the checks that obey it.

Why: a person who runs a fleet must be able to stop it — one session, one agent, one tenant or
everything on a store — and know that it stopped. The store keeps the halts and refuses a
side-effecting call's start under one (``tether.store.halts``: the check runs in the very
transaction that would commit the ``tool.started``, so it is ordered against the halt's commit).
This module is the rest:

- ``halt`` / ``unhalt`` / ``standing``: the Python API (``tether halt`` is its command line),
  recording who (an ``Identity``) and why. A person scoped to one tenant halts only there.
- ``HaltWatch``: model calls and read-only tool calls write nothing the store could refuse, so
  each process reads the store's halt version at most every ``PERIOD`` seconds, lazily, on the
  first call after the period lapsed (no thread, no read per call), and re-reads the standing
  halts only when the version moved. A call that starts ``PERIOD`` seconds (plus the read)
  after a halt's commit sees it: the bound is 1 s with room to spare. The watch belongs to the
  store object it reads (one per store, shared by its sessions in the process).
- ``halted_stop``: what the chokepoint raises — a ``Stop`` with reason ``halted``, a pause,
  after journaling ``session.halted`` with the halt (who, why, which scope).
- ``refuse_if_halted``: resume's check, read fresh from the store: a standing halt refuses it
  (``Halted`` names the halt, who, why and ``tether unhalt``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, NotFound
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.approvals.identity import Identity
from tether.store.halts import Halt, Halted, HaltScope, new_halt
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.runtime.record.state import SessionState

PERIOD = 0.5  # seconds between two reads of the store's halt version, at most, per process
# sessions whose tenant and agent a watch remembers: a process that runs sessions for weeks (a
# gateway, a fleet worker) keeps no more; one forgotten is read from the store when next needed
OWNERS = 10_000
BOUND = 1.0  # the stated bound: a call that starts this long after a halt's commit is stopped


def _halts(store: Any) -> Any:
    """``store`` as a halt store (every tether store is one), or InvalidArgument."""
    if not hasattr(store, "put_halt"):
        raise InvalidArgument(f"{store!r} keeps no halts; halts need a tether store "
                              "(memory://, sqlite:///..., postgresql://...)")
    return store


def halt(store: Any, scope: HaltScope | None = None, *, reason: str = "",
         by: Identity) -> Halt:
    """Halt the sessions ``scope`` covers (None or an empty scope: every session on the store),
    recorded with who and why. From the commit on, no side-effecting call of a covered session
    starts, in any process on the store; model calls and read-only calls stop within ``BOUND``
    seconds; each covered session pauses ``halted``. A person scoped to one tenant halts only
    that tenant's sessions (the halt is narrowed to it)."""
    scope = scope or HaltScope()
    if not by.all_tenants:
        if scope.tenant_id is not None and scope.tenant_id != by.tenant_id:
            raise NotFound(f"no tenant {scope.tenant_id!r} for {by.name}")
        scope = HaltScope(scope.session_id, scope.agent, by.tenant_id)
    made = new_halt(scope, reason, by.name, by.method)
    _halts(store).put_halt(made)
    return made


def unhalt(store: Any, halt_id: str | None = None, *, scope: HaltScope | None = None,
           by: Identity) -> list[Halt]:
    """Lift the standing halt ``halt_id``, or every standing halt whose scope is exactly
    ``scope``; the halts lifted (NotFound when none). Halted sessions do not go on by
    themselves: resume each (it then continues exactly once: what ran is not run again)."""
    halts = _halts(store)
    if (halt_id is None) == (scope is None):
        raise InvalidArgument("name the halt to lift: its id, or the scope it was issued for")
    chosen = [h for h in standing_halts(store, by) if h.id == halt_id or h.scope == scope]
    lifted = [h for h in (halts.lift_halt(h.id, by.name, by.method) for h in chosen)
              if h is not None]
    if not lifted:
        which = f"halt {halt_id}" if halt_id else f"halt of {scope}"
        raise NotFound(f"no standing {which} that {by.name} may lift; `tether halts` lists them")
    return lifted


def standing_halts(store: Any, by: Identity | None = None) -> list[Halt]:
    """The halts that stand, oldest first (for a person scoped to one tenant: those naming
    it)."""
    halts: list[Halt] = _halts(store).list_halts(standing=True)
    if by is None or by.all_tenants:
        return halts
    return [h for h in halts if h.scope.tenant_id == by.tenant_id]


def covering(halts: Sequence[Halt], session_id: str,
             owner: tuple[str | None, str | None] | None) -> Halt | None:
    """The first of ``halts`` that covers the session (owner: its tenant and agent)."""
    if owner is None:
        return next((h for h in halts if h.scope.session_id == session_id
                     and h.scope.agent is None and h.scope.tenant_id is None), None)
    return next((h for h in halts if h.scope.covers(session_id, *owner)), None)


def refuse_if_halted(store: Any, session_id: str) -> None:
    """Halted when a standing halt covers the session, read fresh from the store: resume's
    check, so a halt issued while a worker was down holds when it comes back, and a halt
    lifted a moment ago no longer stops the session it let go (the watch is refreshed)."""
    watch = refreshed(store)
    if watch is not None:
        found = watch.check(session_id)
        if found is not None:
            raise Halted(found, session_id)


def refreshed(store: Any) -> HaltWatch | None:
    """The store's watch, read fresh now (a session's start: the halts as they stand)."""
    watch = watch_of(store)
    if watch is not None:
        watch.refresh()
    return watch


class HaltWatch:
    """One store's standing halts as this process last read them, re-read at most every
    ``PERIOD`` seconds (see the module docstring). Thread-safe without a lock: a refresh swaps
    immutable values, and two threads refreshing at once both read the same store."""

    __slots__ = ("_due", "_halts", "_owners", "_store", "_version")

    def __init__(self, store: Any) -> None:
        self._store = store
        self._due = 0.0  # when the version is read again (time.monotonic)
        self._version: int | None = None
        self._halts: tuple[Halt, ...] = ()
        self._owners: dict[str, tuple[str | None, str | None]] = {}  # session: tenant, agent

    def check(self, session_id: str) -> Halt | None:
        """The standing halt covering ``session_id``, as of at most ``PERIOD`` seconds ago."""
        now = time.monotonic()
        if now >= self._due:
            self._refresh(now)
        if not self._halts:
            return None
        owner = self._owners.get(session_id)
        if owner is None:  # not stored yet: looked up again next time
            owner = self._store.session_owner(session_id)
            if owner is not None:
                self._remember(session_id, owner)
        return covering(self._halts, session_id, owner)

    def know(self, session_id: str, tenant_id: str | None, agent: str | None) -> None:
        """The tenant and agent of a session starting in this process (its start is not
        stored yet when its first call is checked)."""
        self._remember(session_id, (tenant_id, agent))

    def _remember(self, session_id: str, owner: tuple[str | None, str | None]) -> None:
        owners = self._owners
        owners[session_id] = owner
        if len(owners) > OWNERS:  # the oldest: its start is stored by now
            del owners[next(iter(owners))]

    def refresh(self) -> None:
        """Read the store's halts now, whatever the period."""
        self._refresh(time.monotonic())

    def _refresh(self, now: float) -> None:
        self._due = now + PERIOD
        version = self._store.halt_version()
        if version != self._version:  # (0: no halt was ever issued on the store)
            self._halts = tuple(self._store.list_halts(standing=True)) if version else ()
            self._version = version


def watch_of(store: Any) -> HaltWatch | None:
    """The store's watch, made on first use and kept on the store object (None: a store that
    keeps no halts, so none can stand)."""
    if store is None or not hasattr(store, "halt_version"):
        return None
    watch: HaltWatch | None = getattr(store, "_halt_watch", None)
    if watch is None:
        watch = HaltWatch(store)
        with contextlib.suppress(AttributeError):  # a store with slots: a watch per caller
            store._halt_watch = watch
    return watch


def starting(journal: Journal, start: Mapping[str, Any]) -> None:
    """Tell the store's watch whose a session starting now is (``session.start``'s record)."""
    watch = watch_of(journal.store)
    if watch is not None:
        watch.know(journal.session_id, (start.get("subject") or {}).get("tenant_id"),
                   start.get("agent"))


def halted_stop(journal: Journal, halt: Halt, call_id: str | None = None) -> Stop:
    """Journal ``session.halted`` (the halt: who, why, scope; and the call it refused, if any)
    and return the Stop that pauses the session ``halted``."""
    data: dict[str, Any] = {"halt": halt.record()}
    if call_id is not None:
        data["call_id"] = call_id
    journal.append(EventType.SESSION_HALTED, data)
    return Stop(StopReason.HALTED, halt.describe(), wrap_up=False)


def stop_if_halted(watch: HaltWatch | None, journal: Journal) -> None:
    """The chokepoint's check before a model call or a tool call: Stop when a halt covers the
    session, as the watch last read the store."""
    if watch is not None:
        found = watch.check(journal.session_id)
        if found is not None:
            raise halted_stop(journal, found)


async def commit_start(journal: Journal, state: SessionState, call_id: str) -> None:
    """Make a side-effecting call's ``tool.started`` durable before it runs; the store refuses
    it under a halt that covers the session (nothing of the append is written: the call did
    not start), and the session then pauses ``halted`` (the Stop raised)."""
    try:
        await journal.aflush(stored_first=True)
    except Halted as halted:
        unstarted(journal, state, call_id)
        raise halted_stop(journal, halted.halt, call_id) from None


def unstarted(journal: Journal, state: SessionState, call_id: str) -> None:
    """Take back the ``tool.started`` of ``call_id`` that the store refused (nothing of its
    append was written): the journal drops it, and the state forgets the call began, so on
    resume it runs as decided, once."""
    journal.retract_unstored(EventType.TOOL_STARTED)
    state.started.discard(call_id)
    if state.effects and state.effects[-1].call_id == call_id:
        state.effects = state.effects[:-1]
