"""The Environment: the single chokepoint every model call and every tool call passes.

Decision: this class only sequences; each concern is its own part — the Accountant (budgets), the
PolicyGate (SARC and decisions), the ToolExecutor (gates, timeouts, truncation) and the Journal
(the record, which also drives the state projection). For a model call: reserve, record the
request, call within the deadline, record the response and its charge. For a tool call: resolve
and validate, check loops and budget, decide, run, record. Every call the model asked for gets a
result, in order, whatever happens; a reason to stop is raised only after that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.models.base import Model, estimate_tools_tokens
from tether.policy.base import Effect
from tether.runtime.budget import Accountant
from tether.runtime.executor import Rejected, ToolExecutor
from tether.runtime.gate import PolicyGate
from tether.runtime.journal import Journal
from tether.runtime.result import ToolResult, ToolStatus
from tether.runtime.state import SessionState, call_signature
from tether.runtime.stop import Stop, StopReason
from tether.tools.base import Tool, ToolContext
from tether.types import Message, ModelRequest, ModelResponse, ToolCall

_ERRORS: frozenset[ToolStatus] = frozenset({"error", "timeout", "rejected"})


@dataclass(frozen=True, slots=True)
class Limits:
    """Run-shape limits that are not spend: loop detection and the tool-error ceiling."""

    loop_warn_at: int = 2  # the Nth identical call gets a warning in its result
    loop_stop_at: int = 3  # the Nth identical call is not executed and the run stops
    tool_error_ceiling: int = 5  # consecutive failed tool calls before the run stops

    def __post_init__(self) -> None:
        if not 1 <= self.loop_warn_at < self.loop_stop_at:
            raise ValueError("Limits need 1 <= loop_warn_at < loop_stop_at")
        if self.tool_error_ceiling < 1:
            raise ValueError("Limits.tool_error_ceiling must be >= 1")


@dataclass(slots=True)
class _Admitted:
    index: int
    tool: Tool
    call: ToolCall
    arguments: dict[str, Any]
    warn: bool


class Environment:
    __slots__ = ("_accountant", "_consecutive_errors", "_executor", "_gate", "_journal",
                 "_limits", "_model", "_pending", "_sent_estimate", "_show_budget", "_state",
                 "_tools_estimate", "session_id")

    def __init__(self, *, session_id: str, model: Model, executor: ToolExecutor,
                 gate: PolicyGate, accountant: Accountant, journal: Journal,
                 state: SessionState, limits: Limits, show_budget: bool,
                 opening: Sequence[Message]) -> None:
        self.session_id = session_id
        self._model = model
        self._executor = executor
        self._gate = gate
        self._accountant = accountant
        self._journal = journal
        self._state = state
        self._limits = limits
        self._show_budget = show_budget
        self._pending: list[Message] = list(opening)
        self._sent_estimate = 0
        self._tools_estimate = estimate_tools_tokens(executor.registry.specs)
        self._consecutive_errors = 0

    # -- model calls ---------------------------------------------------------------------------

    async def ask_model(self, *, final: bool = False, note: str | None = None) -> ModelResponse:
        """Make one governed model call; raise Stop if the budget does not allow it."""
        new = list(self._pending)
        if note:
            new.append(Message.user(note))
        if self._show_budget and not final:
            new.append(Message.user(self._budget_note()))
        estimate = self._model.estimate_message_tokens
        new_estimate = sum(estimate(m) for m in new)
        specs = () if final else self._executor.registry.specs
        input_estimate = self._sent_estimate + new_estimate + (
            self._tools_estimate if specs else 0)
        reservation = self._accountant.reserve_model_call(input_estimate, final)
        step = self._state.tally.steps + 1
        self._journal.append("model.request", {
            "step": step, "ref": len(self._state.conversation),
            "new": new, "tools": self._executor.registry.names if specs else (),
            "max_output_tokens": reservation.max_output_tokens, "final": final,
            "reserved_input": reservation.input_tokens,
            "reserved_cost_usd": str(reservation.cost_usd),
        })
        self._pending = []
        self._sent_estimate += new_estimate
        request = ModelRequest(tuple(self._state.conversation), specs,
                               reservation.max_output_tokens, input_estimate)
        timer = None if reservation.deadline is None else asyncio.timeout_at(
            reservation.deadline)
        try:
            if timer is None:
                response = await self._model.complete(request)
            else:
                async with timer:
                    response = await self._model.complete(request)
            if not isinstance(response, ModelResponse):
                raise TypeError(f"model returned {type(response).__name__}, not ModelResponse")
        except Exception as exc:
            if timer is not None and timer.expired():
                self._journal.append("model.error", {"step": step, "error": "time budget ran "
                                                     "out during the call; it was cancelled"})
                raise Stop(StopReason.TIME_BUDGET,
                           "time budget ran out during a model call") from None
            error = f"{type(exc).__name__}: {exc}"
            self._journal.append("model.error", {"step": step, "error": error})
            raise Stop(StopReason.MODEL_ERROR, error) from exc
        self._journal.append("model.response", {
            "step": step, "response": response,
            "cost_usd": str(self._accountant.cost_of(response.usage)),
            "reserved_input": reservation.input_tokens,
        })
        self._sent_estimate += estimate(self._state.conversation[-1])
        return response

    def _budget_note(self) -> str:
        left = {k: str(v) for k, v in self._accountant.remaining().items() if v is not None}
        return "[tether] budget left: " + (", ".join(f"{k}={v}" for k, v in left.items())
                                           or "unlimited")

    def remaining_budget(self) -> dict[str, Any]:
        return self._accountant.remaining()

    # -- tool calls ----------------------------------------------------------------------------

    async def call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run a turn's tool calls through the gates; every call gets a result, in order.

        Read-only calls that are adjacent run concurrently; a side-effecting call runs alone, in
        order. Raises Stop (after all results are recorded) when a limit was reached.
        """
        results: list[ToolResult | None] = [None] * len(calls)
        batch: list[_Admitted] = []
        stop: Stop | None = None
        for index, call in enumerate(calls):
            if stop is not None:
                results[index] = self._record(ToolResult(
                    call.id, call.name, f"Not executed: the run is stopping ({stop.reason}).",
                    "skipped"))
                continue
            try:
                admitted = self._admit(index, call)
            except Rejected as rejected:
                results[index] = self._record(rejected.result)
                continue
            except Stop as reached:
                stop = reached
                results[index] = self._record(ToolResult(
                    call.id, call.name, f"Not executed: {reached.detail}; the run is stopping "
                    f"({reached.reason}).", "skipped"))
                continue
            if admitted.tool.meta.side_effect:
                stop = await self._run_batch(batch, results) or stop
                batch = []
                stop = await self._run_batch([admitted], results) or stop
            else:
                batch.append(admitted)
        stop = await self._run_batch(batch, results) or stop
        done = tuple(r for r in results if r is not None)
        self._pending.extend(Message.tool(r.call_id, r.name, r.content) for r in done)
        if stop is None and self._consecutive_errors >= self._limits.tool_error_ceiling:
            stop = Stop(StopReason.TOOL_ERROR_CEILING,
                        f"{self._consecutive_errors} tool calls failed in a row")
        if stop is not None:
            raise stop
        return done

    def _admit(self, index: int, call: ToolCall) -> _Admitted:
        """Gates in order: resolve and validate, loop, budget, policy. Raise Rejected or Stop."""
        tool, arguments = self._executor.resolve(call)
        signature = call_signature(call.name, arguments)
        seen = self._state.signatures.get(signature, 0)
        if seen + 1 >= self._limits.loop_stop_at:
            raise Stop(StopReason.LOOP_DETECTED,
                       f"the identical call {call.name!r} was repeated {seen + 1} times")
        self._accountant.check_tool_call()
        decision = self._gate.decide(tool, call.id, arguments, signature)
        if decision.effect is not Effect.ALLOW:
            reason = decision.reason or "not permitted"
            raise Rejected(ToolResult(call.id, call.name, f"Refused: calling {call.name!r} is "
                                      f"not permitted ({reason}). Do not retry this call; "
                                      "continue without it or explain what is blocked.",
                                      "denied"))
        return _Admitted(index, tool, call, arguments, seen + 1 >= self._limits.loop_warn_at)

    async def _run_batch(self, batch: list[_Admitted],
                         results: list[ToolResult | None]) -> Stop | None:
        if not batch:
            return None
        runs = [self._run_one(a) for a in batch]
        outcomes = await asyncio.gather(*runs) if len(runs) > 1 else [await runs[0]]
        stop: Stop | None = None
        for admitted, (result, budget_timeout) in zip(batch, outcomes, strict=True):
            if admitted.warn and result.status == "ok":
                result = ToolResult(result.call_id, result.name, result.content + (
                    "\n[tether warning: this exact call was already made. Repeating it again "
                    "will stop the run.]"), result.status)
            results[admitted.index] = self._record(result, untrusted=(
                admitted.tool.meta.output_trust == "untrusted"))
            if budget_timeout and result.status == "timeout":
                stop = Stop(StopReason.TIME_BUDGET, "time budget ran out during a tool call")
        return stop

    async def _run_one(self, admitted: _Admitted) -> tuple[ToolResult, bool]:
        timeout, is_budget = self._accountant.tool_timeout(admitted.tool.meta.timeout)
        subject = self._gate.subject
        context = ToolContext(self.session_id, admitted.call.id, self._state.tally.steps,
                              subject.user_id, subject.tenant_id)
        result = await self._executor.run(admitted.tool, admitted.call.id,
                                          dict(admitted.arguments), context, timeout)
        return result, is_budget

    def _record(self, result: ToolResult, untrusted: bool = False) -> ToolResult:
        self._consecutive_errors = (self._consecutive_errors + 1 if result.status in _ERRORS
                                    else 0)
        data: dict[str, Any] = {"call_id": result.call_id, "tool": result.name,
                                "status": result.status, "content": result.content}
        if untrusted:
            data["untrusted"] = True
        self._journal.append("tool.result", data)
        return result
