"""In-process approvers: a rule that decides approval requests the moment they are made.

Why: evaluations, tests and batch jobs have no person to ask, yet their policies still say
"this call needs approval". An approver answers for that person, through the very same record:
the request is stored, decided by the approver under its own name, and the call is then admitted
(or refused) by the path a human approval takes on resume — bound to the exact call, used once,
journaled with who decided. It never widens what the policy allows: it only answers requests the
policy made.

Decision: an approver is a plain synchronous callable ``(ApprovalRequest) -> verdict``. True (or
``"approve"``) approves, False (or ``"deny"``) denies, None leaves the request to a person (the
session pauses as it would without an approver). Anything else, and an approver that raises,
denies — it fails closed, with the reason in the journal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tether.errors import InvalidArgument, WrongType
from tether.runtime.approvals.identity import IN_PROCESS
from tether.runtime.approvals.requests import ApprovalRequest, ApprovalStore

Verdict = bool | Literal["approve", "deny"] | None
ApproverFn = Callable[[ApprovalRequest], Any]
NO_VERDICT = "no verdict: "  # how the note of a denial the approver did not give begins


@dataclass(frozen=True, slots=True)
class Approver:
    """A named rule for approval requests; the name is journaled as the one who decided."""

    rule: ApproverFn
    name: str

    def __post_init__(self) -> None:
        if not callable(self.rule):
            raise WrongType(f"approver {self.rule!r} is not callable; give a function "
                            "(ApprovalRequest) -> True / False / None")
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidArgument("an approver needs a non-empty name: it is journaled as the one "
                                  "who decided")

    def decide(self, request: ApprovalRequest, approvals: ApprovalStore) -> bool:
        """Decide ``request`` in ``approvals``; True if it was decided (either way), False if
        the approver left it to a person."""
        note = ""
        try:
            verdict = self.rule(request)
        except Exception as exc:  # a broken approver denies
            verdict = False
            note = f"{NO_VERDICT}the approver failed ({type(exc).__name__}: {exc})"
        if verdict is None:
            return False
        if verdict is True or verdict == "approve":
            approvals.approve(request.id, approver=self.name, note="approved in process",
                              method=IN_PROCESS)
        else:
            if not note and verdict is not False and verdict != "deny":
                note = f"{NO_VERDICT}the approver answered {verdict!r}, which is not a verdict"
            approvals.deny(request.id, approver=self.name, note=note or "denied in process",
                           method=IN_PROCESS)
        return True


def gave_no_verdict(request: ApprovalRequest) -> bool:
    """Whether ``request`` was denied because its in-process approver gave no verdict: it
    raised, or answered something else (say, an ACS approver's ASK, which ACS-R-012 forbids)."""
    return (request.status == "denied" and request.approver_auth == IN_PROCESS
            and request.note.startswith(NO_VERDICT))


def as_approver(value: Approver | ApproverFn | None) -> Approver | None:
    """An Agent's ``approver=``: an Approver, or a callable named after itself."""
    if value is None or isinstance(value, Approver):
        return value
    name = getattr(value, "__qualname__", None) or type(value).__name__
    return Approver(value, f"approver:{name}")


def approve_all(name: str = "approve-all") -> Approver:
    """Approves every request (tests, and measuring what a policy's approvals cost)."""
    return Approver(lambda _request: True, name)


def deny_all(name: str = "deny-all") -> Approver:
    """Denies every request: what a run achieves when no one ever says yes."""
    return Approver(lambda _request: False, name)


def approve_when(predicate: Callable[[ApprovalRequest], bool], name: str) -> Approver:
    """Approves the requests ``predicate`` accepts and denies the rest."""
    return Approver(lambda request: bool(predicate(request)), name)
