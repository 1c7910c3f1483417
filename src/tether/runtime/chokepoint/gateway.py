"""A governed door for tool calls that no model asked for: MCP clients, other services.

Decision: a gateway is a long-lived session whose "turns" are single calls from a client. Each
call is journaled as ``client.call`` and then goes through exactly the same pipeline as an
agent's — gates, loop check, budget, policy, every effect, credentials, the journal — so serving
tether tools over MCP, or proxying another MCP server, adds no second path to a tool. A call
that needs approval returns a refusal naming the approval; once a person approves it, the same
call (same tool, same arguments) runs once when the client sends it again. A client answered in
rounds (MCP 2026-07-28: the call asks it for input, and it calls again with the answer) takes
several calls to complete one: an approved call that asks carries its approval to the next
round (``_carry``), so one approval still admits one completed call — no fewer, no more.

A gateway lives as long as its client, for weeks. Its memory is bounded: it remembers its last
``window`` calls (loop check, provenance; ``SessionState``) and lets go of journal events once
the store holds them (``Journal.forget_stored``); without a store the journal is its memory.
With ``roll_calls`` or ``roll_seconds`` its journal rolls into linked segments
(``tether.journal.segments``): each a session of its own, whose start names the previous
segment's id and head hash, so an auditor verifies them as one chain. Budget, window and
redactions carry across a roll; approvals are the client's, in the approval store, so one
pending across a roll stays pending, and is used once, by the same call, in a later segment.

A client may name the span its call runs under (a W3C ``traceparent``; ``tether mcp serve``
takes it from the request's ``_meta``). It is parsed strictly (``TraceParent.parse``): a valid
one is journaled, re-serialized, on that call's ``client.call`` event, so telemetry — live or
re-derived from the store — parents the call's span under the client's; anything else is
dropped without a word, and the call runs all the same. With ``telemetry`` sinks, the gateway's
calls also carry their own span to the tool (``ToolContext.traceparent``: an MCP tool, as the
proxy's are, sends it on to its server), in the client's trace when it named one.

``quotas`` (``tether.policy.quotas``) that count tool calls are taken in the store as each call
is admitted, exactly as an agent's session takes them: a quota is shared by every gateway and
session on the store — by every replica of an MCP server on one store — where a ``budget`` is
this gateway's alone. A quota on tokens, cost or steps has no model call here to count.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, WrongState
from tether.journal.chain import Journal
from tether.journal.segments import NEXT, SEGMENT, link_to
from tether.policy.base import Decision, Effect, Policy, Subject
from tether.policy.deadline import DEFAULT_POLICY_TIMEOUT
from tether.policy.names import check_names
from tether.policy.quotas import Quota, check_quotas
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.budget import Budget
from tether.runtime.accounting.limits import Limits
from tether.runtime.accounting.quota import meter_for
from tether.runtime.accounting.stop import Stop
from tether.runtime.approvals.approver import Approver, ApproverFn, as_approver
from tether.runtime.approvals.requests import (
    ApprovalError,
    ApprovalRequest,
    ApprovalStore,
    StoredApprovals,
    call_hash,
    carried,
)
from tether.runtime.chokepoint.assembly import (
    RunContext,
    ToolDoor,
    assemble,
    subject_record,
    write_start,
)
from tether.runtime.chokepoint.executor import ToolExecutor
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.tools.base import Tool
from tether.tools.caller import SILENT, AnswersInRounds, Caller
from tether.tools.registry import ToolRegistry
from tether.tracing import Segment, TraceParent
from tether.types import Event, ToolCall
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker

# A client decides its own retries and repetitions; only budgets and policy bound it.
CLIENT_LIMITS = Limits(loop_warn_at=10**9, loop_stop_at=10**9 + 1, tool_error_ceiling=10**9,
                       denial_ceiling=10**9)
DEFAULT_WINDOW = 1000  # calls a gateway remembers: what a loop check and provenance look back on


def attach_approval(journal: Journal, call_id: str, record: ApprovalRequest,
                    signature: str = "") -> None:
    """Journal an approval requested earlier (by a client's or a framework's earlier try of the
    same call) as ``call_id``'s, with its decision, so the pipeline uses it — once, if a person
    approved it — instead of asking again."""
    journal.append(EventType.APPROVAL_REQUESTED, {
        "approval_id": record.id, "call_id": call_id, "tool": record.tool,
        "arguments": record.arguments, "call_hash": record.call_hash,
        "reason": record.reason, "policy_id": record.policy_id,
        "requested_at": record.requested_at, "expires_at": record.expires_at,
        "reused": True})
    journal.append(EventType.TOOL_DECISION, {
        "call_id": call_id, "tool": record.tool, "arguments": record.arguments,
        "decision": Decision(Effect.REQUIRE_APPROVAL, record.reason, record.policy_id),
        "signature": signature, "charged": False, "resource": None, "context": None})


class Gateway:
    """Tool calls from one client, governed and journaled as one session: each ``call`` goes
    through the same gates, policy, budget and journal as an agent's.

    Args:
        tools: The tools the client may call.
        policy: Decides every call.
        client: The client's name: the policy's subject (``user_id``) and the agent
            ``gateway:<client>``.
        budget: Limits over all the client's calls. Default None: unlimited.
        store: Where the journal (and, by default, approvals) are kept. Default None: memory.
        approvals: Where approval requests are kept. Default None: the store's.
        roles: The client's roles, for the policy.
        tenant_id: The client's tenant.
        limits: Loop and error ceilings. Default None: no loop, error or denial ceiling.
        approval_ttl: Seconds an approval request stays answerable.
        max_result_chars: A result longer than this is cut, with a notice.
        session_id: The journal session's id. Default None: a random one.
        credentials: Gives tools scoped tokens at call time (``CredentialBroker``).
        policy_timeout: Seconds a policy that may block has to decide; None: no limit.
        check_policy_names: Refuse a YAML policy whose rules name tools or arguments these
            tools do not have.
        window: Calls remembered for the loop check and provenance.
        roll_calls: Roll the journal into a new linked segment every this many calls (needs a
            store). None: never.
        roll_seconds: Roll it after this many seconds (needs a store). None: never.
        clock: The clock ``roll_seconds`` is measured on.
        telemetry: Subscribers told of every event; with any, calls carry their span.
        quotas: Limits shared with every session on the store; those on tool calls count
            this gateway's calls (needs a store that keeps quotas).
        context: More of what the journal's ``session.start`` says of the client (its
            ``context``, beside ``client``): an ACS Guardian names the session it serves.
        approver: Decides approval requests the moment they are made (``Approver``, or a
            callable ``(ApprovalRequest) -> True / False / None``); None: a person does.
    """

    def __init__(self, tools: Iterable[Tool], *, policy: Policy, client: str = "client",
                 budget: Budget | None = None, store: Store | None = None,
                 approvals: ApprovalStore | None = None, roles: Iterable[str] = (),
                 tenant_id: str | None = None, limits: Limits | None = None,
                 approval_ttl: float = 24 * 3600.0, max_result_chars: int = 20_000,
                 session_id: str | None = None,
                 credentials: CredentialBroker | None = None,
                 policy_timeout: float | None = DEFAULT_POLICY_TIMEOUT,
                 check_policy_names: bool = True,
                 window: int = DEFAULT_WINDOW, roll_calls: int | None = None,
                 roll_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 telemetry: Iterable[Callable[[Event], object]] = (),
                 quotas: Iterable[Quota] = (),
                 context: Mapping[str, str] | None = None,
                 approver: Approver | ApproverFn | None = None) -> None:
        if roll_calls is not None and roll_calls < 1:
            raise InvalidArgument("roll_calls must be at least 1, or None (no roll); got "
                                  f"{roll_calls}")
        if roll_seconds is not None and not roll_seconds > 0:
            raise InvalidArgument("roll_seconds must be more than 0, or None (no roll); got "
                                  f"{roll_seconds}")
        if store is None and (roll_calls is not None or roll_seconds is not None):
            raise InvalidArgument("rolling a gateway's journal needs a store: a segment it rolled "
                                  "over is kept by the store only; pass store=...")
        self._quotas = tuple(q for q in check_quotas(quotas) if q.counts == "tool_calls")
        if self._quotas and store is None:
            raise InvalidArgument("quotas are kept in the store, and this gateway has none: "
                                  "pass store=... (sqlite or postgres, shared by the replicas)")
        self.registry = ToolRegistry(tools)
        if check_policy_names:  # a misspelt deny rule must not silently deny nothing
            check_names(policy, self.registry.specs, whose="the gateway's tools", advice=(
                "Fix the names; a policy shared by gateways whose tools differ can opt out "
                "with Gateway(..., check_policy_names=False)"))
        self.subject = Subject(client, tenant_id, frozenset(roles), f"gateway:{client}")
        self.budget = budget or Budget()
        self._state = SessionState(window)
        self._store = store
        self._accountant = Accountant(self.budget, None, self._state.tally)
        self._approvals = approvals or StoredApprovals(store or MemoryStore())
        # approvals are the client's, not this session's: a client that opens a new session
        # per call (the MCP Inspector does) finds, on its retry, the approval a person gave
        self._bound_to = f"client:{tenant_id or ''}:{client}"
        self._credentials = credentials
        # sinks told of every event; with any, calls carry their span (tether.tracing)
        self._telemetry = tuple(telemetry)
        # what every segment's calls are governed by (a roll changes the run, not the door)
        self._door = ToolDoor(policy, self.subject, {"client": client},
                              ToolExecutor(self.registry, max_result_chars),
                              limits or CLIENT_LIMITS, self._approvals, approval_ttl,
                              policy_timeout, credentials=credentials, bound_to=self._bound_to,
                              approver=as_approver(approver), telemetry=self._telemetry)
        self._roll_calls, self._roll_seconds, self._clock = roll_calls, roll_seconds, clock
        self._context = {**(context or {}), "client": client}
        self._rolls = roll_calls is not None or roll_seconds is not None
        self._count = 0
        self._lock = asyncio.Lock()  # one call at a time: the budget is checked, then charged
        self._closed = False
        self._open(session_id or os.urandom(16).hex(), 1, None)

    def _open(self, session_id: str, segment: int, previous: Journal | None) -> None:
        """Start the gateway's journal session ``session_id`` (its ``segment``-th, after
        ``previous``), and the gate and pipeline that write to it."""
        self.id = session_id
        self.segment = segment
        journal = Journal(session_id, on_append=self._state.apply, store=self._store)
        if previous is not None:
            journal.inherit_redactions(previous)
            journal.bus = previous.bus  # subscribers hear every segment, as one journal
        else:
            for sink in self._telemetry:
                journal.bus.subscribe(sink)
        self._journal = journal
        self._accountant.quota = meter_for(self._quotas, self._store, self.subject, session_id,
                                           journal, None)
        client = self.subject.user_id
        run = RunContext(session_id, journal, self._state, self._accountant)
        self._calls = assemble(run, self._door).calls
        self._calls.delivered = {}  # results with parts reach the client whole
        start: dict[str, Any] = {
            "task": f"tool calls from {client}", "system_prompt": "", "agent": "gateway",
            "model": "", "tools": list(self.registry.names), "budget": self.budget.to_dict(),
            "context": dict(self._context),
            "subject": subject_record(self.subject),
        }
        if self._rolls:
            start[SEGMENT] = link_to(segment, previous, self._accountant.spend().to_dict())
        self._start_seq = write_start(journal, start)
        journal.flush()
        self._segment_calls, self._segment_opened = 0, self._clock()

    def _roll_due(self) -> bool:
        if self._roll_calls is not None and self._segment_calls >= self._roll_calls:
            return True
        return (self._roll_seconds is not None
                and self._clock() - self._segment_opened >= self._roll_seconds)

    async def _roll(self) -> None:
        """End this segment, naming the next, and open the next, linked to this one's head.
        The end is durable before the next segment starts."""
        old, following = self._journal, os.urandom(16).hex()
        old.append(EventType.SESSION_END, {
            "reason": "finished", "detail": f"rolled into the next segment, session {following}",
            "answer": "", "spend": self._accountant.spend().to_dict(), NEXT: following})
        await old.aflush()
        if self._credentials is not None:
            self._credentials.revoke_session(old.session_id)
        self._open(following, self.segment + 1, old)

    @property
    def approvals(self) -> ApprovalStore:
        """Where the gateway's approval requests are kept."""
        return self._approvals

    @property
    def journal(self) -> Journal:
        """The journal of the current segment (``id`` names its session): a roll replaces it;
        its bus is handed on, so what subscribed hears every segment's events, in order."""
        return self._journal

    async def call(self, name: str, arguments: Mapping[str, Any] | str, *,
                   traceparent: object = None, caller: Caller = SILENT,
                   stored: bool = True) -> ToolResult:
        """Decide and run one call; always returns a result (refusals and errors included).
        Calls of one gateway run one at a time, in the order they arrive. ``traceparent``,
        the client's span as it sent it, is used only if it is a valid W3C traceparent.
        ``caller``: the client waiting for this call, which the tool may tell its progress and
        logs, or ask (``tether.tools.caller``; scrubbed like the journal). A result the tool
        returned as ``Content`` keeps its parts (``ToolResult.parts``), masked as journaled.
        ``stored=False``: the call's events are published but not yet written; the caller
        writes them (``journal.aflush``), in one transaction with its own record of the call,
        before anything acts on the result (the ACS Guardian, whose tools the observed agent
        runs only once it is answered). A side effect's start is written before it runs all
        the same."""
        async with self._lock:
            if self._closed:
                raise WrongState(f"gateway {self.id} is closed; open a new one")
            return await self._call(name, arguments, TraceParent.parse(traceparent), caller,
                                    stored)

    def close(self, reason: str = "client disconnected") -> None:
        """End the gateway's session: journal its end and spend, revoke its credentials."""
        if self._closed:
            return
        self._closed = True
        spend = self._accountant.spend()
        self._journal.append(EventType.SESSION_END, {"reason": "finished", "detail": reason,
                                                     "answer": "", "spend": spend.to_dict()})
        self._journal.flush()
        if self._credentials is not None:
            self._credentials.revoke_session(self.id)

    async def _call(self, name: str, arguments: Mapping[str, Any] | str,
                    parent: TraceParent | None, caller: Caller = SILENT,
                    stored: bool = True) -> ToolResult:
        if self._rolls and self._roll_due():
            await self._roll()
        self._calls.caller = caller
        try:
            return await self._decide_and_run(name, arguments, parent, caller, stored)
        finally:
            self._calls.caller = SILENT

    async def _decide_and_run(self, name: str, arguments: Mapping[str, Any] | str,
                              parent: TraceParent | None, caller: Caller,
                              stored: bool = True) -> ToolResult:
        if not stored:  # what the caller's own flush wrote since the last call
            self._journal.forget_stored()
        self._count += 1
        self._segment_calls += 1
        call = ToolCall(f"{self.id[:8]}-{self._count}", name, arguments)
        earlier = self._approved_earlier(call)
        if self._telemetry:  # this call's span: in the client's trace, if it named one
            self._calls.trace_under(Segment(self.id, self._start_seq, parent))
        self._journal.append(EventType.CLIENT_CALL, {"call": call, **(
            {"traceparent": parent.header()} if parent is not None else {})})
        if earlier is not None:
            self._attach(call, earlier)
        try:
            (result,) = await self._calls.run([call])
        except Stop as stop:
            result = self._state.results.get(call.id) or self._waiting(call, stop)
        if stored:
            await self._journal.aflush()
            self._journal.forget_stored()
        else:
            self._journal.publish()  # subscribers told now; written by the caller's flush
        if earlier is not None and isinstance(caller, AnswersInRounds) and caller.asked:
            self._carry(earlier, call)
        delivered = self._calls.delivered
        whole = delivered.pop(call.id, None) if delivered is not None else None
        if delivered:
            delivered.clear()  # a degraded call's fallback, or a stale one: never kept
        return whole if whole is not None and whole.content == result.content else result

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

    def _carry(self, used: ApprovalRequest, call: ToolCall) -> None:
        """``call``, admitted by the approval ``used``, asked its caller for input, and comes
        again with the answer as a new call: the approval carries to it, as a new single-use
        approval of exactly this call (same client, tool and arguments, same expiry), decided
        ``carried`` from ``used`` — anchored like any decision, and found by the next round as
        any earlier approval is. Each round that asks renews it; the one that completes uses it
        up, so replaying a round, or calling again, waits for a person. An expired approval is
        not carried."""
        renewed = carried(used, session_id=self.id, call_id=call.id)
        self._approvals.add(renewed)
        with contextlib.suppress(ApprovalError):
            self._approvals.approve(
                renewed.id, approver=used.approver or "unknown", method="carried",
                break_glass=used.break_glass,
                note=f"carried from {used.id}: call {call.id} asked its MCP client for input "
                     "and comes again with the answer")

    def _attach(self, call: ToolCall, record: ApprovalRequest) -> None:
        """Journal the earlier approval as this call's, so the pipeline uses it (once)."""
        attach_approval(self._journal, call.id, record)

    def _waiting(self, call: ToolCall, stop: Stop) -> ToolResult:
        approval = self._state.approvals.get(call.id)
        if approval is not None:
            return ToolResult(call.id, call.name, f"Approval required ({approval}): "
                              f"{stop.detail}. Ask a person to approve it, then make the same "
                              "call again.", "denied")
        return ToolResult(call.id, call.name, f"Not executed: {stop.detail} ({stop.reason}).",
                          "skipped")

