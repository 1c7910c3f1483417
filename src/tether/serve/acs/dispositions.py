"""A Guardian decides and never runs: the observed agent's tools as tether sees them, and what
tether's decision on a call becomes on the ACS wire.

Why: an ACS Guardian is asked before the observed agent runs a tool, and the agent runs it. tether
must decide that call exactly as its chokepoint decides any call — the same gate, policy,
approvals, quotas, journal — without a second, hand-written path to a decision that could drift
from the first. Decision: each ACS session is a ``Gateway`` (tether's door for calls no model
asked for), and the tools behind it are ``ObservedTool``s, whose body is a hand-off: it runs
nothing, records the arguments the decision let through, and returns a marker the journal keeps
(``tool.result``: "admitted ..."). What the chokepoint did is then read off its own events
(``Witness``, subscribed to the gateway's journal) and mapped, one rule per effect:

- ALLOW with the arguments as asked → ``allow``.
- PARTIAL_ALLOW and MASK (input) → ``modify`` with ``redactions``: a masked argument's value is
  replaced by what tether passed (``[masked]``), an argument PARTIAL_ALLOW withheld is replaced
  by null. MASK on output is remembered and applied to the ``toolCallResult`` that follows.
- DENY → ``deny``, the policy's reason as ``reasoning``.
- REQUIRE_APPROVAL → a request in tether's approval store, and ``ask`` naming it; the same call
  sent again after a person approved it (``tether approvals approve``) is allowed, once. A
  client that declared no approver gets ``defer`` (``timeout_decision: deny``: approval is a
  recoverable, out-of-band resolution), never ``ask``; past the session's bound on deferrals,
  ``deny`` with ``approver_unavailable``.
- DEGRADE → ``deny`` with ``reason_codes: [degraded]`` naming the fallback: a Guardian cannot run
  the fallback, and a ``modify`` that swapped the tool would have the agent run a tool it did
  not ask for with arguments shaped for another. The fallback's hand-off refuses (nothing ran:
  the journal says so); the agent may call the fallback, which is decided on its own.
- A quota or budget with no room, or a tool the Guardian does not know → a refusal the registry
  names (``CAPABILITY_NOT_NEGOTIATED``: the session's grant does not cover the call).
- A call that waits for approval while a person's approval of that very call stands for another
  agent → the same refusal (``approval_issued_to_another``): an approval is verified against
  whom it was issued for (ACS-R-011), and the agent it was not issued for is not given a fresh
  ``ask`` that would show a person a twin of the call they approved for someone else.
- With an agent or service approver (``acs_guardian(approver=)``, §9) the request is decided at
  once: approved → ``allow`` (or ``modify``), denied → ``deny`` (``approval_denied``), and an
  answer that is no verdict — ASK, which approvers must not return (ACS-R-012) — the refusal
  above (``approver_gave_no_verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from tether.journal.redaction import MASKED
from tether.policy.base import Decision, Effect
from tether.runtime.approvals.approver import gave_no_verdict
from tether.runtime.approvals.requests import ApprovalRequest, StoredApprovals
from tether.runtime.record.result import ToolResult
from tether.serve.acs.wire import CAPABILITY_NOT_NEGOTIATED, INVALID_PARAMS, AcsRefused
from tether.tools.base import ToolContext, ToolFailure, ToolMeta
from tether.types import Event, ToolSpec
from tether.vocabulary import EventType

# an observed tool nothing declared: the cautious reading (it may have side effects and reach
# outside, and what it returns was written by someone else), as any foreign framework's tool
OBSERVED_META = ToolMeta(tags=frozenset({"acs", "observed"}), risk="medium", side_effect=True,
                         egress=True, output_trust="untrusted")
ADMITTED = "admitted: decided by tether, run by the observed agent (ACS Guardian)"
_SCHEMA: Mapping[str, Any] = {"type": "object", "additionalProperties": True}


@dataclass(slots=True)
class Handoff:
    """The call in flight: the tool asked for, and the arguments its decision let through."""

    tool: str
    decided: dict[str, Any] | None = None


_HANDOFF: ContextVar[Handoff | None] = ContextVar("tether_acs_handoff", default=None)


class ObservedTool:
    """A tool of the observed agent: its name and declared metadata; its body runs nothing."""

    __slots__ = ("meta", "name", "spec")

    def __init__(self, name: str, meta: ToolMeta) -> None:
        self.name, self.meta = name, meta
        self.spec = ToolSpec(name, "a tool of an ACS observed agent (it runs it; tether "
                             "decides)", _SCHEMA)

    def __repr__(self) -> str:
        return f"<observed tool {self.name}>"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        handoff = _HANDOFF.get()
        if handoff is None or handoff.tool != self.name:
            raise ToolFailure(f"Not run: {self.name!r} is a fallback the policy named; a "
                              "Guardian runs no tool, so the observed agent must call it "
                              "itself (that call is decided on its own)")
        handoff.decided = dict(arguments)
        return ADMITTED


def handing_off(tool: str) -> tuple[Handoff, Any]:
    """Open the hand-off for a call of ``tool`` (close it with ``_HANDOFF.reset(token)``)."""
    handoff = Handoff(tool)
    return handoff, _HANDOFF.set(handoff)


def handed_off(token: Any) -> None:
    _HANDOFF.reset(token)


@dataclass(slots=True)
class Witness:
    """What the chokepoint journaled for the call in flight (subscribed to the journal)."""

    decision: Decision | None = None
    approval_id: str | None = None
    quota: str | None = None
    events: list[str] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        if event.type == EventType.TOOL_DECISION and self.decision is None:
            found = event.data.get("decision")
            if isinstance(found, Decision):
                self.decision = found
            elif isinstance(found, Mapping):
                self.decision = Decision(Effect(found["effect"]), found.get("reason", ""),
                                         found.get("policy_id", ""),
                                         tuple(found.get("fields", ())),
                                         tuple(found.get("mask_in", ())), found.get("fallback"))
        elif event.type == EventType.APPROVAL_REQUESTED:
            self.approval_id = str(event.data.get("approval_id"))
        elif event.type == EventType.QUOTA_REFUSED:
            self.quota = str(event.data.get("quota"))

    def clear(self) -> None:
        self.decision, self.approval_id, self.quota = None, None, None


def settled(approvals: StoredApprovals | None, approval_id: str) -> ApprovalRequest | None:
    """The approval request the call just made (``approval_id``) as it stands, once the two
    cases that grant nothing are refused (AcsRefused, -32003): an in-process approver that gave
    no verdict (it failed, or answered an ACS approver's ASK, which ACS-R-012 forbids), and a
    call whose approval a person gave to another agent (ACS-R-011: the new request is withdrawn
    first, so no person is asked for it; once that approval is used or expires, the call is
    asked as any other)."""
    request = approvals.get(approval_id) if approvals is not None else None
    if approvals is None or request is None:
        return None
    if gave_no_verdict(request):
        raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "approver_gave_no_verdict",
                         f"the approver {request.approver!r} gave no verdict (it failed, or "
                         "answered ASK, which an approver must not): nothing grants this call",
                         approval_id=approval_id)
    if request.status == "pending" and approvals.issued_to_another(request):
        approvals.withdraw(approval_id, "withdrawn: the same call's approval was issued to "
                                        "another agent, and the Guardian refused this one "
                                        "(ACS-R-011)")
        raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "approval_issued_to_another",
                         "the approval of this exact call was issued to another agent; an "
                         "approval is only used by the agent it was issued for. Ask for your "
                         "own once that one is used or expired", approval_id=approval_id)
    return request


def pointer(*parts: str) -> str:
    """A JSON pointer (RFC 6901) to ``parts``."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _references(decision: Decision) -> list[dict[str, str]]:
    return [{"policy_id": decision.policy_id}] if decision.policy_id else []


def tool_answer(asked: Mapping[str, Any], result: ToolResult, handoff: Handoff,
                witness: Witness, *, can_ask: bool, defers_left: int,
                approval_ttl: float, approval: ApprovalRequest | None = None) -> dict[str, Any]:
    """The ACS decision for a ``toolCallRequest`` whose ``asked`` arguments the gateway decided
    (``result``, ``handoff``, ``witness``, and the approval request it made as it stands:
    ``settled``); AcsRefused for a call outside the session's grant."""
    decision = witness.decision
    if witness.quota is not None:
        raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "budget_exhausted",
                         f"the quota {witness.quota!r} has no room for this call: the "
                         "session's grant does not cover it", quota=witness.quota)
    if decision is None:  # refused before the policy: an unknown tool, a spent budget
        raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "not_granted",
                         f"not decided: {result.content[:300]}")
    refs = _references(decision)
    reasoning = decision.reason or f"{decision.effect.value} ({decision.policy_id})"
    if handoff.decided is not None and result.status == "ok":
        return _admitted(asked, handoff.decided, reasoning, refs)
    if witness.approval_id is not None and decision.effect is Effect.REQUIRE_APPROVAL:
        about = {"tether": {"approval_id": witness.approval_id}}
        if approval is not None and approval.status == "denied":  # by an in-process approver
            return {"decision": "deny", "reason_codes": ["approval_denied"],
                    "policy_references": refs, "policy_data": about,
                    "reasoning": f"{reasoning}; the approver {approval.approver!r} denied it"}
        if can_ask:
            return {"decision": "ask", "reasoning": reasoning, "policy_references": refs,
                    "policy_data": about, "ask_details": {
                        "approver": {"type": "human", "id": "tether-approvals",
                                     "endpoint": f"tether approvals approve "
                                                 f"{witness.approval_id}"},
                        "approval_id": witness.approval_id}}
        if defers_left > 0:
            return {"decision": "defer", "reasoning": reasoning, "policy_references": refs,
                    "reason_codes": ["approver_unavailable"], "policy_data": about,
                    "defer_details": {"reason": "pending_dependency",
                                      "resolution_method": "out_of_band_approval",
                                      "resolution_timeout_ms": int(approval_ttl * 1000),
                                      "timeout_decision": "deny"}}
        return {"decision": "deny", "reason_codes": ["approver_unavailable"],
                "policy_references": refs, "policy_data": about,
                "reasoning": f"{reasoning}; this client declared no approver and its "
                             "deferrals are spent: a person can approve the request in "
                             "tether's store, then the call may be sent again"}
    if decision.effect is Effect.DEGRADE:
        return {"decision": "deny", "reason_codes": ["degraded"], "policy_references": refs,
                "policy_data": {"tether": {"fallback": decision.fallback}},
                "reasoning": f"{reasoning}; the policy runs {decision.fallback!r} instead, "
                             "which the observed agent may call (decided on its own)"}
    return {"decision": "deny", "reasoning": reasoning or result.content[:300],
            "policy_references": refs, "reason_codes": [decision.effect.value]}


def _admitted(asked: Mapping[str, Any], decided: Mapping[str, Any], reasoning: str,
              refs: list[dict[str, str]]) -> dict[str, Any]:
    redactions = []
    for key in asked:
        if key not in decided:
            redactions.append({"path": pointer("arguments", key), "replacement": None})
        elif decided[key] != asked[key]:
            redactions.append({"path": pointer("arguments", key, "value"),
                               "replacement": decided[key]})
    if not redactions:
        return {"decision": "allow", "reasoning": reasoning, "policy_references": refs}
    return {"decision": "modify", "reasoning": reasoning, "policy_references": refs,
            "modifications": {"redactions": redactions}}


def output_answer(outputs: Any, fields: tuple[str, ...]) -> tuple[dict[str, Any], Any]:
    """The ACS decision for a ``toolCallResult`` whose call's decision masks ``fields`` of its
    output, and the outputs as they may be journaled."""
    if not fields or not isinstance(outputs, Mapping):
        return {"decision": "allow"}, outputs
    hit = [k for k in outputs if k in fields]
    if not hit:
        return {"decision": "allow"}, outputs
    shown = {k: MASKED if k in hit else v for k, v in outputs.items()}
    return {"decision": "modify", "reasoning": "the policy masks these fields of the output",
            "modifications": {"redactions": [{"path": pointer("outputs", k),
                                              "replacement": MASKED} for k in hit]}}, shown


def tool_of(method: str, payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The tool and arguments (``{name: {value, provenance?}}``) of a tool-call request."""
    if method == "protocols/MCP/tools/call":  # the MCP request's own shape
        name, plain = payload.get("name"), payload.get("arguments", {})
        if not isinstance(plain, Mapping):
            raise AcsRefused(INVALID_PARAMS, "invalid_tool_call", "arguments must be an object")
        asked: Any = {k: {"value": v} for k, v in plain.items()}
    else:
        tool = payload.get("tool")
        name = tool.get("name") if isinstance(tool, Mapping) else None
        asked = payload.get("arguments", {})
    if not isinstance(name, str) or not 0 < len(name) <= 200:
        raise AcsRefused(INVALID_PARAMS, "invalid_tool_call", "payload.tool.name is required")
    if not isinstance(asked, Mapping) or not all(
            isinstance(v, Mapping) and "value" in v for v in asked.values()):
        raise AcsRefused(INVALID_PARAMS, "invalid_tool_call",
                         "payload.arguments must map each name to {value, provenance?}")
    return name, asked
