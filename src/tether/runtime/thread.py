"""Conversation threads: what a session that continues a thread starts from.

Why: a conversation that spans sessions (a chat across days) must remember what was said, and
tether's promise is that the journal is the truth — so a thread keeps no copy of its own. The
store's thread index says which sessions make up a thread of a tenant's user, in order; the
turns are read from those sessions' journals (the task, the final answer), and a new session of
the thread journals them in its start, so its replay, rerun and audit never depend on the index
again.

Decision: a thread belongs to (tenant, user, thread id): another tenant's or user's thread of the
same id is another thread, so nothing is read across them. A session takes its place in the
thread *before* it reads the turns before it, so two sessions continuing one thread at once
each see the turns before their own place (those of sessions that have started). Only the
latest earlier session is read: its start journaled the turns before it, so one verified
journal gives the whole thread, however long (the cost: each session's start holds the turns
before it). A turn is carried only from a session whose journal
verifies (an earlier turn edited in the database would otherwise speak to the model as the
conversation); an erased or empty session is skipped; a session not ended yet gives its
question without an answer. A turn from a session that had read untrusted content carries that
taint, so the continuing session starts tainted, as the one that read it ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.journal.chain import verify_chain
from tether.journal.erasure import vouched
from tether.runtime.state import fold
from tether.store.base import Store, ThreadEntry
from tether.types import Event

MAX_THREAD_ID = 200  # characters; ids are keys, not content


class ThreadTampered(RuntimeError):
    """An earlier session of the thread does not verify; the thread is not continued."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier session of a thread: what was asked and what was answered."""

    session_id: str
    position: int
    user: str
    assistant: str  # "" when the session gave no answer (yet)
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
        raise ValueError(f"thread must be a non-empty string of at most {MAX_THREAD_ID} "
                         f"characters, e.g. thread='support-4711'; got {thread_id!r}")
    return thread_id


def turn_of(session_id: str, position: int, events: Sequence[Event],
            read: Any) -> Turn | None:
    """The turn a stored session gives its thread, or None (erased, or never started)."""
    if not events or events[0].type != "session.start":
        return None
    broken = verify_chain(events, vouched(events, read))
    if broken is not None:
        raise ThreadTampered(f"session {session_id}, turn {position} of the thread, does not "
                             f"verify (at event {broken}); the thread is not continued from "
                             "an edited journal. Run `tether audit verify --session "
                             f"{session_id}`")
    state = fold(events)
    return Turn(session_id, position, state.task, state.answer or "", state.tainted)


def turns_before(store: Store, tenant_id: str | None, user_id: str | None, thread_id: str,
                 position: int) -> list[Turn]:
    """The turns of a thread before ``position``, in order."""
    entries = store.thread_entries(tenant_id, user_id, thread_id)
    return latest_turns(store, [e for e in entries if e.position < position])


def latest_turns(store: Store, entries: Sequence[ThreadEntry]) -> list[Turn]:
    """A thread's turns, from the latest of ``entries`` (one thread's, in order) whose session
    can be read: the turns its start journaled before it, then its own. One journal is read
    however long the thread (each session carries the turns before it); an entry whose session
    was erased or never started is passed over."""
    for entry in reversed(entries):
        events = store.read(entry.session_id)
        turn = turn_of(entry.session_id, entry.position, events, store.read)
        if turn is not None:
            earlier = (events[0].data.get("thread") or {}).get("history") or ()
            return [*(Turn.from_dict(t) for t in earlier), turn]
    return []
