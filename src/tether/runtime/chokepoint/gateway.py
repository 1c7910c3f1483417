"""A governed door for tool calls that no model asked for: MCP clients, other services.

Decision: a gateway is a long-lived session whose "turns" are single calls from a client. Each
call is journaled as ``client.call`` and then goes through exactly the same pipeline as an
agent's — gates, loop check, budget, policy, every effect, credentials, the journal — so serving
tether tools over MCP, or proxying another MCP server, adds no second path to a tool. A call
that needs approval returns a refusal naming the approval; once a person approves it, the same
call (same tool, same arguments) runs once when the client sends it again.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tether.journal.chain import Journal
from tether.policy.base import Decision, Effect, Policy, Subject
from tether.policy.deadline import DEFAULT_POLICY_TIMEOUT
from tether.policy.names import check_names
from tether.runtime.budget import Accountant, Budget
from tether.runtime.chokepoint.approvals import (
    ApprovalRequest,
    ApprovalStore,
    StoredApprovals,
    call_hash,
)
from tether.runtime.chokepoint.executor import ToolExecutor
from tether.runtime.chokepoint.gate import PolicyGate
from tether.runtime.chokepoint.turn import ToolCalls
from tether.runtime.limits import Limits
from tether.runtime.result import ToolResult
from tether.runtime.state import SessionState
from tether.runtime.stop import Stop
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.tools.base import Tool
from tether.tools.registry import ToolRegistry
from tether.types import ToolCall

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker

# A client decides its own retries and repetitions; only budgets and policy bound it.
CLIENT_LIMITS = Limits(loop_warn_at=10**9, loop_stop_at=10**9 + 1, tool_error_ceiling=10**9,
                       denial_ceiling=10**9)


class Gateway:
    """Tool calls from one client, governed and journaled as one session."""

    def __init__(self, tools: Iterable[Tool], *, policy: Policy, client: str = "client",
                 budget: Budget | None = None, store: Store | None = None,
                 approvals: ApprovalStore | None = None, roles: Iterable[str] = (),
                 tenant_id: str | None = None, limits: Limits | None = None,
                 approval_ttl: float = 24 * 3600.0, max_result_chars: int = 20_000,
                 session_id: str | None = None,
                 credentials: CredentialBroker | None = None,
                 policy_timeout: float | None = DEFAULT_POLICY_TIMEOUT,
                 check_policy_names: bool = True) -> None:
        self.registry = ToolRegistry(tools)
        if check_policy_names:  # a misspelt deny rule must not silently deny nothing
            check_names(policy, self.registry.specs, whose="the gateway's tools", advice=(
                "Fix the names; a policy shared by gateways whose tools differ can opt out "
                "with Gateway(..., check_policy_names=False)"))
        self.id = session_id or os.urandom(16).hex()
        self.subject = Subject(client, tenant_id, frozenset(roles), f"gateway:{client}")
        self.budget = budget or Budget()
        self._state = SessionState()
        self._journal = Journal(self.id, on_append=self._state.apply, store=store)
        self._accountant = Accountant(self.budget, None, self._state.tally)
        self._approvals = approvals or StoredApprovals(store or MemoryStore())
        gate = PolicyGate(policy, self.subject, self.id, self._journal, self._state,
                          self._accountant, {"client": client}, timeout=policy_timeout)
        # approvals are the client's, not this session's: a client that opens a new session
        # per call (the MCP Inspector does) finds, on its retry, the approval a person gave
        self._bound_to = f"client:{tenant_id or ''}:{client}"
        self._calls = ToolCalls(bound_to=self._bound_to,
            session_id=self.id, executor=ToolExecutor(self.registry, max_result_chars),
            gate=gate, accountant=self._accountant, journal=self._journal, state=self._state,
            limits=limits or CLIENT_LIMITS,
            approvals=self._approvals, approval_ttl=approval_ttl, credentials=credentials)
        self._credentials = credentials
        self._count = 0
        self._lock = asyncio.Lock()  # one call at a time: the budget is checked, then charged
        self._closed = False
        self._journal.append("session.start", {
            "task": f"tool calls from {client}", "system_prompt": "", "agent": "gateway",
            "model": "", "tools": list(self.registry.names), "budget": self.budget.to_dict(),
            "context": {"client": client},
            "subject": {"user_id": client, "tenant_id": tenant_id, "roles": sorted(roles)},
        })
        self._journal.flush()

    @property
    def approvals(self) -> ApprovalStore:
        return self._approvals

    @property
    def journal(self) -> Journal:
        return self._journal

    async def call(self, name: str, arguments: Mapping[str, Any] | str) -> ToolResult:
        """Decide and run one call; always returns a result (refusals and errors included).
        Calls of one gateway run one at a time, in the order they arrive."""
        async with self._lock:
            if self._closed:
                raise RuntimeError(f"gateway {self.id} is closed; open a new one")
            return await self._call(name, arguments)

    def close(self, reason: str = "client disconnected") -> None:
        """End the gateway's session: journal its end and spend, revoke its credentials."""
        if self._closed:
            return
        self._closed = True
        spend = self._accountant.spend()
        self._journal.append("session.end", {"reason": "finished", "detail": reason,
                                             "answer": "", "spend": spend.to_dict()})
        self._journal.flush()
        if self._credentials is not None:
            self._credentials.revoke_session(self.id)

    async def _call(self, name: str, arguments: Mapping[str, Any] | str) -> ToolResult:
        self._count += 1
        call = ToolCall(f"{self.id[:8]}-{self._count}", name, arguments)
        earlier = self._approved_earlier(call)
        self._journal.append("client.call", {"call": call})
        if earlier is not None:
            self._attach(call, earlier)
        try:
            (result,) = await self._calls.run([call])
        except Stop as stop:
            result = self._state.results.get(call.id) or self._waiting(call, stop)
        await self._journal.aflush()
        return result

    def _approved_earlier(self, call: ToolCall) -> ApprovalRequest | None:
        """An approved, unused, unexpired request for exactly this call, if a person gave one.
        What it hid from approvers is hidden from the journal too, before the call is recorded."""
        tool = self.registry.get(call.name)
        if tool is None or isinstance(call.arguments, str):
            return None
        try:
            arguments = tool.validate(call.arguments)
        except Exception:
            return None
        digest = call_hash(self._bound_to, tool.name, arguments)
        for record in self._approvals.approved_for(digest):
            if not record.expired():
                for key, shown in record.arguments.items():
                    if shown != arguments.get(key):
                        self._journal.hide_argument(call.id, key)
                        value = arguments[key]
                        self._journal.redact(value if isinstance(value, str)
                                             else json.dumps(value))
                return record
        return None

    def _attach(self, call: ToolCall, record: ApprovalRequest) -> None:
        """Journal the earlier approval as this call's, so the pipeline uses it (once)."""
        self._journal.append("approval.requested", {
            "approval_id": record.id, "call_id": call.id, "tool": record.tool,
            "arguments": record.arguments, "call_hash": record.call_hash,
            "reason": record.reason, "policy_id": record.policy_id,
            "requested_at": record.requested_at, "expires_at": record.expires_at,
            "reused": True})
        self._journal.append("tool.decision", {
            "call_id": call.id, "tool": record.tool, "arguments": record.arguments,
            "decision": Decision(Effect.REQUIRE_APPROVAL, record.reason, record.policy_id),
            "signature": "", "charged": False, "resource": None, "context": None})

    def _waiting(self, call: ToolCall, stop: Stop) -> ToolResult:
        approval = self._state.approvals.get(call.id)
        if approval is not None:
            return ToolResult(call.id, call.name, f"Approval required ({approval}): "
                              f"{stop.detail}. Ask a person to approve it, then make the same "
                              "call again.", "denied")
        return ToolResult(call.id, call.name, f"Not executed: {stop.detail} ({stop.reason}).",
                          "skipped")

