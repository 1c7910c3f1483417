"""Erasure: a person's content removed from the journals, while every chain still verifies.

Why: a user may ask to be forgotten, and the journal is append-only and hash-chained — an edit
of any event breaks its chain, and that is the point of it. The two can coexist because an
event's hash is kept *apart* from its content: the store holds the content (the data) beside
the hash and the link, and a chain is checked link by link. Erasing replaces the content of
an event with a marker and keeps its hash and link, so every later link still holds; what can
no longer be recomputed from the content is vouched for by an *erasure record*.

Decision: the erasure record is a journal of its own (id ``erasure-<hex>``, one
``erasure.recorded`` event, anchored in the store-wide anchor chain like a session's start and
signed with the audit key when there is one), written *before* any content is erased. It names
whose content was erased, why, and each erased event as (session, seq, hash, seal): the seal
chains what the event holds after the erasure (its type, timestamp and marker) onto the hash it
keeps. An erased event verifies only when a record that itself verifies lists it with exactly
that hash and that seal; so ``tether audit verify`` passes after an erasure and still fails
after any other edit: content changed (hash mismatch), an event marked erased that no record
lists, a marker edited (its former type, its start's tenant or agent, its timestamp: the seal
no longer matches), a record edited (its chain breaks), forged (not anchored; with an audit
key, not signed) or deleted (the erased events are then vouched for by nothing).

The approval requests of an erased session lose the call's arguments and the reason, whatever
their status becomes while the erasure runs (their anchored decision stays). An erased event's
type becomes ``content.erased`` (every view ignores a type it does not know); its marker keeps
only what is not content: the erasure's id, the event's type, and for a session's start the
tenant and agent (not the user's id or roles), so tenant scoping and listings still work. A
session being run cannot be erased (its lease is taken for the erasure), and one whose chain
does not verify is refused: erasing it would hide the evidence. What lives outside the store
(exported files, spans and SIEM events already sent) is not reached; the hashes kept could
confirm a guess of an entire erased event, never reveal it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.journal.chain import Journal, canonical_text, seal, verify_chain
from tether.store.base import ERASED_TYPE, ERASURE_TYPE, Lease, Store, lease_holder
from tether.types import Event

PREFIX = "erasure-"
LEASE_SECONDS = 60.0  # the erasure's hold on each session it erases
ERASED_NOTE = "[erased]"  # what an approval request of an erased session says of its call


class ErasureRefused(RuntimeError):
    """Nothing was erased: a session is running, or does not verify."""


@dataclass(frozen=True, slots=True)
class Erasure:
    """What an erasure did: its record's id, the sessions it erased and how many events."""

    erasure_id: str | None  # None: there was nothing left to erase
    sessions: tuple[str, ...]
    events: int


def is_erased(event: Event) -> bool:
    return event.type == ERASED_TYPE


def marker(erasure_id: str, event: Event) -> dict[str, Any]:
    """The data an erased event keeps: nothing of its content (of a start, not the user's id
    or roles: only the tenant and agent that scoping and listings read)."""
    data: dict[str, Any] = {"erasure": erasure_id, "type": event.type}
    if event.type == "session.start":
        data["subject"] = {"tenant_id": (event.data.get("subject") or {}).get("tenant_id")}
        data["agent"] = event.data.get("agent")
    return data


def sealed(event: Event, type: str, data: Mapping[str, Any]) -> str:
    """What an erasure record lists of an event it rewrites: the seal of what the event will
    hold (its type, timestamp and data) chained onto the hash it keeps — so an edit of any field
    a verify or a store reads of a rewritten event (its former type, its start's tenant, its
    timestamp) no longer matches the record."""
    return seal(event.hash, event.session_id, (event.seq, type, event.timestamp, data)).hash


def _seal_of(event: Event) -> str | None:
    """The seal of a rewritten event as stored (None: its data is not JSON tether wrote)."""
    try:
        return sealed(event, event.type, event.data)
    except ValueError:
        return None


def erase_sessions(store: Store, session_ids: Iterable[str], *, subject: Mapping[str, Any],
                   reason: str) -> Erasure:
    """Erase the content of every event of ``session_ids`` (those not erased already), after
    journaling the erasure record; ErasureRefused, with nothing erased, when one of them is
    running or does not verify. Running it again after a crash finishes the job."""
    ids = list(dict.fromkeys(session_ids))
    holder = lease_holder()
    leases: dict[str, Lease] = {}
    try:
        for sid in ids:
            try:
                leases[sid] = store.acquire(sid, holder, LEASE_SECONDS)
            except LookupError:
                continue  # pruned meanwhile: nothing of it left to erase
            except Exception as exc:
                raise ErasureRefused(f"nothing was erased: {exc}") from exc
        doomed: dict[str, list[Event]] = {}
        for sid in leases:
            events = store.read(sid)
            broken = verify_chain(events, vouched(events, store.read))
            if broken is not None:
                raise ErasureRefused(
                    f"nothing was erased: session {sid} does not verify (at event {broken}), "
                    "and erasing it would hide that; run `tether audit verify --session "
                    f"{sid}` and settle it first")
            kept = [e for e in events if not is_erased(e)]
            if kept:
                doomed[sid] = kept
        if not doomed:
            return Erasure(None, (), 0)
        erasure_id = PREFIX + os.urandom(12).hex()
        markers = {sid: [(e, marker(erasure_id, e)) for e in events]
                   for sid, events in doomed.items()}
        record = Journal(erasure_id, store=store)
        record.append(ERASURE_TYPE, {
            "subject": {"tenant_id": subject.get("tenant_id"),
                        "user_id": subject.get("user_id")},
            "reason": reason,
            "sessions": {sid: [[e.seq, e.hash, sealed(e, ERASED_TYPE, m)]
                               for e, m in rewritten]
                         for sid, rewritten in markers.items()}})
        record.flush(last=True)  # durable before any content goes
        for sid, rewritten in markers.items():
            store.erase(sid, [(e.seq, canonical_text(m)) for e, m in rewritten])
            for approval in store.list_approvals(session_id=sid):  # they quote the call
                _forget_call(store, approval)
        return Erasure(erasure_id, tuple(doomed), sum(map(len, doomed.values())))
    finally:
        for sid, lease in leases.items():
            store.release(sid, lease)


def _forget_call(store: Store, approval: Mapping[str, Any]) -> None:
    """Empty an approval request's quote of its call, whatever its status becomes meanwhile (an
    approver deciding while the erasure runs): its decision stays, anchored."""
    current: Mapping[str, Any] | None = approval
    while current is not None and not store.update_approval(
            current["id"], current["status"], {"arguments": {}, "reason": ERASED_NOTE}):
        current = store.get_approval(current["id"])


def vouched(events: Sequence[Event],
            read: Callable[[str], Sequence[Event]]) -> frozenset[int]:
    """Seqs of the erased events of one session that an erasure record vouches for: a record
    whose own chain verifies lists (session, seq, hash, seal) exactly as the event stands —
    the seal covering its type, timestamp and marker (``sealed``)."""
    erased = [e for e in events if is_erased(e)]
    if not erased:
        return frozenset()
    listed: dict[str, Collection[tuple[int, str, str]]] = {}
    found = set()
    for e in erased:
        record_id = e.data.get("erasure")
        if not isinstance(record_id, str) or not record_id.startswith(PREFIX):
            continue
        if record_id not in listed:
            listed[record_id] = _listed(read(record_id), e.session_id)
        if (e.seq, e.hash, _seal_of(e)) in listed[record_id]:
            found.add(e.seq)
    return frozenset(found)


def _listed(record: Sequence[Event],
            session_id: str) -> frozenset[tuple[int, str, str]]:
    """What an erasure record lists of one session, if the record verifies (else nothing)."""
    if not record or verify_chain(record) is not None:
        return frozenset()
    pairs = set()
    for event in record:
        if event.type == ERASURE_TYPE:
            for item in (event.data.get("sessions") or {}).get(session_id, ()):
                if isinstance(item, list) and len(item) == 3:
                    pairs.add((item[0], item[1], item[2]))
    return frozenset(pairs)


def describe(event: Event) -> str:
    """An erased event, for a reader: what it was, and which erasure removed it."""
    return f"{event.data.get('type', '?')} (content erased by {event.data.get('erasure')})"

