"""What waits from an earlier pass over a turn: the calls held for a person, each settled.

Why a module of its own: a tool call reads as one pipeline in ``turn.py`` — settle what waits,
admit what is new, run, record — and the settling is where the subtle cases live. A call of the
open turn that the journal already knows about is not decided again as if new; it is one of:

- **interrupted**: a side-effecting call that started (``tool.started``) and left no result. It
  runs again only when an operator settled it ``retry``, or when its tool is declared idempotent
  and no person approved it (then journaled as ``effect.rerun``); ``skip`` refuses it; otherwise
  it waits for an operator (an uncertain effect).
- **approved**: a call the policy held for approval. A pending request keeps it waiting; a
  denied or expired one refuses it (``approval.refused``); an approved one is checked against
  the very call (its hash), charged, journaled durably as ``approval.granted`` and only then
  used up, so a crash between the two leaves a grant only this call can use.
- **re-decided**: a call decided earlier that did not run yet (it waited behind an approval):
  it runs as decided, without a new decision.

Holding a new call for a person (``ask``) lives here too: an in-process approver's yes settles
it on the spot exactly as a person's yes settles it on resume. Decision: whatever runs on resume
runs with its real arguments, never a placeholder the journal showed instead (``kept``), and
once a call of the turn waits, nothing after it runs or is refused, so effects keep their order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from tether.journal.chain import Journal
from tether.policy.base import Decision
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.approvals.approver import Approver
from tether.runtime.approvals.requests import (
    ApprovalError,
    ApprovalRequest,
    ApprovalStore,
    call_hash,
    check_consumable,
    decided_by,
    new_request,
)
from tether.runtime.chokepoint.additions import fallback_note
from tether.runtime.chokepoint.effects import (
    Admitted,
    check_unredacted,
    is_hidden,
    masked_for_journal,
    needs_operator,
    refusal,
    shape,
)
from tether.runtime.chokepoint.executor import Rejected, ToolExecutor
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState, call_signature
from tether.tools.base import Tool
from tether.types import ToolCall
from tether.vocabulary import EventType


@dataclass(slots=True)
class Holds:
    """The calls of one turn held back for a person, by id."""

    waiting: list[str] = field(default_factory=list)  # for an approval
    uncertain: list[str] = field(default_factory=list)  # started before a crash, no result

    @property
    def blocked(self) -> bool:
        """Nothing after a call that waits for a person may run."""
        return bool(self.waiting or self.uncertain)


class HeldCalls:
    """Settles the calls of a turn that wait from before, and holds new ones for a person."""

    __slots__ = ("_accountant", "_approval_ttl", "_approvals", "_approver", "_bound_to",
                 "_executor", "_journal", "_kept", "_session_id", "_state", "_tenant_id")

    def __init__(self, *, session_id: str, bound_to: str, executor: ToolExecutor,
                 accountant: Accountant, journal: Journal, state: SessionState,
                 approvals: ApprovalStore, approval_ttl: float, approver: Approver | None,
                 kept: Callable[[str], Mapping[str, Any] | None] | None,
                 tenant_id: str | None) -> None:
        self._session_id = session_id
        self._bound_to = bound_to  # whose approvals these are (see ToolCalls)
        self._executor = executor
        self._accountant = accountant
        self._journal = journal
        self._state = state
        self._approvals = approvals
        self._approval_ttl = approval_ttl
        self._approver = approver  # decides requests in process; None: a person does
        self._kept = kept  # arguments the journal hid, by call id, where they were kept
        self._tenant_id = tenant_id

    def waits(self, call: ToolCall) -> bool:
        """Whether the journal knows ``call`` already: started, held for approval or decided."""
        state = self._state
        return call.id in state.started or call.id in state.approvals or call.id in \
            state.decisions

    def settle(self, call: ToolCall, holds: Holds) -> Admitted | None:
        """The waiting call cleared to run, or None while it (or a call before it) still waits;
        Rejected when it is refused."""
        state = self._state
        if call.id in state.started:
            return self._interrupted(call, holds)
        approval_id = state.approvals.get(call.id)
        if approval_id is not None:
            return self._approved(call, approval_id, holds)
        decided = state.decisions[call.id]
        return self._redecided(call, decided["tool"], decided["decision"])

    def ask(self, call: ToolCall, tool: Tool, arguments: dict[str, Any], decision: Decision,
            holds: Holds) -> Admitted | None:
        """Record an approval request for the call. An in-process approver decides it at once,
        and the call is then admitted or refused exactly as a person's decision would be on
        resume; otherwise the call waits."""
        journal = self._journal  # the request quotes the call as the journal shows it
        request = new_request(
            session_id=self._session_id, bound_to=self._bound_to, call_id=call.id, tool=tool.name,
            shown=journal.as_sealed(masked_for_journal(arguments, decision), "arguments"),
            arguments=arguments, reason=journal.as_sealed(decision.reason, "reason"),
            policy_id=decision.policy_id, ttl=self._approval_ttl, tenant_id=self._tenant_id)
        self._approvals.add(request)
        self._journal.append(EventType.APPROVAL_REQUESTED, {
            "approval_id": request.id, "call_id": call.id, "tool": tool.name,
            "arguments": request.arguments, "call_hash": request.call_hash,
            "reason": request.reason, "policy_id": request.policy_id,
            "requested_at": request.requested_at, "expires_at": request.expires_at,
        })
        if self._approver is not None and self._approver.decide(request, self._approvals):
            return self._approved(call, request.id, holds)
        holds.waiting.append(call.id)
        return None

    def _redecided(self, call: ToolCall, tool_name: str, decision: Decision) -> Admitted:
        """A call decided earlier that has not run yet (it waited behind an approval)."""
        tool = self._executor.registry.get(tool_name)
        if tool is None:
            raise Rejected(refusal(call, f"tool {tool_name!r} is no longer available"))
        prefix = ""
        if tool_name != call.name:
            prefix = fallback_note(tool_name, call.name, None)
        call = self._with_real_arguments(call)
        arguments = self._executor.validate(tool, ToolCall(call.id, tool_name, call.arguments))
        return shape(call, tool, arguments, decision, prefix=prefix)

    def _with_real_arguments(self, call: ToolCall) -> ToolCall:
        """A call about to run on resume, never with a placeholder: if the journal hid some of
        its arguments, the arguments kept apart from it (``Agent(keep_hidden_arguments=True)``)
        — only if they are the very ones the policy decided on, as the journaled signature
        shows; with nothing kept, Rejected (``check_unredacted``)."""
        if self._kept is None or not is_hidden(call.arguments):
            check_unredacted(call)
            return call
        decided = self._state.decisions.get(call.id)
        arguments = self._kept(call.id)
        if decided is None or arguments is None:
            check_unredacted(call)  # hidden, and nothing kept: this refuses it
            return call
        if call_signature(decided["tool"], arguments) != decided["signature"]:
            raise Rejected(refusal(call, "the arguments kept for it apart from the journal are "
                                         "not the ones the policy decided on; it was not run"))
        return ToolCall(call.id, call.name, arguments)

    def _interrupted(self, call: ToolCall, holds: Holds) -> Admitted | None:
        """A side-effecting call that started before the process stopped (or the run was
        interrupted) and left no result. It runs again only when an operator settled it
        ``retry``, or when it is declared idempotent and no person approved it — then as a
        journaled re-run (``effect.rerun``); otherwise it waits for an operator."""
        state = self._state
        decided = state.decisions[call.id]
        tool = self._executor.registry.get(decided["tool"])
        if tool is None:
            raise Rejected(refusal(call, f"tool {decided['tool']!r} is no longer available"))
        settled = state.settled.get(call.id)
        if settled is not None and settled["action"] == "skip":
            note = settled.get("note") or "no note"
            raise Rejected(ToolResult(call.id, call.name, f"Not executed again: the call was "
                                      f"interrupted and an operator chose to skip it ({note}).",
                                      "skipped"))
        if settled is None and needs_operator(tool, call.id in state.granted):
            holds.uncertain.append(call.id)
            return None
        if holds.blocked:
            return None
        call = self._with_real_arguments(call)
        arguments = self._executor.validate(tool, ToolCall(call.id, tool.name, call.arguments))
        if settled is None:  # idempotent: it runs again, and the journal says so
            self._journal.append(EventType.EFFECT_RERUN, {
                "call_id": call.id, "tool": tool.name,
                "why": "declared idempotent, it started and left no result, so it runs again"})
        if call.id in state.granted:
            return Admitted(call, tool, arguments)
        return shape(call, tool, arguments, decided["decision"])

    def _approved(self, call: ToolCall, approval_id: str, holds: Holds) -> Admitted | None:
        request = self._approvals.get(approval_id)
        if request is None:
            raise Rejected(refusal(call, "its approval request was lost; ask again"))
        user = f"{self._session_id}/{call.id}"  # what an approval is used up by
        granted = call.id in self._state.granted
        used = request.status == "used" and request.used_by == user
        if not (granted or used):
            if request.status == "pending" and not request.expired():
                holds.waiting.append(call.id)
                return None
            if not holds.blocked and request.status != "approved":
                why = "expired before anyone decided" if request.status == "pending" else (
                    f"{request.status} by {request.approver}"
                    + (f": {request.note}" if request.note else ""))
                self._refuse(call, request, why, told=f"approval {why}")
        if holds.blocked:
            return None  # an earlier call still waits: nothing after it may run or be refused
        tool = self._executor.registry.get(request.tool)
        if tool is None:
            raise Rejected(refusal(call, f"tool {request.tool!r} is no longer available"))
        call = self._with_real_arguments(call)
        arguments = self._executor.validate(tool, ToolCall(call.id, request.tool,
                                                           call.arguments))
        digest = call_hash(self._bound_to, tool.name, arguments)
        if not granted:
            if not used:
                try:
                    check_consumable(request, digest)
                except ApprovalError as exc:
                    self._refuse(call, request, str(exc))
            self._accountant.check_tool_call()
            # journaled, and durable, before the approval is used up: a crash between the two
            # leaves a grant whose approval is still usable by this call, and by no other
            self._journal.append(EventType.APPROVAL_GRANTED, {
                "approval_id": approval_id, "call_id": call.id, "tool": tool.name,
                "approver": request.approver, "note": request.note, "charged": True,
                **decided_by(request)})
            self._journal.flush()
        if not used:
            try:
                self._approvals.consume(approval_id, digest, by=user)
            except ApprovalError as exc:
                self._refuse(call, request, str(exc))
        return Admitted(call, tool, arguments)

    def _refuse(self, call: ToolCall, request: ApprovalRequest, why: str,
                told: str | None = None) -> NoReturn:
        """Journal why an approval cannot be used for ``call``, and refuse the call."""
        self._journal.append(EventType.APPROVAL_REFUSED, {
            "approval_id": request.id, "call_id": call.id, "tool": request.tool, "why": why,
            "approver": request.approver, "note": request.note, **decided_by(request)})
        raise Rejected(refusal(call, told or why))
