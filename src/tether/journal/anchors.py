"""Checking a store against its anchor chain: what a session's own chain cannot show.

Why: a session's hash chain proves its events were not edited, moved or slipped in; it cannot
prove that a session still exists, that its tail was not cut by someone who also fixed its index
row, or that an approval in the approvals table was decided by the person it names. The store
keeps a second, store-wide chain of anchors for that (``tether.store.base``): each session's
head when it starts, pauses and ends, each approval decision, each prune.

Decision: this module only reads — anchors, events, approval records — and reports findings;
it never repairs. Each anchor lane (a store keeps one or more chains, ``tether.store.base``) is
checked link by link from its own genesis (and, with the audit key, each anchor's HMAC); an
anchor outside the store's lanes, or whose witness counts more anchors in a lane than the lane
holds (its tail was cut), is a break too. Then every anchored head (a session's highest, across
lanes) is checked against the stored session (deleted, cut, rewritten), every stored session for
an anchored start (written outside tether), and every decided approval against its anchored
decision (changed, or deleted, outside tether). Someone who can rewrite the whole database can
rewrite the anchors too; only the audit key, kept outside the database, stops them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.store.anchor_chain import Anchor, lane_genesis
from tether.types import Event


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # "anchor", "deleted", "cut", "rewritten", "unanchored", "approval", "unsigned"
    session_id: str
    detail: str

    def __str__(self) -> str:
        where = f"session {self.session_id}: " if self.session_id else ""
        return f"{where}{self.kind}: {self.detail}"


def check_anchors(anchors: Sequence[Anchor], sessions: Mapping[str, Sequence[Event]],
                  approvals: Iterable[Mapping[str, Any]], key: bytes | None,
                  lanes: int = 1) -> list[Finding]:
    """Everything about ``sessions`` (id -> stored events; a missing or empty entry: none
    stored) and ``approvals`` (records) that the store's ``lanes`` anchor lanes contradict;
    ``anchors`` in the order they were written."""
    findings = _lanes(anchors, key, lanes)
    heads: dict[str, dict[str, Any]] = {}
    decided: dict[str, dict[str, Any]] = {}
    for anchor in anchors:
        body = json.loads(anchor.body)
        if body.get("session_id") != anchor.session_id:
            findings.append(Finding("anchor", anchor.session_id, f"anchor {anchor.seq} is "
                                    f"filed under another session than the one it anchors"))
        if anchor.kind == "head":  # lanes interleave: a session's head is its highest
            if body.get("seq", 0) >= heads.get(anchor.session_id, {}).get("seq", 0):
                heads[anchor.session_id] = body
        elif anchor.kind == "prune":  # its events and approvals went with it
            heads.pop(anchor.session_id, None)
            decided = {aid: d for aid, d in decided.items()
                       if d.get("session_id") != anchor.session_id}
        elif anchor.kind == "approval":
            decided[body["id"]] = body
    for sid, head in heads.items():
        events = sessions.get(sid) or ()
        seq, what = head["seq"], f"its {head['type']} at seq {head['seq']}"
        if not events:
            findings.append(Finding("deleted", sid, f"the anchor chain records {what}, and no "
                                    "event of it is stored: the session was deleted"))
        elif len(events) < seq:
            findings.append(Finding("cut", sid, f"the anchor chain records {what}, and only "
                                    f"{len(events)} events are stored: its tail was cut"))
        elif events[seq - 1].hash != head["head"]:
            findings.append(Finding("rewritten", sid, f"the anchor chain records {what} with "
                                    "another hash: the chain up to it was rewritten"))
    for sid, events in sessions.items():
        if events and sid not in heads:
            findings.append(Finding("unanchored", sid, "no anchor records this session's start: "
                                    "it was written outside tether"))
    stored = set()
    for record in approvals:
        stored.add(record.get("id"))
        findings.extend(_approval(record, decided.get(record.get("id", ""))))
    for aid, anchored in decided.items():
        if aid not in stored:
            findings.append(Finding("approval", anchored.get("session_id", ""), (
                f"approval {aid} was {anchored.get('status')} by {anchored.get('approver')} "
                "(anchored), and is no longer stored: it was deleted outside tether")))
    return findings


def _lanes(anchors: Sequence[Anchor], key: bytes | None, lanes: int) -> list[Finding]:
    """Each lane's chain link by link from its genesis, signatures, and witnesses."""
    findings: list[Finding] = []
    by_lane: dict[int, list[Anchor]] = {}
    for anchor in anchors:
        if 0 <= anchor.lane < lanes:
            by_lane.setdefault(anchor.lane, []).append(anchor)
        else:
            findings.append(Finding("anchor", anchor.session_id, f"anchor {anchor.seq} is in "
                                    f"lane {anchor.lane}, and the store keeps lanes 0 to "
                                    f"{lanes - 1}: an anchor was moved or inserted"))
    for lane, chain in sorted(by_lane.items()):
        findings += _chain(chain, key, lane)
    held = [len(by_lane.get(lane, ())) for lane in range(lanes)]
    for anchor in anchors:
        seen = json.loads(anchor.body).get("witness")
        if seen is None:
            continue
        if not isinstance(seen, list) or len(seen) != lanes:
            findings.append(Finding("anchor", anchor.session_id, f"anchor {anchor.seq} saw "
                                    f"{len(seen) if isinstance(seen, list) else 'no'} lanes, "
                                    f"and the store keeps {lanes}: its lanes were changed"))
            continue
        for lane, (count, now) in enumerate(zip(seen, held, strict=True)):
            if not isinstance(count, int) or count > now:
                findings.append(Finding("anchor", anchor.session_id, f"anchor {anchor.seq} "
                                        f"saw {count} anchors in lane {lane}, which holds {now}:"
                                        " that lane's tail was cut"))
    return findings


def _chain(anchors: Sequence[Anchor], key: bytes | None, lane: int) -> list[Finding]:
    findings: list[Finding] = []
    prev = lane_genesis(lane)
    where = "" if lane == 0 else f" in lane {lane}"
    for anchor in anchors:
        digest = hashlib.sha256(f"{anchor.prev}{anchor.body}".encode()).hexdigest()
        if anchor.prev != prev or digest != anchor.hash:
            findings.append(Finding("anchor", anchor.session_id, f"the anchor chain{where} "
                                    f"breaks at anchor {anchor.seq}: an anchor was edited, "
                                    "removed, inserted or moved"))
        if key is not None:
            mac = hmac.new(key, anchor.hash.encode(), "sha256").hexdigest()
            if anchor.mac is None or not hmac.compare_digest(mac, anchor.mac):
                findings.append(Finding("unsigned", anchor.session_id, f"anchor {anchor.seq} "
                                        "is not signed by the audit key: the anchor chain was "
                                        "written without it, or rewritten"))
        prev = anchor.hash
    return findings


def _approval(record: Mapping[str, Any], anchored: Mapping[str, Any] | None) -> list[Finding]:
    status = record.get("status")
    if status not in ("approved", "denied", "used"):
        return []
    sid, aid = record.get("session_id", ""), record.get("id")
    if anchored is None:
        return [Finding("approval", sid, f"approval {aid} is {status} by {record.get('approver')}"
                        ", and no such decision is anchored: it was decided outside tether")]
    expected = "approved" if status == "used" else status
    changed = [name for name, want in (("status", expected), ("approver", None),
                                       ("note", None), ("decided_at", None),
                                       ("call_hash", None), ("approver_auth", None),
                                       ("break_glass", None))
               if anchored.get(name) != (want if want is not None else record.get(name))]
    if changed:
        return [Finding("approval", sid, f"approval {aid} differs from its anchored decision in "
                        f"{', '.join(changed)}: it was changed outside tether")]
    return []
