"""The tool side of the chokepoint: one turn's calls, each gated, decided, run and recorded.

A tool call reads as one pipeline, top to bottom: **settle what waits** (a call the journal
already knows — interrupted, approved or decided earlier — is settled by ``held.py``, not decided
anew), **admit what is new** (resolve and validate, loop check, budget check, policy decision),
**run** (in batches; a side-effecting call alone, journaled ``tool.started`` and durable before
it can happen) and **record** (``tool.result``).

Decision: the policy's decision is enforced before anything runs: ALLOW runs; DENY refuses;
PARTIAL_ALLOW runs with only the named fields; MASK runs with the named fields redacted from the
input, the output and/or the journal; DEGRADE runs a fallback tool, whose call is decided again;
REQUIRE_APPROVAL records an approval request and holds the call. Once a call of a turn waits for
approval, later calls are still decided (so every approval a turn needs is asked for at once) but
none runs before it, so side effects keep their order. Every call gets a result; a reason to stop
is raised only after that.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tether.journal.chain import Journal
from tether.journal.redaction import HiddenValues
from tether.models.base import CHARS_PER_TOKEN
from tether.policy.base import Decision, Effect
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.budget import Spend, check_charge
from tether.runtime.accounting.limits import Limits
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.approvals.approver import Approver
from tether.runtime.approvals.requests import ApprovalStore
from tether.runtime.chokepoint.additions import WARNING, fallback_note
from tether.runtime.chokepoint.asks import SessionAsks
from tether.runtime.chokepoint.effects import (
    Admitted,
    masked_for_journal,
    refusal,
    shape,
    skipped,
)
from tether.runtime.chokepoint.executor import Rejected, ToolExecutor, check_not_cancelled
from tether.runtime.chokepoint.gate import PolicyGate
from tether.runtime.chokepoint.halts import commit_start, stop_if_halted, watch_of
from tether.runtime.chokepoint.held import HeldCalls, Holds
from tether.runtime.provenance.inherited import inherit
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState, call_signature
from tether.tools.base import ToolContext
from tether.tools.caller import SILENT, Caller, Scrubbed
from tether.tools.content import Text, describe, scrubbed
from tether.tracing import Segment
from tether.types import BRANCH_CALL_PREFIX, ToolCall, detached
from tether.vocabulary import EventType

if TYPE_CHECKING:  # the credentials package is loaded when a tool first needs a token
    from tether.credentials import CredentialBroker, ScopedToken
    from tether.models.base import Model


# read on every call: bound once (an enum member read through its class is slow, benchmarks.md)
_DEGRADE, _REQUIRE_APPROVAL = Effect.DEGRADE, Effect.REQUIRE_APPROVAL
_TOOL_RESULT = EventType.TOOL_RESULT

MAX_DEGRADE_DEPTH = 3
RESULT_OVERHEAD_TOKENS = 48  # message framing, the truncation notice, a loop warning
MIN_RESULT_CHARS = 80  # below this a result says nothing; the wrap-up is then best effort


@dataclass(slots=True)
class _Turn(Holds):  # the calls held back for a person (held.py), and what the turn runs
    stop: Stop | None = None
    batch: list[Admitted] = field(default_factory=list)


class ToolCalls:
    __slots__ = (
        "_accountant",
        "_asks",
        "_credentials",
        "_executor",
        "_gate",
        "_halts",
        "_held",
        "_journal",
        "_limits",
        "_session_id",
        "_state",
        "_telemetry",
        "_trace",
        "caller",
        "delivered",
        "room",
    )

    def __init__(self, *, session_id: str, executor: ToolExecutor, gate: PolicyGate,
                 accountant: Accountant, journal: Journal, state: SessionState, limits: Limits,
                 approvals: ApprovalStore, approval_ttl: float,
                 credentials: CredentialBroker | None = None,
                 kept: Callable[[str], Mapping[str, Any] | None] | None = None,
                 bound_to: str | None = None, approver: Approver | None = None,
                 trace: Segment | None = None,
                 telemetry: tuple[Callable[[Any], object], ...] = (),
                 model: Model | None = None) -> None:
        self._session_id = session_id
        self._trace = trace  # the run's trace segment, when the recipe has telemetry
        self._telemetry = telemetry
        # whose approvals these are: the session's, or for a gateway its client's, so a call
        # the client retries in a new session finds the approval a person gave
        bound_to = bound_to or session_id
        self._executor = executor
        self._gate = gate
        self._accountant = accountant
        self._journal = journal
        self._state = state
        self._limits = limits
        self._credentials = credentials
        self._halts = watch_of(journal.store)  # the store's halts, as last read (halts.py)
        # what waits from an earlier pass over the turn, and new calls held for a person
        self._held = HeldCalls(session_id=session_id, bound_to=bound_to, executor=executor,
                               accountant=accountant, journal=journal, state=state,
                               approvals=approvals, approval_ttl=approval_ttl, approver=approver,
                               kept=kept, tenant_id=gate.subject.tenant_id)
        # what a call may ask of the session while it runs (sampling: on ``model``; None: refused)
        self._asks = SessionAsks(session_id=session_id, journal=journal, accountant=accountant,
                                 model=model, approvals=approvals, bound_to=bound_to,
                                 tenant_id=gate.subject.tenant_id)
        # tokens results may still add so the wrap-up fits (bound by the Environment)
        self.room: Callable[[int], int | None] = lambda wanted: None
        # whoever waits for the next calls' results (a gateway sets its client's per call)
        self.caller: Caller = SILENT
        # the results with parts (Content), as recorded, by call id, for a gateway to hand to
        # its client; None (an agent's session): not kept, the model reads their text
        self.delivered: dict[str, ToolResult] | None = None

    def trace_under(self, trace: Segment | None) -> None:
        """The trace segment the next calls' spans belong to (a gateway's calls each join the
        trace their client named)."""
        self._trace = trace

    def invalid(self, call: ToolCall) -> ToolResult | None:
        """The gate's refusal of a call whose tool is unknown or whose arguments do not match its
        schema (None: it is well formed) — checked, not decided, not run, not journaled."""
        try:
            self._executor.resolve(call)
        except Rejected as rejected:
            return rejected.result
        return None

    def side_effecting(self, name: str) -> bool:
        """Whether the tool named ``name`` declares side effects (an unknown one does not: the
        gate refuses it)."""
        tool = self._executor.registry.get(name)
        return tool is not None and tool.meta.side_effect

    async def run(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Resolve ``calls`` (unresolved calls of the open turn), in order."""
        stop_if_halted(self._halts, self._journal)
        turn = _Turn()
        for call in calls:
            admitted = self._one(call, turn)
            if admitted is None or turn.blocked:
                continue  # resolved already, waits for a person, or waits behind a call that does
            if admitted.tool.meta.side_effect:  # runs alone, after everything before it
                await self._flush(turn)
                turn.batch.append(admitted)
                await self._flush(turn)
            else:
                turn.batch.append(admitted)
        await self._flush(turn)
        state = self._state
        if turn.uncertain:
            raise Stop(StopReason.UNCERTAIN_EFFECT,
                       f"call(s) {turn.uncertain} started before the process stopped and have no "
                       "result; an operator must settle each: retry or skip")
        if turn.waiting:
            raise Stop(StopReason.NEEDS_APPROVAL,
                       f"{len(turn.waiting)} call(s) wait for approval")
        if turn.stop is not None:
            raise turn.stop
        errors, denials = state.streaks()
        if errors >= self._limits.tool_error_ceiling:
            raise Stop(StopReason.TOOL_ERROR_CEILING, f"{errors} tool calls failed in a row")
        if denials >= self._limits.denial_ceiling:
            raise Stop(StopReason.DENIED, f"{denials} tool calls were refused in a row")
        return tuple(state.results[c.id] for c in calls)

    def _one(self, call: ToolCall, turn: _Turn) -> Admitted | None:
        """The call cleared to run, or None once it has its result or waits for a person."""
        if turn.stop is not None:
            self.record(skipped(call, f"the run is stopping ({turn.stop.reason})"))
            return None
        try:
            if self._held.waits(call):  # from an earlier pass: settled, not decided anew
                admitted = self._held.settle(call, turn)
            else:
                admitted = self._admit(call, turn)
            quota = self._accountant.quota
            if quota is not None and admitted is not None:  # counted as it is admitted
                quota.take_tool(admitted.tool.name)
        except Rejected as rejected:  # named as the model called it, even if degraded
            r = rejected.result
            self.record(r if r.name == call.name else ToolResult(call.id, call.name, r.content,
                                                                  r.status))
            return None
        except Stop as stop:
            turn.stop = stop
            self.record(skipped(call, f"{stop.detail}; the run is stopping ({stop.reason})"))
            return None
        return admitted

    def _admit(self, call: ToolCall, turn: _Turn, depth: int = 0,
               prefix: str = "") -> Admitted | None:
        """Gates in order: resolve and validate, loop, budget, policy."""
        tool, arguments = self._executor.resolve(call)
        signature = call_signature(call.name, arguments)
        # a search's repeats across its branches are exploration, bounded by its own depth and
        # the budget; the loop check counts the session's own trajectory
        seen = 0 if call.id.startswith(BRANCH_CALL_PREFIX) else self._state.signatures.get(
            signature, 0)
        if seen + 1 >= self._limits.loop_stop_at:
            raise Stop(StopReason.LOOP_DETECTED,
                       f"the identical call {call.name!r} was repeated {seen + 1} times")
        self._accountant.check_tool_call()
        decision = self._gate.decide(tool, call.id, arguments, signature, masked_for_journal)
        warn = seen + 1 >= self._limits.loop_warn_at
        if decision.effect is _DEGRADE:
            return self._degrade(call, decision, turn, depth, arguments)
        if decision.effect is _REQUIRE_APPROVAL:
            return self._held.ask(call, tool, arguments, decision, turn)
        return shape(call, tool, arguments, decision, warn, prefix)

    def _degrade(self, call: ToolCall, decision: Decision, turn: _Turn, depth: int,
                 arguments: dict[str, Any]) -> Admitted | None:
        fallback = decision.fallback
        if not fallback or self._executor.registry.get(fallback) is None:
            raise Rejected(refusal(call, f"policy would degrade to {fallback!r}, which this "
                                         "agent does not have"))
        if depth + 1 >= MAX_DEGRADE_DEPTH:
            raise Rejected(refusal(call, "policy degraded the call too many times"))
        if call.id.startswith(BRANCH_CALL_PREFIX) and self.side_effecting(fallback):
            raise Rejected(refusal(call, f"policy would run {fallback!r} instead, which has side "
                                         "effects; an explored branch runs none"))
        prefix = fallback_note(fallback, call.name, decision.reason)
        admitted = self._admit(ToolCall(call.id, fallback, arguments), turn, depth + 1, prefix)
        return None if admitted is None else replace(admitted, call=call)

    async def _flush(self, turn: _Turn) -> None:
        batch, turn.batch = turn.batch, []
        if not batch:
            return
        effects = [a for a in batch if a.tool.meta.side_effect]
        for admitted in effects:  # recorded, and durable, before the effect can happen
            self._journal.append(EventType.TOOL_STARTED, {"call_id": admitted.call.id,
                                                  "tool": admitted.tool.name})
        if effects:  # a read-only call lost in a crash is simply run again
            await commit_start(self._journal, self._state, effects[0].call.id)  # halts.py
        else:
            self._journal.publish()
        limit = self._result_chars(len(batch))
        # a share at its floor has no room for the loop warning (the overhead it is counted in
        # is spent): it is left out, so the results stay inside the wrap-up's held-back room;
        # a further repeat stops the run all the same
        warning_fits = limit is None or limit > MIN_RESULT_CHARS
        runs = [self._execute(a, limit) for a in batch]
        outcomes = await asyncio.gather(*runs) if len(runs) > 1 else [await runs[0]]
        for admitted, (result, budget_timeout) in zip(batch, outcomes, strict=True):
            warn = admitted.warn and warning_fits
            if admitted.prefix or (warn and result.status == "ok"):
                content = admitted.prefix + result.content + (WARNING if warn else "")
                parts = result.parts and (
                    *((Text(admitted.prefix.rstrip("\n")),) if admitted.prefix else ()),
                    *result.parts, *((Text(WARNING.lstrip("\n")),) if warn else ()))
                result = ToolResult(result.call_id, result.name, content, result.status, parts)
            meta = admitted.tool.meta
            self.record(result, meta.output_trust == "untrusted", meta.trusted_fields,
                        meta.private_for(admitted.arguments),
                        self._gate.asked_by(result.call_id, meta))  # provenance.inherited
            if budget_timeout and result.status == "timeout" and turn.stop is None:
                turn.stop = Stop(StopReason.TIME_BUDGET, "time budget ran out during a tool call")
        check_not_cancelled()

    def _result_chars(self, running: int) -> int | None:
        """Characters each result of this batch may have, sharing the budget's room for results
        with every call of the turn still to come; None when the budget does not bound it."""
        calls = max(running, len(self._state.unresolved()))
        wanted = calls * (self._executor.max_result_chars // CHARS_PER_TOKEN
                          + RESULT_OVERHEAD_TOKENS)
        room = self.room(wanted)
        if room is None:
            return None
        per_call = room // calls - RESULT_OVERHEAD_TOKENS
        return max(MIN_RESULT_CHARS, per_call * CHARS_PER_TOKEN)

    async def _execute(self, admitted: Admitted, max_chars: int | None) -> tuple[ToolResult, bool]:
        timeout, is_budget = self._accountant.tool_timeout(admitted.tool.meta.timeout)
        subject = self._gate.subject
        call, tool = admitted.call, admitted.tool
        scrubbers: list[Callable[[str], str]] = []
        if admitted.scrub_values:
            scrubbers.append(HiddenValues(admitted.scrub_values).blank)
        token = None
        if tool.meta.credentials:  # issuing the token shares the tool's timeout
            started = time.monotonic()
            try:
                async with asyncio.timeout(timeout):
                    token = await self._issue(tool.name)
            except TimeoutError:
                token = None
            except Rejected as rejected:
                return ToolResult(call.id, call.name, rejected.result.content, "error"), False
            timeout -= time.monotonic() - started
            if token is None or timeout <= 0:
                return ToolResult(call.id, call.name, f"Error: {tool.name!r} timed out waiting "
                                  "for its credentials; it did not run.", "timeout"), is_budget
            scrubbers.append(token.redact)
            self._journal.scrub_with(token.redact, token.scrubs)
            # the token's random id and limits, for audits: never its value (ScopedToken.to_dict)
            self._journal.append(EventType.CREDENTIAL_ISSUED, {
                "call_id": call.id, "tool": tool.name, "token_id": token.id,
                "ttl": token.ttl, "max_uses": token.max_uses})
        def scrub(text: str) -> str:
            for fn in scrubbers:
                text = fn(text)
            return text

        def charge(spend: Spend) -> None:
            check_charge(spend)
            self._accountant.release(call.id)
            u = spend.usage
            self._journal.append(EventType.SUBAGENT_CHARGE, {
                "call_id": call.id, "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens, "cached_input_tokens": u.cached_input_tokens,
                "cost_usd": spend.cost_usd, "steps": spend.steps,
                "tool_calls": spend.tool_calls})

        context = ToolContext(self._session_id, call.id, self._state.tally.steps,
                              subject.user_id, subject.tenant_id, credentials=token,
                              sub_budget=lambda: self._accountant.lease(call.id),
                              charge=charge, policy=self._gate.policy, timeout=timeout,
                              request=self._gate.request,
                              traceparent=self._trace.tool_call_header(call.id)
                              if self._trace is not None else "",
                              telemetry=self._telemetry,
                              asks=self._asks,
                              caller=self.caller if self.caller is SILENT else
                              Scrubbed(self.caller, lambda text: self._journal.hide_secrets(
                                  scrub(text))))

        result = await self._executor.run(
            tool, call.id, detached(admitted.arguments), context, timeout,
            mask_fields=admitted.mask_output, scrub=scrub if scrubbers else None,
            max_chars=max_chars)
        if result.call_id != call.id or result.name != call.name:
            result = ToolResult(call.id, call.name, result.content, result.status, result.parts)
        return result, is_budget

    async def _issue(self, tool: str) -> ScopedToken:
        """A token for this call, or Rejected with an error the model can act on."""
        def error(why: str) -> Rejected:
            return Rejected(ToolResult("", tool, f"Error: {tool!r} needs credentials, and "
                                       f"{why}; the tool did not run.", "error"))

        if self._credentials is None:
            raise error("this agent has no CredentialBroker (Agent(credentials=...))")
        from tether.credentials import CredentialError

        try:
            token = await self._credentials.aissue(self._session_id, tool)
        except CredentialError as exc:
            raise error(f"none could be issued ({exc})") from None
        if token is None:
            raise error("no credential is registered for it")
        return token

    def record(self, result: ToolResult, untrusted: bool = False,
               trusted_fields: frozenset[str] = frozenset(),
               private: Mapping[str, str] | None = None, asked_by: Sequence[str] = ()) -> None:
        content = self._journal.hide_secrets(result.content)  # any tool's, not only its own
        data: dict[str, Any] = {"call_id": result.call_id, "tool": result.name,
                                "status": result.status, "content": content}
        if result.parts:  # binary by size and digest, never its bytes (tether.tools.content)
            data["parts"] = describe(result.parts)
            if self.delivered is not None:
                self.delivered[result.call_id] = ToolResult(
                    result.call_id, result.name, content, result.status,
                    scrubbed(result.parts, self._journal.hide_secrets))
        if private and result.status == "ok":  # its private keys (tether.runtime.provenance.labels)
            data["private"] = dict(private)
        if untrusted:
            data["untrusted"] = True
            if trusted_fields and result.status == "ok":  # tether.runtime.provenance.values
                data["trusted_fields"] = sorted(trusted_fields)
        inherit(data, asked_by)  # asked for by untrusted text alone: untrusted (inherited.py)
        self._journal.append(_TOOL_RESULT, data)
