"""A thread's turns, each kept once, chained by digest: what a store keeps of a thread's history.

Why: a session that continues a thread is shown every turn that ended before it started, and
its replay, rerun, resumption and audit must see exactly that history. Journaling the history
in each start (as tether did up to schema 12) stores a thread of N turns as about N²/2 turns of
text. So each turn is kept once, when it takes its place in the history (``Store.end_turns``),
and a session's start names the history it was shown by reference: the last place in it and
that place's *link* (``tether.runtime.lifecycle.thread``).

Decision: a turn's link is the SHA-256 of the link of the turn kept before it and the turn's
own digest (the SHA-256 of its canonical JSON), computed by the store inside the transaction
that gives the place, so links follow places whatever sessions end at once. A history is
checked by recomputing every digest and link from the text up to the place a start names and
comparing the last with the link the start journaled (inside that session's verified chain):
an edited, reordered, inserted or deleted turn changes it. A turn whose text was removed (its
session pruned, or erased) keeps its digest and link, so the chain still holds; it is shown
only from its own journal, verified, or not at all.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

GENESIS = ""  # the link before a thread's first kept turn


class ThreadTurn(NamedTuple):
    """One turn of a thread's history as a store keeps it: its place in the history
    (``ended``), its session, the digest of its text, the link chaining it onto the turns kept
    before it, and its text (``Turn.to_dict`` as canonical JSON); ``turn`` is None once the
    text was removed (its session pruned or erased). A named tuple, not a dataclass: a session
    joining a thread reads one per turn, and a tuple is built in C."""

    ended: int
    session_id: str
    digest: str
    link: str
    turn: str | None


def turn_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def turn_link(previous: str, digest: str) -> str:
    return hashlib.sha256(f"{previous}{digest}".encode()).hexdigest()
