"""The store-wide anchor chain's records and seals: what every store appends beside a session's
events, and what verify checks them against.

Why: a session's own hash chain cannot show that the whole session was deleted, or that its
tail was cut by someone who also fixed its index row, and the approvals table lives outside
every session's chain. So each store also keeps one chain of *anchors*, appended in the same
transaction as what they anchor. This module says what an anchor holds and how it is sealed,
once, for the three stores (``store.memory``, ``store.sqlite``, ``store.postgres_anchors``) and
for verify (``tether.journal.anchors``); signed checkpoints of the chain are
``tether.journal.checkpoint``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.types import Event
from tether.vocabulary import EventType

# With an audit key (TETHER_AUDIT_KEY, kept outside the database) each anchor is HMAC-signed, so
# rewriting the whole database still does not yield a history that verifies.
#
# One chain is one serial point: every transaction that anchors waits for the one before it to
# commit. So a store may keep several chains, *lanes*, fixed in number when it is created: a
# writer takes whichever lane no other writer holds (PostgreSQL: ``store.postgres_steps``) and
# appends there. Lane 0 starts from ANCHOR_GENESIS (a store with one lane is the single chain of
# before), lane k from ``lane_genesis(k)``, so a lane relabelled as another breaks at its first
# link. The first anchor of each transaction's lane batch may carry a *witness*: how many anchors
# every lane held when it was written. A lane whose tail is cut below what a later anchor of any
# lane saw is then detected, as a cut of the single chain's middle was.

ANCHOR_GENESIS = "0" * 64
# an erasure record (tether.journal.erasure) is anchored too: a forged one has no anchor
ERASURE_TYPE = EventType.ERASURE_RECORDED
HEAD_TYPES = frozenset({EventType.SESSION_START, EventType.SESSION_PAUSED, EventType.SESSION_END,
                        ERASURE_TYPE})
# the type an event takes when its content is erased (tether.journal.erasure): its hash and
# link stay, its data becomes {"erasure": <the erasure record's id>, "type": <its type>, ...}
ERASED_TYPE = EventType.CONTENT_ERASED
AUDIT_KEY_VARIABLE = "TETHER_AUDIT_KEY"


@dataclass(frozen=True, slots=True)
class Anchor:
    seq: int
    kind: str  # "head" or "approval"
    session_id: str
    body: str  # canonical JSON of what is anchored
    prev: str
    hash: str
    mac: str | None
    lane: int = 0


def lane_genesis(lane: int) -> str:
    """The ``prev`` of a lane's first anchor: ANCHOR_GENESIS for lane 0, derived from the lane
    number for every other, so no lane's chain verifies under another number."""
    if lane == 0:
        return ANCHOR_GENESIS
    return hashlib.sha256(f"{ANCHOR_GENESIS}/anchor-lane/{lane}".encode()).hexdigest()


def audit_key() -> bytes | None:
    """The audit key from ``TETHER_AUDIT_KEY`` (never stored in the database), if set."""
    value = os.environ.get(AUDIT_KEY_VARIABLE)
    return value.encode() if value else None


def seal_anchor(prev: str, body: Mapping[str, Any],
                key: bytes | None) -> tuple[str, str, str | None]:
    """The anchor's body text, hash (chained to ``prev``) and MAC (with an audit key)."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(f"{prev}{text}".encode()).hexdigest()
    mac = None if key is None else hmac.new(key, digest.encode(), "sha256").hexdigest()
    return text, digest, mac


def head_anchor(session_id: str, events: Sequence[Event]) -> dict[str, Any] | None:
    """What to anchor for a step's events: the session's head at its start, pause or end."""
    heads = [e for e in events if e.type in HEAD_TYPES]
    if not heads:
        return None
    last = events[-1] if heads[-1].type != EventType.SESSION_START else heads[-1]
    body = {"session_id": session_id, "seq": last.seq, "head": last.hash, "type": last.type}
    if last.type == EventType.SESSION_START:
        body["tenant"] = (last.data.get("subject") or {}).get("tenant_id")
    return body


def approval_anchor(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """What to anchor for an approval record's new state: its decision (approve or deny)."""
    if record.get("status") not in ("approved", "denied"):
        return None
    return {key: record.get(key) for key in ("id", "session_id", "call_hash", "status",
                                             "approver", "note", "decided_at",
                                             "approver_auth", "break_glass")}


def attempt_anchor(record: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any] | None:
    """What to anchor when ``changes`` add a refused attempt to decide an approval record
    (``tether.runtime.approvals.deciding``): the attempt, so an attack leaves a trace too."""
    attempts = changes.get("attempts")
    if not attempts:
        return None
    return {"id": record.get("id"), "session_id": record.get("session_id"),
            "attempt": attempts[-1]}
