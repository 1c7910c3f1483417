"""Conversation threads: what a session that continues a thread starts from.

Why: a conversation that spans sessions (a chat across days) must remember what was said, and
tether's promise is that the journal is the truth. The store's thread index says which sessions
make up a thread of a tenant's user; each turn (the question, the answer) is written by its own
session's journal, and kept once more by the store when it takes its place in the thread's
history (``tether.store.turn_chain``), chained by digest onto the turns before it. A new session
of the thread journals in its start the history it is shown *by reference* — the last place in
it and that place's link — so its replay, rerun, resumption and audit read exactly those turns
again and check them against the link (``recorded_history``), in any process.

Decision: a thread belongs to (tenant, user, thread id): another tenant's or user's thread of the
same id is another thread, so nothing is read across them, and a start's reference is resolved
in the thread of the start's own subject. A thread's history is the turns that have *ended*, in
the order they ended: a session takes a place in the history when its end is journaled
(``end_turn``), one at a time in the store, so whatever overlapped no turn is lost, and every
session's history is the one a session before it was shown plus the turns that ended since — no
turn that ends later is ever put before what an earlier session saw. A turn still running (or
paused) when a session starts is not shown to it; it joins the history when it ends. If the
store could not record an end (a crash, an outage between the end and its place), the next
session of the thread that finds the turn ended gives it its place (and keeps its turn).

What is shown is checked as before: every kept turn's digest and link is recomputed, the latest
turn's own journal must verify and hold the same turn, and its start's reference must name the
same link at its place (an earlier turn edited, dropped or reordered in the database would
otherwise speak to the model as the conversation); turns placed while it ran are checked
against their own journals one by one. A turn whose text was removed (its session pruned, or
erased by ``forget``) is shown only from its own journal, verified, or not at all. A turn from a
session that had read untrusted content carries that taint, so the continuing session starts
tainted, as the one that read it ended (the start's reference says so too). A start written
before turns were kept (it carries the turns it was shown, ``history``) is still read as it
was; a thread whose turns were placed then has them kept when a session next joins it.
Cost: a session joining reads the kept turns (one query; two digests per turn) and one earlier
journal when the thread's sessions do not overlap; its start grows by nothing with the thread.
An agent whose sessions checked the thread before reads only the turns placed since, while the
thread's revision says the others are unchanged (``tether.runtime.lifecycle.thread_memo``).
"""

from __future__ import annotations

import bisect
import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument, RunError
from tether.journal.chain import canonical_text, verify_chain
from tether.journal.erasure import erasure_of, vouched
from tether.runtime.lifecycle.thread_memo import Checked, CheckedThreads, since
from tether.runtime.record.history import Estimator, history_messages
from tether.runtime.record.state import fold
from tether.store.base import Store, StoreError, ThreadEntry, ThreadTail
from tether.store.turn_chain import GENESIS, ThreadTurn, turn_digest, turn_link
from tether.types import Event, Message
from tether.vocabulary import EventType

MAX_THREAD_ID = 200  # characters; ids are keys, not content
# a start's ``thread.order``: its history is every turn that had ended, in the order they ended
# (what this module shows; a start without it was shown another history, and is not reused)
HISTORY_ORDER = "ended"


class ThreadTampered(RunError, RuntimeError):
    """An earlier session of the thread does not verify, or a kept turn does not match the
    history a start named; the thread is not continued (nor the session resumed)."""


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
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
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


def turn_text(turn: Turn) -> str:
    """A turn as a store keeps it (``ThreadTurn.turn``) and as its digest covers it."""
    return canonical_text(turn.to_dict())


@dataclass(frozen=True, slots=True)
class History:
    """What a session joining a thread is shown: the turns (``Turn.to_dict``, every turn that
    has ended, in the order they took their places), their messages, and the reference its
    start journals for them (``through``, ``link``, ``shown``, ``tainted``)."""

    turns: Sequence[Mapping[str, Any]]
    messages: Sequence[Message]
    reference: dict[str, Any]
    estimate: tuple[Estimator, int] | None = None  # the messages' (with ``estimate``)


def thread_history(store: Store, tenant_id: str | None, user_id: str | None,
                   thread_id: str, memo: CheckedThreads | None = None,
                   estimate: Estimator | None = None) -> History:
    """The history a session joining the thread is shown. A turn found ended without a place
    (its end was journaled but its place not recorded) is given one first, so the next session
    is shown it in the same place. With ``memo``, the kept turns it remembers unchanged are not
    read or checked again (``tether.runtime.lifecycle.thread_memo``); with ``estimate`` too, the
    messages' estimate is made, of the new ones only when the memory holds the rest's."""
    key = (tenant_id, user_id, thread_id)
    known = memo.get(key) if memo is not None else None
    journals = _Journals(store)
    after = known.through if known is not None else 0
    tail = store.thread_tail(tenant_id, user_id, thread_id, after)
    late = [e for e in tail.entries if e.ended is None and journals.ended(e)]
    if late:
        store.end_turns(tenant_id, user_id, thread_id, [e.session_id for e in late],
                        {t.session_id: turn_text(t) for t in map(journals.turn, late) if t})
        tail = store.thread_tail(tenant_id, user_id, thread_id, after)
    rows = since(known, tail)
    if known is None or rows is None:  # nothing remembered, or not any more: check it all
        known = None
        if after:
            tail = store.thread_tail(tenant_id, user_id, thread_id, 0)
        kept = rows = _kept(store, tenant_id, user_id, thread_id, tail, journals, fill=True)
    else:
        check_kept(rows, known.kept[-1].link)
        kept = [*known.kept, *rows]
    _anchored(kept, journals)
    new = _shown(rows, journals)
    turns = (*known.turns, *new) if known is not None else tuple(new)  # (shared: a tuple)
    added = history_messages(new)
    messages = (*known.messages, *added) if known is not None else tuple(added)
    tainted = (known is not None and known.tainted) or any(t["tainted"] for t in new)
    made = None
    if estimate is not None:
        was = known.estimate if known is not None else None
        made = (estimate, was[1] + sum(map(estimate, added)) if was and was[0] == estimate
                else sum(map(estimate, messages)))
    if memo is not None and all(row.turn is not None for row in rows):
        memo.put(key, Checked(kept, turns, messages, tainted, tail.revision, made))
    last_kept = kept[-1] if kept else None
    return History(turns, messages, {
        "through": last_kept.ended if last_kept else 0,
        "link": last_kept.link if last_kept else GENESIS, "shown": len(turns),
        "tainted": tainted}, made)


def recorded_history(store: Store | None, start: Mapping[str, Any]) -> list[Turn]:
    """The turns a stored session's start says it was shown, read again and checked against
    the link its start journaled (ThreadTampered when they do not match, or are missing): a
    start written before turns were kept carries them itself. Turns removed since (pruned,
    erased) are not shown again."""
    thread = start.get("thread")
    if not thread:
        return []
    if "history" in thread:
        return [Turn.from_dict(t) for t in thread["history"] or ()]
    through, link = int(thread.get("through") or 0), thread.get("link") or GENESIS
    if not through:
        return []
    if store is None:
        raise ThreadTampered("the session continues a thread whose turns live in a store, and "
                             "this agent has none: give it the session's store")
    subject = start.get("subject") or {}
    kept = store.thread_turns(subject.get("tenant_id"), subject.get("user_id"), thread["id"],
                              through)
    check_kept(kept)
    if not kept or kept[-1].ended != through or kept[-1].link != link:
        raise ThreadTampered(f"the turns of thread {thread['id']!r} through place {through} "
                             "are missing or do not match the link the session's start "
                             "journaled; the session is not continued from another history")
    return [Turn.from_dict(t) for t in _shown(kept, _Journals(store))]


def ended_turns(store: Store, tenant_id: str | None, entries: Sequence[ThreadEntry]
                ) -> list[Turn]:
    """The ended turns among ``entries`` (one thread's), in the thread's order, writing nothing:
    those with a place in the history by their place, then those found ended without one (as
    ``thread_history`` would place them next)."""
    if not entries:
        return []
    journals = _Journals(store)
    user, thread_id = entries[0].user_id, entries[0].thread_id
    kept = _kept(store, tenant_id, user, thread_id,
                 ThreadTail(list(entries), store.thread_turns(tenant_id, user, thread_id), 0),
                 journals, fill=False)
    _anchored(kept, journals)
    extra = journals.turns([e for e in entries if e.ended is not None and e.ended
                            > (kept[-1].ended if kept else 0)])
    late = [e for e in entries if e.ended is None and journals.ended(e)]
    return [*map(Turn.from_dict, _shown(kept, journals)), *extra,
            *journals.turns([], sorted(late, key=lambda e: e.position))]


def end_turn(store: Store, tenant_id: str | None, user_id: str | None, thread_id: str,
             session_id: str, events: Sequence[Event], tainted: bool) -> None:
    """Give an ended session's turn its place in the thread's history, and keep it there, once
    its end is journaled (``events``: its journal as sealed). The session has ended whatever
    happens here: if the store cannot record the place now, the next session of the thread that
    finds the turn ended gives it one."""
    turns = None
    if events and events[0].type == EventType.SESSION_START and \
            events[-1].type == EventType.SESSION_END:
        start = events[0].data
        turn = Turn(session_id, int((start.get("thread") or {}).get("position") or 0),
                    start["task"], events[-1].data["answer"], tainted)  # (as just written)
        turns = {session_id: turn_text(turn)}
    with contextlib.suppress(StoreError):  # placed later by thread_history, as documented
        store.end_turns(tenant_id, user_id, thread_id, [session_id], turns)


def _kept(store: Store, tenant_id: str | None, user_id: str | None, thread_id: str,
          tail: ThreadTail, journals: _Journals, fill: bool) -> list[ThreadTurn]:
    """The kept turns of the thread (``tail``: all of it, read from place 0), their digests
    and links checked; with ``fill``, the turns placed without being kept (by a tether before
    turns were kept) are kept first, read as that tether read them."""
    kept = tail.turns
    last = kept[-1].ended if kept else 0
    placed = sorted((e for e in tail.entries if e.ended is not None), key=lambda e: e.ended or 0)
    missing = [e for e in placed if (e.ended or 0) > last]
    if missing and fill:
        found = {t.session_id: t for t in journals.turns(missing if kept else placed)}
        store.fill_turns(tenant_id, user_id, thread_id,
                         [(e.ended or 0, e.session_id, turn_text(found[e.session_id]))
                          for e in missing if e.session_id in found])
        kept = store.thread_turns(tenant_id, user_id, thread_id)
    check_kept(kept)
    return kept


def check_kept(kept: Sequence[ThreadTurn], link: str = GENESIS) -> None:
    """Every kept turn's text matches its digest, and every link chains it onto the one
    before, the first onto ``link`` (ThreadTampered naming the first that does not)."""
    for row in kept:
        link = turn_link(link, row.digest)
        if row.link != link or (row.turn is not None and turn_digest(row.turn) != row.digest):
            raise ThreadTampered(f"the thread's turn at place {row.ended} (session "
                                 f"{row.session_id}) was edited in the store; the thread is "
                                 "not continued from it. Run `tether audit verify --session "
                                 f"{row.session_id}`")


def _anchored(kept: Sequence[ThreadTurn], journals: _Journals) -> None:
    """The kept turns agree with the journals: the latest turn whose session still stands
    must hold the same turn in its own (verified) journal, and its start must name the same
    link at its place as the kept chain; the turns placed after that place are each checked
    against their own journals (for a thread whose sessions do not overlap: the latest)."""
    for i in range(len(kept) - 1, -1, -1):
        start = journals.start_of(kept[i].session_id)
        if start is None:  # pruned or erased: not a turn any more, and its text went with it
            if kept[i].turn is not None:
                _mismatch(kept[i])
            continue
        thread = start.get("thread") or {}
        if "history" in thread:  # written before turns were kept: it carries what it saw
            held = {t["session"]: t for t in thread["history"] or ()
                    if thread.get("order") == HISTORY_ORDER}  # (before it: another history)
            after = [r for r in kept[:i] if r.session_id not in held]
            for row in kept[:i]:
                if row.session_id in held and row.turn is not None and \
                        turn_digest(turn_text(Turn.from_dict(held[row.session_id]))) != \
                        row.digest:
                    _mismatch(row)
        else:
            through = int(thread.get("through") or 0)
            j = bisect.bisect_right(kept, through, hi=i, key=_place)  # (kept: by place)
            if through and (not j or kept[j - 1].ended != through
                            or kept[j - 1].link != thread.get("link")):
                _mismatch(kept[i])
            after = list(kept[j:i])
        for row in [*after, kept[i]]:
            journals.matches(row)
        return


def _place(row: ThreadTurn) -> int:
    return row.ended


def _mismatch(row: ThreadTurn) -> None:
    raise ThreadTampered(f"the thread's kept turns do not match the history session "
                         f"{row.session_id} journaled; the thread is not continued from an "
                         f"edited store. Run `tether audit verify --session {row.session_id}`")


def _shown(kept: Sequence[ThreadTurn], journals: _Journals) -> list[dict[str, Any]]:
    """The turns of ``kept`` that are still turns (``Turn.to_dict``): each from its kept text
    (all decoded in one go), or, when that was removed, from its own journal if it still stands
    (an erasure of passages rewrote it)."""
    texts = [row.turn for row in kept if row.turn is not None]
    objects = json.loads(f"[{','.join(texts)}]") if texts else []
    if len(objects) != len(texts):  # (each text is one object: digests checked before)
        raise ThreadTampered("the thread's kept turns do not read as one turn each")
    decoded = iter(objects)
    shown = []
    for row in kept:
        if row.turn is not None:
            turn = next(decoded)
            if turn["session"] != row.session_id:
                _mismatch(row)
        else:
            found = journals.turn(ThreadEntry("", 0, row.session_id, None, 0.0, row.ended))
            if found is None:
                continue
            turn = found.to_dict()
        shown.append(turn)
    return shown


class _Journals:
    """The journals of one thread's sessions, each read (and verified) at most once: a journal
    that has ended does not change; one still running is read again when asked again."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._ended: dict[str, Sequence[Event]] = {}
        self._turns: dict[str, Turn | None] = {}

    def ended(self, entry: ThreadEntry) -> bool:
        return self._read(entry.session_id) is not None

    def _read(self, session_id: str) -> Sequence[Event] | None:
        events = self._ended.get(session_id)
        if events is None:
            events = self._store.read(session_id)
            if not any(e.type == EventType.SESSION_END for e in events):
                return None
            self._ended[session_id] = events
        return events

    def turn(self, entry: ThreadEntry) -> Turn | None:
        if entry.session_id not in self._turns:
            events = self._read(entry.session_id)
            self._turns[entry.session_id] = None if events is None else turn_of(
                entry.session_id, entry.position, events, self._store.read)
        return self._turns[entry.session_id]

    def start_of(self, session_id: str) -> Mapping[str, Any] | None:
        """The start of an ended session that still stands (verified), or None."""
        if self.turn(ThreadEntry("", 0, session_id, None, 0.0)) is None:
            return None
        return self._ended[session_id][0].data

    def matches(self, row: ThreadTurn) -> None:
        """A kept turn is the one its session's journal holds (or that journal was rewritten
        by an erasure, which removed the kept text too)."""
        turn = self.turn(ThreadEntry("", 0, row.session_id, None, 0.0))
        if turn is None and row.turn is not None:  # a kept turn no journal stands behind
            _mismatch(row)
        if turn is None or row.turn is None:
            return
        if turn_digest(turn_text(Turn(turn.session_id, Turn.from_dict(json.loads(row.turn))
                                      .position, turn.user, turn.assistant, turn.tainted))) \
                != row.digest and not any(map(erasure_of, self._ended[row.session_id])):
            _mismatch(row)

    def turns(self, placed: Sequence[ThreadEntry],
              late: Sequence[ThreadEntry] = ()) -> list[Turn]:
        """The turns of ``placed`` in the order of their places, then of ``late`` (ended, not
        placed yet) by position, read from their journals — for turns placed before turns were
        kept, the latest one's start holds the turns it was shown (verified with its journal):
        so only the turns placed since it started are read one by one."""
        placed = sorted(placed, key=lambda e: e.ended or 0)
        on_thread = {e.session_id for e in placed}
        shown: list[Turn] = []
        for entry in reversed(placed):  # the latest one that was not erased
            if self.turn(entry) is not None:
                start = self._ended[entry.session_id][0].data.get("thread") or {}
                if start.get("order") == HISTORY_ORDER:  # (a tether before it showed others)
                    shown = [t for t in map(Turn.from_dict, start.get("history") or ())
                             if t.session_id in on_thread]
                break
        seen = {t.session_id for t in shown}
        rest = [e for e in placed if e.session_id not in seen]
        return shown + [t for t in map(self.turn, [*rest, *late]) if t is not None]
