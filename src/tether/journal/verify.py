"""Checking a hash chain: whether each event links to the one before and hashes to its hash.

Why apart from the journal object (``journal.chain``): verification reads stored events only —
an audit, a resumed session's check, a durable status — and must not need the journal that
wrote them, nor its redactions or store.

Decision: the first broken link is reported by its seq; an event a store marks unverifiable
(``Store.unverifiable``: kept in a form whose hash cannot be recomputed exactly) has only its
link checked, which the caller must say. An event read with its stored text is checked on that
text, without decoding it; only when that fails is the data re-encoded canonically.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tether.journal.canonical import canonical_text
from tether.journal.hashing import GENESIS, event_hash
from tether.types import Event


def verify_chain(events: Sequence[Event],
                 unverifiable: Collection[int] = frozenset()) -> int | None:
    """Return the seq of the first event whose link is broken, or None if the chain holds.
    Events whose seq is in ``unverifiable`` (``Store.unverifiable``) have only their links
    checked: their content cannot be re-hashed, which the caller must report."""
    prev = GENESIS
    for expected_seq, e in enumerate(events, start=1):
        if e.seq != expected_seq or e.prev_hash != prev or not (
                hash_holds(prev, e) or e.seq in unverifiable):
            return e.seq if e.seq == expected_seq else expected_seq
        prev = e.hash
    return None


def hash_holds(prev_hash: str, e: Event) -> bool:
    """Whether ``e.hash`` is the hash of this event. An event read with its JSON text (which a
    store wrote as sealed: canonical) is checked on that text, without decoding it; only when
    that does not match is the data decoded and encoded canonically, exactly as it always was —
    so text that differs from the canonical form only in layout still verifies, and an edit of
    the data never does."""
    text = e.json_text
    if text and e.hash == event_hash(prev_hash, e.seq, e.type, e.session_id, e.timestamp, text):
        return True
    try:
        text = canonical_text(e.data)
    except ValueError:  # stored text that is not JSON at all, or not JSON tether writes: edited
        return False
    return e.hash == event_hash(prev_hash, e.seq, e.type, e.session_id, e.timestamp, text)
