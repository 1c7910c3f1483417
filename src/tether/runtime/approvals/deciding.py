"""Deciding an approval request: one path for the console, the CLI and the fleet, every check.

Why: an approval is only as good as the decision behind it, and a decision has more ways to go
wrong than "already decided": the request row may be forged (written into the store, not asked
for by the session), the page the person read may be stale (the request expired, was used, was
decided elsewhere, or its session moved on since), the person may be the one the session runs
for, or lack the role the tool needs, or belong to another tenant. Each face that lets a person
decide (``tether.web``'s inbox, ``tether approvals``, ``tether fleet approve``) calls ``decide``,
so the rules are written once.

Decision: the store's approval row is checked against the session's journal (its own hash chain
verified): the ``approval.requested`` event with the row's id must name the same call, tool,
arguments, hash, expiry and tenant, or the row is forged and nothing is decided. A page shows a
``version`` of what it showed (the row and the session's head); a decision given with a version
that is no longer current is stale and refused. Every refusal is *recorded*: appended to the
request's ``attempts`` and anchored in the store's anchor chain (``tether.store.base``), so an
attack leaves a tamper-evident trace even though it changed nothing. A request of another tenant
answers "no approval request" to the caller (``ApprovalNotFound``, as for an id that does not
exist), and the attempt is still recorded on it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tether.journal.chain import canonical_json, verify_chain
from tether.journal.erasure import is_erased, vouched
from tether.journal.views.owner import tenant_of
from tether.runtime.approvals.identity import Identity
from tether.runtime.approvals.requests import (
    ALL_TENANTS,
    ApprovalError,
    ApprovalRequest,
    StoredApprovals,
)
from tether.runtime.approvals.rules import ApprovalRules
from tether.store.base import Store
from tether.types import Event
from tether.vocabulary import EventType

Verdict = Literal["approve", "deny"]
# the events that ask a person: a call's approval, an MCP server's question (elicitation)
ASKING = frozenset({EventType.APPROVAL_REQUESTED, EventType.ELICITATION_REQUESTED})


class ApprovalRefused(ApprovalError):
    """A decision was refused by a check (``why``); the attempt is recorded on the request."""

    def __init__(self, why: str, *, approval_id: str) -> None:
        super().__init__(why)
        self.why = why
        self.approval_id = approval_id


class ApprovalNotFound(ApprovalError):
    """No such request, or one the caller may not see (another tenant's): the same words for
    both, so an id reveals nothing; an attempt on a hidden one is still recorded on it."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A request as a person is shown it, with what the journal says about it.

    Args:
        request: The stored request (its arguments as the policy allows them to be shown).
        version: What a decision made from this view must quote (``decide(seen=...)``).
        session_user: The user the session runs for (self-approval is judged against it).
        agent: The session's agent name.
        provenance: Per argument, where its value came from (``tool.decision``'s record).
        labels: Per argument, its labels (untrusted text, secrets, ...).
        spend: The session's spend so far (as its last pause recorded it).
        budget: The session's limits.
        forged: Why the stored request contradicts the journal, or None if it agrees."""

    request: ApprovalRequest
    version: str
    session_user: str | None
    agent: str | None
    provenance: Mapping[str, Any]
    labels: Mapping[str, Any]
    spend: Mapping[str, Any]
    budget: Mapping[str, Any]
    forged: str | None


def version_of(request: ApprovalRequest, events: Sequence[Event]) -> str:
    """A digest of what a person deciding ``request`` was shown: the request as stored (its
    decision state included) and the session's head. Any change to either makes it stale."""
    row = request.to_dict()
    row.pop("attempts", None)  # a refused attempt changes nothing a decision rests on
    head = (events[-1].seq, events[-1].hash) if events else (0, "")
    body = canonical_json({"request": row, "head": list(head)})
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def pending(store: Store, identity: Identity, session_id: str | None = None) -> list[Pending]:
    """The undecided, unexpired requests ``identity`` may see, newest first, each with the
    journal's account of it."""
    approvals = StoredApprovals(store, identity.tenant_id)
    shown = []
    for request in approvals.pending(session_id):
        if not request.expired():
            shown.append(view(store, request))
    return sorted(shown, key=lambda p: -p.request.requested_at)


def view(store: Store, request: ApprovalRequest) -> Pending:
    """``request`` with what its session's journal says about it."""
    events = store.read(request.session_id)
    start = events[0].data if events and events[0].type == EventType.SESSION_START else {}
    decision = next((e.data for e in events if e.type == EventType.TOOL_DECISION
                     and e.data.get("call_id") == request.call_id), {})
    spend = next((e.data.get("spend") or {} for e in reversed(events)
                  if e.type in (EventType.SESSION_PAUSED, EventType.SESSION_END)), {})
    return Pending(request, version_of(request, events),
                   (start.get("subject") or {}).get("user_id"), start.get("agent"),
                   decision.get("provenance") or {}, decision.get("labels") or {},
                   spend, start.get("budget") or {},
                   forged_because(request, events, store.read,
                                  store.unverifiable(request.session_id)))


def forged_because(request: ApprovalRequest, events: Sequence[Event],
                   read: Callable[[str], Sequence[Event]] | None = None,
                   unverifiable: Collection[int] = frozenset()) -> str | None:
    """Why the stored ``request`` is not the one its session asked for, or None if it is.
    ``read`` reads other sessions (an erasure record vouches for the events it rewrote);
    ``unverifiable``: ``Store.unverifiable``'s seqs."""
    if not events:
        return f"session {request.session_id} has no journal: no session asked for it"
    vouched_for = vouched(events, read) if read is not None else frozenset()
    broken = verify_chain(events, frozenset(unverifiable) | vouched_for)
    if broken is not None:
        return (f"the journal of session {request.session_id} does not verify (at event "
                f"{broken}); run `tether audit verify --session {request.session_id}`")
    asked = next((e for e in events if e.data.get("approval_id") == request.id
                  and e.type in ASKING), None)
    if tenant_of(events) != request.tenant_id:
        return "its tenant differs from its session's"
    if asked is None:
        erased = any(is_erased(e) and e.data.get("type") in ASKING for e in events)
        if erased and not request.arguments:  # erased with its quote of the call: vouched
            return None  # for above, and nothing of it is left to compare
        return f"session {request.session_id}'s journal never asked for {request.id}"
    data = asked.data
    if data.get("call_id") != request.call_id:
        return "its call_id differs from what the journal asked for"
    if not isinstance(data.get("expires_at"), (int, float)) or (
            request.expires_at > data["expires_at"]):  # shortened when its session ended
        return "its expiry is later than the journal's"
    if asked.type == EventType.ELICITATION_REQUESTED:  # an MCP server's question
        shown = {"message": data.get("message"), "schema": data.get("schema")}
        if request.tool != f"elicitation:{data.get('server')}":
            return "its tool differs from what the journal asked for"
        if canonical_json(shown) != canonical_json(request.arguments):
            return "its question differs from what the journal asked"
        return None
    for key, stored in (("tool", request.tool), ("call_hash", request.call_hash),
                        ("requested_at", request.requested_at), ("reason", request.reason),
                        ("policy_id", request.policy_id)):
        if data.get(key) != stored:
            return f"its {key} differs from what the journal asked for"
    if canonical_json(data.get("arguments") or {}) != canonical_json(request.arguments):
        return "its arguments differ from what the journal asked for"
    return None


def decide(store: Store, approval_id: str, verdict: Verdict, *, identity: Identity,
           note: str = "", rules: ApprovalRules | None = None, seen: str | None = None,
           break_glass: bool = False) -> ApprovalRequest:
    """Approve or deny ``approval_id`` as ``identity``, after every check; ApprovalRefused
    (recorded on the request) when one fails, ApprovalNotFound when there is no such request
    or it is another tenant's (recorded on it all the same).

    ``seen``: the ``version`` of the view the decision was made from (the console always sends
    it; the CLI decides on the request as it is now). ``break_glass``: override the four-eyes
    rules, where the rules give ``identity`` a break-glass role; marked in the record."""
    rules = rules or ApprovalRules()
    everyone = StoredApprovals(store, ALL_TENANTS)
    actual = everyone.get(approval_id)
    visible = StoredApprovals(store, identity.tenant_id).get(approval_id)
    if actual is None:
        raise ApprovalNotFound(not_found(approval_id))

    def refuse(why: str) -> ApprovalRefused:
        record_attempt(store, actual, identity, verdict, why)
        return ApprovalRefused(why, approval_id=approval_id)

    if visible is None:  # another tenant's: not found, to them; recorded, for the owner
        record_attempt(store, actual, identity, verdict,
                       f"{identity} is not of tenant {actual.tenant_id!r}")
        raise ApprovalNotFound(not_found(approval_id))
    events = store.read(actual.session_id)
    forged = forged_because(actual, events, store.read, store.unverifiable(actual.session_id))
    if forged is not None:
        raise refuse(f"the stored request is not the one the session asked for: {forged}")
    if seen is not None and seen != version_of(actual, events):
        raise refuse("the page is stale: the request or its session changed since it was shown "
                     f"({_now_state(actual, events)}); reload and decide again")
    if actual.status != "pending":
        raise refuse(f"approval {approval_id} is already {actual.status}; a decision cannot be "
                     "changed")
    if verdict == "approve" and actual.expired():
        raise refuse(f"approval {approval_id} expired; the session will refuse the call when "
                     "resumed, and the model may ask again")
    start = events[0].data if events[0].type == EventType.SESSION_START else {}
    why_not = rules.refusal(identity, actual, (start.get("subject") or {}).get("user_id"),
                            break_glass=break_glass)
    if why_not is not None:
        raise refuse(why_not)
    approvals = StoredApprovals(store, identity.tenant_id)
    decide_as = approvals.approve if verdict == "approve" else approvals.deny
    try:
        return decide_as(approval_id, approver=identity.name, note=note,
                         method=identity.method, break_glass=break_glass)
    except ApprovalError as lost:  # another decision won the race since the checks above
        raise refuse(str(lost)) from lost


def not_found(approval_id: str) -> str:
    """What a caller is told of an id it may not see: the same as of one that does not exist."""
    return (f"no approval request {approval_id!r}; list them with `tether approvals list` or "
            "the console's inbox")


def _now_state(request: ApprovalRequest, events: Sequence[Event]) -> str:
    if request.status != "pending":
        return f"it is {request.status}" + (f" by {request.approver}" if request.approver else "")
    if request.expired():
        return "it expired"
    last = events[-1].type if events else "nothing"
    return f"its session's last event is now {last}"


def record_attempt(store: Store, request: ApprovalRequest, identity: Identity,
                   verdict: str, why: str) -> None:
    """Append a refused attempt to the request's record (and so to the anchor chain). A race
    with a decision retries on the new status; the attempt is never dropped silently."""
    attempt = {"who": identity.name, "method": identity.method, "verdict": verdict,
               "why": why, "at": time.time()}
    for _ in range(5):
        current = store.get_approval(request.id)
        if current is None:
            return
        attempts = [*current.get("attempts", ()), attempt]
        if store.update_approval(request.id, current["status"], {"attempts": attempts}):
            return
    raise ApprovalError(f"could not record the refused attempt on {request.id}: the request "
                        "kept changing")
