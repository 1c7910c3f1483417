"""Conversation threads: what a session that continues a thread starts from.

Why: a conversation that spans sessions (a chat across days) must remember what was said, and
tether's promise is that the journal is the truth — so a thread keeps no copy of its own. The
store's thread index says which sessions make up a thread of a tenant's user; each turn (the
question, the answer) is read from its own session's journal, and a new session of the thread
journals the turns it is shown in its start, so its replay, rerun, resumption and audit never
depend on the index again.

Decision: a thread belongs to (tenant, user, thread id): another tenant's or user's thread of the
same id is another thread, so nothing is read across them. A thread's history is the turns that
have *ended*, in the order they ended: a session takes a place in the history when its end is
journaled (``end_turn``), one at a time in the store, so whatever overlapped no turn is lost, and
every session's history is the one a session before it was shown plus the turns that ended
since — no turn that ends later is ever put before what an earlier session saw. A turn still
running (or paused) when a session starts is not shown to it; it joins the history when it ends.
If the store could not record an end (a crash, an outage between the end and its place), the
next session of the thread that finds the turn ended gives it its place. A turn is read from its
own session's journal, or from a later session's start that journaled it, and either journal
must verify (an earlier turn edited in the database would otherwise speak to the model as the
conversation); an erased, pruned or forgotten session is not a turn any more. A
turn from a session that had read untrusted content carries that taint, so the continuing
session starts tainted, as the one that read it ended. Cost: a session's start holds the turns it
was shown, so a session joining reads the journal of the last ended turn (whose start holds the
thread's first turns, verified with that journal) and only the turns placed since that one
started one by one; a thread whose sessions do not overlap is continued from one journal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument, RunError
from tether.journal.chain import verify_chain
from tether.journal.erasure import vouched
from tether.runtime.record.state import fold
from tether.store.base import Store, StoreError, ThreadEntry
from tether.types import Event
from tether.vocabulary import EventType

MAX_THREAD_ID = 200  # characters; ids are keys, not content
# a start's ``thread.order``: its history is every turn that had ended, in the order they ended
# (what this module shows; a start without it was shown another history, and is not reused)
HISTORY_ORDER = "ended"


class ThreadTampered(RunError, RuntimeError):
    """An earlier session of the thread does not verify; the thread is not continued."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One ended session of a thread: what was asked and what was answered (``position``: its
    place among the sessions that joined the thread)."""

    session_id: str
    position: int
    user: str
    assistant: str  # "" when the session ended without an answer
    tainted: bool  # it read untrusted content

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session_id, "position": self.position, "user": self.user,
                "assistant": self.assistant, "tainted": self.tainted}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(data["session"], data["position"], data["user"], data["assistant"],
                   bool(data.get("tainted")))


def check_thread_id(thread_id: object) -> str:
    if not isinstance(thread_id, str) or not thread_id.strip() or len(thread_id) > MAX_THREAD_ID:
        raise InvalidArgument(f"thread must be a non-empty string of at most {MAX_THREAD_ID} "
                              f"characters, e.g. thread='support-4711'; got {thread_id!r}")
    return thread_id


def turn_of(session_id: str, position: int, events: Sequence[Event],
            read: Any) -> Turn | None:
    """The turn a stored session gives its thread, or None (erased, or never started)."""
    if not events or events[0].type != EventType.SESSION_START:
        return None
    broken = verify_chain(events, vouched(events, read))
    if broken is not None:
        raise ThreadTampered(f"session {session_id}, turn {position} of the thread, does not "
                             f"verify (at event {broken}); the thread is not continued from "
                             "an edited journal. Run `tether audit verify --session "
                             f"{session_id}`")
    state = fold(events)
    return Turn(session_id, position, state.task, state.answer or "", state.tainted)


def thread_history(store: Store, tenant_id: str | None, user_id: str | None,
                   thread_id: str) -> list[Turn]:
    """The turns a session joining the thread is shown: every turn that has ended, in the order
    the turns took their places. A turn found ended without a place (its end was journaled but
    its place not recorded) is given one first, so the next session is shown it in the same
    place."""
    entries = store.thread_entries(tenant_id, user_id, thread_id)
    journals = _Journals(store)
    late = [e.session_id for e in entries if e.ended is None and journals.ended(e)]
    if late:
        store.end_turns(tenant_id, user_id, thread_id, late)
        entries = store.thread_entries(tenant_id, user_id, thread_id)
    return journals.turns([e for e in entries if e.ended is not None])


def ended_turns(store: Store, entries: Sequence[ThreadEntry]) -> list[Turn]:
    """The ended turns among ``entries`` (one thread's), in the thread's order, writing nothing:
    those with a place in the history by their place, then those found ended without one (as
    ``thread_history`` would place them next)."""
    journals = _Journals(store)
    return journals.turns([e for e in entries if e.ended is not None],
                          [e for e in entries if e.ended is None and journals.ended(e)])


def end_turn(store: Store, tenant_id: str | None, user_id: str | None, thread_id: str,
             session_id: str) -> None:
    """Give an ended session's turn its place in the thread's history, once its end is
    journaled. The session has ended whatever happens here: if the store cannot record the
    place now, the next session of the thread that finds the turn ended gives it one."""
    with contextlib.suppress(StoreError):  # placed later by thread_history, as documented
        store.end_turns(tenant_id, user_id, thread_id, [session_id])


class _Journals:
    """The journals of one thread's sessions, each read (and verified) at most once: a journal
    that has ended does not change; one still running is read again when asked again."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._ended: dict[str, Sequence[Event]] = {}
        self._turns: dict[str, Turn | None] = {}

    def ended(self, entry: ThreadEntry) -> bool:
        return self._read(entry) is not None

    def _read(self, entry: ThreadEntry) -> Sequence[Event] | None:
        events = self._ended.get(entry.session_id)
        if events is None:
            events = self._store.read(entry.session_id)
            if not any(e.type == EventType.SESSION_END for e in events):
                return None
            self._ended[entry.session_id] = events
        return events

    def _turn(self, entry: ThreadEntry) -> Turn | None:
        if entry.session_id not in self._turns:
            events = self._read(entry)
            self._turns[entry.session_id] = None if events is None else turn_of(
                entry.session_id, entry.position, events, self._store.read)
        return self._turns[entry.session_id]

    def turns(self, placed: Sequence[ThreadEntry],
              late: Sequence[ThreadEntry] = ()) -> list[Turn]:
        """The turns of ``placed`` in the order of their places, then of ``late`` (ended, not
        placed yet) by position. The latest placed session's start holds the turns it was shown,
        verified with its journal: the thread's first turns, each already read once; so only
        the turns placed since it started are read one by one (for a thread whose sessions do
        not overlap: that session's own)."""
        placed = sorted(placed, key=lambda e: e.ended or 0)
        on_thread = {e.session_id for e in placed}
        shown: list[Turn] = []
        for entry in reversed(placed):  # the latest one that was not erased
            if self._turn(entry) is not None:
                start = self._ended[entry.session_id][0].data.get("thread") or {}
                if start.get("order") == HISTORY_ORDER:  # (a tether before it showed others)
                    shown = [t for t in map(Turn.from_dict, start.get("history") or ())
                             if t.session_id in on_thread]
                break
        seen = {t.session_id for t in shown}
        rest = [e for e in placed if e.session_id not in seen]
        return shown + [t for t in map(self._turn, [*rest, *sorted(late, key=lambda e:
                                                                    e.position)])
                        if t is not None]
