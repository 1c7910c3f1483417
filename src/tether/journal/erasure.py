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

Copies: a session that quoted the erased content (another user's, which recalled it) keeps its
own content, and each of the erased *passages* is replaced by ``[erased]`` wherever it stands
in its events, which keep their type and gain ``"erased": {"erasure": <id>}``; the record lists
them under ``copies`` with the same (seq, hash, seal), and they verify the same way. Which
sessions quote what is decided above (``tether.knowledge.forgetting``); the copies are
rewritten before the sessions they quote, so an erasure cut short still finds the passages.
After the rewrite the store's files are purged (``Store.purge_erased``) and what they may still
hold is returned with the result, said in sentences.

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

import json
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import RunError
from tether.journal.chain import Journal, canonical_text, seal, verify_chain
from tether.journal.redaction import MIN_SUBSTRING_CHARS, Scrubber, scrub
from tether.store.anchor_chain import ERASED_TYPE, ERASURE_TYPE
from tether.store.base import Lease, Store, lease_holder
from tether.types import Event
from tether.vocabulary import EventType

PREFIX = "erasure-"
LEASE_SECONDS = 60.0  # the erasure's hold on each session it erases
ERASED_NOTE = "[erased]"  # what stands for an erased passage, or an erased call's reason
COPY_KEY = "erased"  # in an event whose passages were erased: {"erasure": <the record's id>}
_COPY = re.compile(r'"erased"\s*:\s*\{')


class ErasureRefused(RunError, RuntimeError):
    """Nothing was erased: a session is running, or does not verify."""


@dataclass(frozen=True, slots=True)
class Erasure:
    """What an erasure did: its record's id, the sessions it erased and how many events; the
    other sessions whose copies of their passages it erased, and how many events; and what the
    store's files may still hold (``Store.purge_erased``), each said in a sentence."""

    erasure_id: str | None  # None: there was nothing left to erase
    sessions: tuple[str, ...]
    events: int
    copies: tuple[str, ...] = ()
    copied_events: int = 0
    left: tuple[str, ...] = ()


def is_erased(event: Event) -> bool:
    return event.type == ERASED_TYPE


def marker(erasure_id: str, event: Event) -> dict[str, Any]:
    """The data an erased event keeps: nothing of its content (of a start, not the user's id
    or roles: only the tenant and agent that scoping and listings read)."""
    data: dict[str, Any] = {"erasure": erasure_id, "type": event.type}
    if event.type == EventType.SESSION_START:
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
                   reason: str, passages: Collection[str] = (),
                   copies: Iterable[str] = ()) -> Erasure:
    """Erase the content of every event of ``session_ids`` (those not erased already), and each
    of ``passages`` (texts of theirs) wherever it stands in the events and approval requests of
    ``copies`` (other sessions that quoted them), after journaling the erasure record; then let
    the store's files keep no earlier version. ErasureRefused, with nothing erased, when one of
    them is running or does not verify. Running it again after a crash finishes the job: the
    copies are rewritten before the sessions they quote, so the passages are still there."""
    ids = list(dict.fromkeys(session_ids))
    quoting = [sid for sid in dict.fromkeys(copies) if sid not in ids]
    holder = lease_holder()
    leases: dict[str, Lease] = {}
    try:
        for sid in [*ids, *quoting]:
            try:
                leases[sid] = store.acquire(sid, holder, LEASE_SECONDS)
            except LookupError:
                continue  # pruned meanwhile: nothing of it left to erase
            except Exception as exc:
                raise ErasureRefused(f"nothing was erased: {exc}") from exc
        stored = {sid: _verified(store, sid) for sid in leases}
        erasure_id = PREFIX + os.urandom(12).hex()
        blank = passage_scrubber(passages)
        rewrites = _rewrites(erasure_id, {sid: stored.get(sid, []) for sid in quoting}, blank)
        copied = tuple(rewrites)
        rewrites |= _rewrites(erasure_id, {sid: stored.get(sid, []) for sid in ids}, None)
        if not rewrites:  # erased already: what an earlier run could not purge goes now
            return Erasure(None, (), 0, left=store.purge_erased() if stored else ())
        listing = {sid: [[e.seq, e.hash, sealed(e, kind, data)] for e, kind, data in rewritten]
                   for sid, rewritten in rewrites.items()}
        record = Journal(erasure_id, store=store)
        record.append(ERASURE_TYPE, {
            "subject": {"tenant_id": subject.get("tenant_id"),
                        "user_id": subject.get("user_id")},
            "reason": reason,
            "sessions": {sid: items for sid, items in listing.items() if sid not in copied},
            "copies": {sid: listing[sid] for sid in copied}})
        record.flush(last=True)  # durable before any content goes
        for sid, rewritten in rewrites.items():  # the copies first: see the docstring
            whole = sid not in copied
            store.erase(sid, [(e.seq, kind, canonical_text(data)) for e, kind, data in rewritten],
                        drop_private=whole)
            for approval in store.list_approvals(session_id=sid):  # they quote the call
                _forget_call(store, approval, None if whole else blank)
        erased = [sid for sid in rewrites if sid not in copied]
        return Erasure(erasure_id, tuple(erased), sum(len(rewrites[s]) for s in erased),
                       copied, sum(len(rewrites[s]) for s in copied), store.purge_erased())
    finally:
        for sid, lease in leases.items():
            store.release(sid, lease)


Rewrite = tuple[Event, str, dict[str, Any]]  # an event, its type and data after the erasure


def _rewrites(erasure_id: str, sessions: Mapping[str, Sequence[Event]],
              blank: Scrubber | None) -> dict[str, list[Rewrite]]:
    """What the erasure writes over the events of ``sessions`` not erased yet: each one's
    marker (``blank`` None: the session is erased whole), or its data with the passages
    blanked (only the events that quote one); sessions with nothing to write left out."""
    found: dict[str, list[Rewrite]] = {}
    for sid, events in sessions.items():
        kept = [e for e in events if not is_erased(e)]
        if blank is None:
            changed: list[Rewrite] = [(e, ERASED_TYPE, marker(erasure_id, e)) for e in kept]
        else:
            changed = [(e, e.type, data) for e in kept
                       for data in [_without(e, blank, erasure_id)] if data is not None]
        if changed:
            found[sid] = changed
    return found


def _verified(store: Store, session_id: str) -> list[Event]:
    events = store.read(session_id)
    broken = verify_chain(events, vouched(events, store.read))
    if broken is not None:
        raise ErasureRefused(
            f"nothing was erased: session {session_id} does not verify (at event {broken}), "
            "and erasing it would hide that; run `tether audit verify --session "
            f"{session_id}` and settle it first")
    return events


def passage_scrubber(passages: Collection[str]) -> Scrubber:
    """Blank each passage as it may stand in an event: as written, JSON-escaped (as a tool
    result that is JSON text holds it) and escaped twice (JSON text inside JSON text), with and
    without non-ASCII escapes. A passage shorter than ``MIN_SUBSTRING_CHARS`` is blanked only
    where it stands as a whole token (as a hidden value is, ``tether.journal.redaction``)."""
    forms: set[str] = set()
    for text in passages:
        level = {text}
        for _ in range(3):
            forms |= level
            level = {json.dumps(t, ensure_ascii=a)[1:-1] for t in level for a in (False, True)}
    words = [(re.escape(f) if len(f) >= MIN_SUBSTRING_CHARS else rf"(?<!\w){re.escape(f)}(?!\w)")
             for f in sorted((f for f in forms if f.strip()), key=len, reverse=True)]
    if not words:
        return lambda text: text
    pattern = re.compile("|".join(words))
    return lambda text: pattern.sub(ERASED_NOTE, text)


def _without(event: Event, blank: Scrubber, erasure_id: str) -> dict[str, Any] | None:
    """An event's data with every passage blanked and the erasure named (``COPY_KEY``), or
    None when it quotes none."""
    data = scrub(event.data, [blank])
    if data == event.data:
        return None
    return {**data, COPY_KEY: {"erasure": erasure_id}}


def _forget_call(store: Store, approval: Mapping[str, Any], blank: Scrubber | None) -> None:
    """Empty an approval request's quote of its call (``blank``: only the passages in it),
    whatever its status becomes meanwhile (an approver deciding while the erasure runs): its
    decision stays, anchored."""
    current: Mapping[str, Any] | None = approval
    while current is not None:
        changes = {"arguments": {}, "reason": ERASED_NOTE} if blank is None else {
            key: scrub(current.get(key), [blank]) for key in ("arguments", "reason")}
        if store.update_approval(current["id"], current["status"], changes):
            return
        current = store.get_approval(current["id"])


def erasure_of(event: Event) -> str | None:
    """The id of the erasure that rewrote ``event`` (erased whole, or its passages), if it says
    one did. Read from the text first: most events quote nothing, and decoding each would
    slow every verify."""
    if is_erased(event):
        found = event.data.get("erasure")
    else:
        text = event.json_text
        if text and ('"erased"' not in text or not _COPY.search(text)):
            return None
        marked = event.data.get(COPY_KEY)
        found = marked.get("erasure") if isinstance(marked, dict) else None
    return found if isinstance(found, str) and found.startswith(PREFIX) else None


def vouched(events: Sequence[Event],
            read: Callable[[str], Sequence[Event]]) -> frozenset[int]:
    """Seqs of the rewritten events of one session (erased, or their passages erased) that an
    erasure record vouches for: a record whose own chain verifies lists (session, seq, hash,
    seal) exactly as the event stands — the seal covering its type, timestamp and data
    (``sealed``)."""
    listed: dict[str, Collection[tuple[int, str, str]]] = {}
    found = set()
    for e in events:
        record_id = erasure_of(e)
        if record_id is None:
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
    items = set()
    for event in record:
        if event.type == ERASURE_TYPE:
            for kind in ("sessions", "copies"):
                for item in (event.data.get(kind) or {}).get(session_id, ()):
                    if isinstance(item, list) and len(item) == 3:
                        items.add((item[0], item[1], item[2]))
    return frozenset(items)


def describe(event: Event) -> str:
    """An erased event, for a reader: what it was, and which erasure removed it."""
    return f"{event.data.get('type', '?')} (content erased by {event.data.get('erasure')})"

