"""Tamper diagnosis: not just *that* a journal's hash chain breaks, but where and how.

Why: ``verify_chain`` answers yes or no with the first broken seq, which is all the runtime needs
to refuse a resume. An auditor needs more: which session, which seq, and what probably happened
— an event edited in place, one deleted, two swapped, one slipped in. This module decides that
from the stored events alone (and, for a store, the count its session index recorded).

Decision: detection stays ``verify_chain``'s job — this module only *explains* a break it found,
so the two can never disagree about whether a journal is intact. The explanation is a best guess
from the links around the break: an event whose content no longer matches its hash was edited
(and if the next event still links to the recomputed hash, only the stored hash field was);
an event that the following one links *over* was inserted; an event whose ``prev_hash`` names
another stored event was moved; one whose ``prev_hash`` names no stored event follows a gap.
A chain that is intact but shorter or longer than the index recorded lost or gained its tail.
What the chain cannot catch — someone who rewrites every later hash *and* the index — needs an
anchor kept elsewhere: ``tether audit verify`` prints each session's head hash for that.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from tether.journal.chain import GENESIS, hash_holds, seal, verify_chain
from tether.journal.erasure import erasure_of
from tether.store.anchor_chain import ERASED_TYPE
from tether.types import Event

Kind = Literal["edited", "missing", "reordered", "inserted", "unverifiable", "cut"]


@dataclass(frozen=True, slots=True)
class Break:
    """The first broken link of one session's chain."""

    session_id: str
    seq: int  # where the chain stops holding (for an inserted event: the intruder)
    kind: Kind
    detail: str

    def __str__(self) -> str:
        return f"session {self.session_id}: seq {self.seq}: {self.kind}: {self.detail}"


def diagnose(session_id: str, events: Sequence[Event], *, recorded: int | None = None,
             unverifiable: Collection[int] = frozenset(),
             erased: Collection[int] = frozenset()) -> Break | None:
    """The first broken link of ``events`` (one session, in stored order), or None if the chain
    holds. ``recorded`` is how many events the store's index says the session has, when known;
    without it a cut-off tail cannot be told from a session that simply ended there.
    ``unverifiable`` (``Store.unverifiable``) names events whose content cannot be re-hashed:
    their links are checked, and if the chain holds otherwise the answer is an "unverifiable"
    Break listing them — never a clean bill, and never mistaken for tampering. ``erased``
    (``tether.journal.erasure.vouched``) names erased events an erasure record vouches for:
    their links are checked, and they are no finding."""
    if not events:
        if recorded:
            return Break(session_id, 1, "missing", f"the index records {recorded} events but "
                         "none are stored; they were deleted")
        return None
    broken = verify_chain(events, {*unverifiable, *erased} if erased else unverifiable)
    if broken is not None:
        return _explain(session_id, events, broken - 1, recorded)
    count = len(events)
    if recorded is not None and recorded > count:
        return Break(session_id, count + 1, "missing",
                     f"the index records {recorded} events but the chain ends at seq {count}; "
                     f"the last {recorded - count} were deleted")
    if recorded is not None and recorded < count:
        return Break(session_id, recorded + 1, "inserted",
                     f"the index records {recorded} events but {count} are stored; events "
                     f"after seq {recorded} were added outside tether")
    if unverifiable:
        return _unverified(session_id, events, unverifiable)
    return None


def _unverified(session_id: str, events: Sequence[Event],
                unverifiable: Collection[int]) -> Break | None:
    prev, seqs = GENESIS, []
    for e in events:
        if e.seq in unverifiable and not hash_holds(prev, e):
            seqs.append(e.seq)
        prev = e.hash
    if not seqs:
        return None
    shown = ", ".join(map(str, seqs[:10])) + (" ..." if len(seqs) > 10 else "")
    return Break(session_id, seqs[0], "unverifiable",
                 f"{len(seqs)} event(s) (seq {shown}) were stored as JSONB by a tether before "
                 "PostgreSQL schema 3, which rewrote some of their numbers, so their hashes "
                 "cannot be recomputed; every link around them holds. This is not evidence of "
                 "tampering, nor proof of its absence")


def _rehash(prev: str, event: Event) -> str:
    """The hash ``event`` should carry if it followed a link with hash ``prev``."""
    record = (event.seq, event.type, event.timestamp, event.data)
    return seal(prev, event.session_id, record).hash


def _explain(session_id: str, events: Sequence[Event], i: int, recorded: int | None) -> Break:
    e = events[i]
    at = i + 1  # the seq this position should hold
    prev = events[i - 1].hash if i else GENESIS
    nxt = events[i + 1] if i + 1 < len(events) else None
    seqs = [x.seq for x in events]

    def found(kind: Kind, detail: str, seq: int = at) -> Break:
        return Break(session_id, seq, kind, detail)

    if recorded is not None and at > recorded and e.seq >= at:
        return found("inserted", f"seq {at} is beyond the {recorded} events the index records; "
                     "it was added outside tether")
    if e.seq != at:
        if e.seq < at:
            if e.seq in seqs[:i]:
                return found("inserted", f"a second event claims seq {e.seq}")
            return found("reordered", f"seq {e.seq} is stored after seq {seqs[i - 1]}")
        if at in seqs[i + 1:]:
            return found("reordered", f"seq {e.seq} is stored before seq {at}")
        gap = f"seq {at}" if e.seq == at + 1 else f"seqs {at}-{e.seq - 1}"
        return found("missing", f"{gap} not stored; the chain jumps to seq {e.seq}")
    if e.prev_hash == prev and e.type == ERASED_TYPE:
        return found("edited", f"it is marked erased (by {e.data.get('erasure')!r}) but no "
                     "erasure record that verifies lists it with this hash and this marker: "
                     "its content was removed outside tether's erasure, or its marker (former "
                     "type, tenant, agent, timestamp) was changed since")
    if e.prev_hash == prev and erasure_of(e) is not None:
        return found("edited", f"the {e.type!r} event's passages quoting an erased user were "
                     f"erased (by {erasure_of(e)!r}), and no erasure record that verifies lists "
                     "it as it stands now: it was edited since")
    if e.prev_hash == prev:
        if nxt is not None and nxt.prev_hash == prev:
            return found("inserted", f"the next event links straight to seq {at - 1}, so "
                         f"this {e.type!r} event was slipped into the chain")
        if nxt is not None and nxt.prev_hash == _rehash(prev, e):
            return found("edited", f"its stored hash was changed (the {e.type!r} event's "
                         "content still matches the next link)")
        if nxt is None:
            return found("edited", f"the last event's ({e.type!r}) content or stored hash was "
                         "changed")
        return found("edited", f"the {e.type!r} event's content (type, timestamp or data) no "
                     "longer matches its hash")
    if e.hash == _rehash(prev, e):
        return found("edited", "its prev_hash field was changed")
    position = _index_of(e.prev_hash, events)
    if position is not None and position == i - 2:
        return found("inserted", f"the event stored at seq {at} links over it to seq "
                     f"{at - 2}, so this {events[i - 1].type!r} event was slipped in", at - 1)
    if position is not None:
        return found("reordered", f"this {e.type!r} event links after the event now stored at "
                     f"seq {position + 1}, not after seq {at - 1}")
    if nxt is not None and nxt.prev_hash == prev:
        return found("inserted", f"the next event links straight to seq {at - 1}, so this "
                     f"{e.type!r} event was slipped into the chain")
    return found("missing", f"this {e.type!r} event links to an event that is not stored; "
                 f"at least one event before it was deleted")


def _index_of(digest: str, events: Iterable[Event]) -> int | None:
    for index, event in enumerate(events):
        if event.hash == digest:
            return index
    return None
