"""Approvals: a paused call waits here for a human, bound to exactly that call.

Decision: an approval is not a flag on a session but a record bound to one call — the session,
the tool and the hash of its canonical arguments — that is single-use and expires. The store is a
protocol so the durable stores can keep approvals across processes; the in-memory store here is
the reference. Approving never runs anything: the session runs the approved call when resumed,
after checking that the approval matches the call it is about to make.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from tether.errors import RunError
from tether.journal.chain import canonical_json
from tether.store.base import Store

Status = Literal["pending", "approved", "denied", "used"]


class ApprovalError(RunError):
    """An approval cannot be given, refused or used as asked; the message says why."""


def call_hash(bound_to: str, tool: str, arguments: Mapping[str, Any]) -> str:
    """The identity an approval is bound to: who may use it (a session; for a gateway, its
    client), the tool and the canonical arguments."""
    body = canonical_json({"session": bound_to, "tool": tool, "arguments": arguments})
    return hashlib.sha256(body.encode()).hexdigest()


def action_hash(tool: str, arguments: Mapping[str, Any]) -> str:
    """The call an approval is for, whoever may use it: the tool and the canonical arguments.
    Two approvals of one call bound to two clients share it, so a Guardian can tell a call
    whose approval was given to someone else (ACS-R-011) from a call no one approved."""
    body = canonical_json({"tool": tool, "arguments": arguments})
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call waiting for a person's decision, bound to that one call (the session, the tool
    and the hash of its arguments), single-use and expiring. Approve or deny it with
    ``tether approvals approve|deny ID`` or an ``Approver``; then resume the session.

    Args:
        id: The request's id (``apr_...``).
        session_id: The session whose call waits.
        call_id: The waiting call's id.
        tool: The tool called.
        arguments: The arguments as the policy allows them to be shown (masked fields hidden).
        call_hash: The hash of the session, the tool and the canonical arguments it is bound to.
        reason: Why the policy asked for an approval.
        policy_id: The rule that asked.
        requested_at: When it was made (wall-clock seconds).
        expires_at: When it can no longer be answered.
        status: ``"pending"`` until someone decides it.
        approver: Who decided it.
        note: The approver's words.
        decided_at: When it was decided.
        used_by: The ``"session/call"`` that used it up.
        tenant_id: The session's tenant: only its approvers see the request.
        approver_auth: How the approver's name was established (``Identity.method``).
        break_glass: Whether the decision overrode the approval rules (``ApprovalRules``).
        attempts: Refused attempts to decide it (who, how, what, why, when), oldest first.
        action_hash: The hash of the tool and the canonical arguments alone (``action_hash``;
            None on a request made before tether recorded it)."""
    id: str
    session_id: str
    call_id: str
    tool: str
    arguments: Mapping[str, Any]  # as the policy allows them to be shown (masked fields hidden)
    call_hash: str
    reason: str
    policy_id: str
    requested_at: float  # wall-clock seconds
    expires_at: float
    status: Status = "pending"
    approver: str | None = None
    note: str = ""
    decided_at: float | None = None
    used_by: str | None = None  # "session/call" that used it up
    tenant_id: str | None = None  # the session's tenant: only its approvers see the request
    approver_auth: str | None = None
    break_glass: bool = False
    attempts: tuple[Mapping[str, Any], ...] = ()
    action_hash: str | None = None

    def expired(self, now: float | None = None) -> bool:
        """Whether it can no longer be answered at ``now`` (default: the present)."""
        return (time.time() if now is None else now) >= self.expires_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "session_id": self.session_id, "call_id": self.call_id,
            "tool": self.tool, "arguments": dict(self.arguments), "call_hash": self.call_hash,
            "reason": self.reason, "policy_id": self.policy_id,
            "requested_at": self.requested_at, "expires_at": self.expires_at,
            "status": self.status, "approver": self.approver, "note": self.note,
            "decided_at": self.decided_at, "used_by": self.used_by, "tenant_id": self.tenant_id,
            "approver_auth": self.approver_auth, "break_glass": self.break_glass,
            "attempts": [dict(a) for a in self.attempts], "action_hash": self.action_hash,
        }


def new_request(*, session_id: str, bound_to: str, call_id: str, tool: str,
                shown: Mapping[str, Any],
                arguments: Mapping[str, Any], reason: str, policy_id: str,
                ttl: float, tenant_id: str | None = None) -> ApprovalRequest:
    now = time.time()
    return ApprovalRequest(f"apr_{os.urandom(10).hex()}", session_id, call_id, tool,
                           dict(shown), call_hash(bound_to, tool, arguments), reason,
                           policy_id, now, now + ttl, tenant_id=tenant_id,
                           action_hash=action_hash(tool, arguments))


def carried(used: ApprovalRequest, *, session_id: str, call_id: str) -> ApprovalRequest:
    """A new request for exactly the call ``used`` (an approval just used) admitted, to be
    decided as carried from it: the same tool, arguments, hash, reason and expiry, undecided
    (its note says where it comes from, should it stay undecided: a crash before the decision
    leaves it to a person, and the call waits for one)."""
    return replace(used, id=f"apr_{os.urandom(10).hex()}", session_id=session_id,
                   call_id=call_id, requested_at=time.time(), status="pending", approver=None,
                   note=f"to be carried from {used.id}", decided_at=None, used_by=None,
                   approver_auth=None, break_glass=False, attempts=())


class ApprovalStore(Protocol):
    def add(self, request: ApprovalRequest) -> None: ...

    def get(self, approval_id: str) -> ApprovalRequest | None: ...

    def pending(self, session_id: str | None = None) -> list[ApprovalRequest]: ...

    def every(self, session_id: str | None = None) -> list[ApprovalRequest]: ...

    def approved_for(self, digest: str) -> list[ApprovalRequest]: ...

    def expire_pending(self, session_id: str, why: str) -> int: ...

    def approve(self, approval_id: str, *, approver: str, note: str = "",
                method: str | None = None, break_glass: bool = False) -> ApprovalRequest: ...

    def deny(self, approval_id: str, *, approver: str, note: str = "",
             method: str | None = None, break_glass: bool = False) -> ApprovalRequest: ...

    def consume(self, approval_id: str, expected_hash: str, *, by: str) -> ApprovalRequest:
        """Mark an approved request used by ``by`` (a session and call), atomically, if it was
        given for that call; raise ApprovalError otherwise. Idempotent: a request already used
        by ``by`` is used again without error (a resume after a crash repeats the step)."""
        ...


ALL_TENANTS: Any = object()  # StoredApprovals(store, tenant_id=ALL_TENANTS): not scoped


class StoredApprovals:
    """The ApprovalStore over any tether Store: approvals live where the journal lives, so a
    session paused in one process is approved from a second and resumed in a third. Every
    state change is a compare-and-set on the record's status, so two approvers, or an approver
    and a resuming worker, cannot both win.

    Scoped to ``tenant_id``: a request of another tenant's session is not listed, and to every
    other method it does not exist ("no approval request ..."), so an id guessed or leaked
    across tenants reveals nothing and decides nothing. ``ALL_TENANTS`` (the default for an
    agent serving several tenants, and the operator's CLI without ``--tenant``) sees them all."""

    def __init__(self, store: Store, tenant_id: str | None = ALL_TENANTS) -> None:
        self.store = store
        self.tenant_id = tenant_id

    def __repr__(self) -> str:
        scope = "" if self.tenant_id is ALL_TENANTS else f", tenant_id={self.tenant_id!r}"
        return f"StoredApprovals({self.store!r}{scope})"

    def _visible(self, record: Mapping[str, Any]) -> bool:
        return self.tenant_id is ALL_TENANTS or record.get("tenant_id") == self.tenant_id

    def add(self, request: ApprovalRequest) -> None:
        self.store.put_approval(request.to_dict())

    def get(self, approval_id: str) -> ApprovalRequest | None:
        record = self.store.get_approval(approval_id)
        return None if record is None or not self._visible(record) else from_dict(record)

    def pending(self, session_id: str | None = None) -> list[ApprovalRequest]:
        return [from_dict(r) for r in self.store.list_approvals(status="pending",
                                                                session_id=session_id)
                if self._visible(r)]

    def every(self, session_id: str | None = None) -> list[ApprovalRequest]:
        """Every request, decided or not (of one session, if given)."""
        return [from_dict(r) for r in self.store.list_approvals(session_id=session_id)
                if self._visible(r)]

    def approved_for(self, digest: str) -> list[ApprovalRequest]:
        """Approved, unused requests for exactly the call ``digest`` names (``call_hash``), of
        any session: how a client's call retried in a new session finds its approval."""
        return [from_dict(r) for r in self.store.list_approvals(status="approved")
                if r.get("call_hash") == digest and self._visible(r)]

    def issued_to_another(self, request: ApprovalRequest) -> list[ApprovalRequest]:
        """Approved, unused, unexpired requests for the very call ``request`` is for (its
        ``action_hash``) that are bound to someone else: another client's approval of the same
        tool and arguments."""
        if request.action_hash is None:
            return []
        found = (from_dict(r) for r in self.store.list_approvals(status="approved")
                 if r.get("action_hash") == request.action_hash
                 and r.get("call_hash") != request.call_hash and self._visible(r))
        return [r for r in found if not r.expired()]

    def withdraw(self, approval_id: str, why: str) -> bool:
        """Let one undecided request expire now (nothing will use it); False if it was decided
        meanwhile."""
        return self.store.update_approval(approval_id, "pending",
                                          {"expires_at": time.time(), "note": why})

    def expire_pending(self, session_id: str, why: str) -> int:
        """Let a session's undecided requests expire now (the session ended: nothing will use
        them); returns how many."""
        now = time.time()
        return sum(self.withdraw(r.id, why) for r in self.pending(session_id)
                   if not r.expired(now))

    def approve(self, approval_id: str, *, approver: str, note: str = "",
                method: str | None = None, break_glass: bool = False) -> ApprovalRequest:
        """Approve a pending request as ``approver`` (established by ``method``: see
        ``tether.runtime.approvals.identity``). A person's decision goes through
        ``tether.runtime.approvals.deciding.decide``, which checks it first."""
        return self._decide(approval_id, "approved", approver, note, method, break_glass)

    def deny(self, approval_id: str, *, approver: str, note: str = "",
             method: str | None = None, break_glass: bool = False) -> ApprovalRequest:
        """Deny a pending request (see ``approve``)."""
        return self._decide(approval_id, "denied", approver, note, method, break_glass)

    def _decide(self, approval_id: str, status: Status, approver: str, note: str,
                method: str | None, break_glass: bool) -> ApprovalRequest:
        if not isinstance(approver, str) or not approver.strip():
            raise ApprovalError("say who decides: approver must be a non-empty name")
        current = self._lookup(approval_id)
        if current.status != "pending":
            raise ApprovalError(f"approval {approval_id} is already {current.status}; "
                                "a decision cannot be changed")
        if status == "approved" and current.expired():
            raise ApprovalError(f"approval {approval_id} expired; the session will refuse "
                                "the call when resumed, and the model may ask again")
        decided = replace(current, status=status, approver=approver, note=note,
                          decided_at=time.time(), approver_auth=method, break_glass=break_glass)
        changes = {"status": status, "approver": approver, "note": note,
                   "decided_at": decided.decided_at, "approver_auth": method,
                   "break_glass": break_glass}
        if not self.store.update_approval(approval_id, "pending", changes):
            raise ApprovalError(f"approval {approval_id} was decided by someone else meanwhile")
        return decided

    def consume(self, approval_id: str, expected_hash: str, *, by: str) -> ApprovalRequest:
        current = self._lookup(approval_id)
        if current.status == "used" and current.used_by == by:
            return current
        if current.status != "approved":
            raise ApprovalError(f"approval {approval_id} is {current.status}, not approved")
        if current.call_hash != expected_hash:
            raise ApprovalError(f"approval {approval_id} was given for a different call")
        if not self.store.update_approval(approval_id, "approved",
                                          {"status": "used", "used_by": by}):
            raise ApprovalError(f"approval {approval_id} was used meanwhile; it is single-use")
        return replace(current, status="used", used_by=by)

    def _lookup(self, approval_id: str) -> ApprovalRequest:
        request = self.get(approval_id)
        if request is None:
            raise ApprovalError(f"no approval request {approval_id!r}; list them with "
                                "session.pending_approvals() or `tether approvals list`")
        return request


def InMemoryApprovalStore() -> StoredApprovals:
    """Approvals kept in this process only."""
    from tether.store.memory import MemoryStore

    return StoredApprovals(MemoryStore())


def from_dict(record: Mapping[str, Any]) -> ApprovalRequest:
    return ApprovalRequest(
        record["id"], record["session_id"], record["call_id"], record["tool"],
        dict(record["arguments"]), record["call_hash"], record["reason"], record["policy_id"],
        record["requested_at"], record["expires_at"], record["status"], record.get("approver"),
        record.get("note", ""), record.get("decided_at"), record.get("used_by"),
        record.get("tenant_id"), record.get("approver_auth"), bool(record.get("break_glass")),
        tuple(record.get("attempts") or ()), record.get("action_hash"))


def decided_by(request: ApprovalRequest) -> dict[str, Any]:
    """How the decision's maker was established, and whether it broke glass, as the session's
    journal records them beside the approver's name (nothing for a request no one decided, or
    one decided before tether recorded it)."""
    shown: dict[str, Any] = {}
    if request.approver_auth is not None:
        shown["approver_auth"] = request.approver_auth
    if request.break_glass:
        shown["break_glass"] = True
    return shown


def check_consumable(request: ApprovalRequest, expected_hash: str) -> None:
    """The rules every store applies before an approval may be used."""
    if request.status != "approved":
        raise ApprovalError(f"approval {request.id} is {request.status}, not approved")
    if request.call_hash != expected_hash:
        raise ApprovalError(f"approval {request.id} was given for a different call")
    if request.expired():
        raise ApprovalError(f"approval {request.id} expired before it was used")
