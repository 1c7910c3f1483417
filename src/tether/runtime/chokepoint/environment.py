"""The Environment: the single chokepoint every model call and every tool call passes.

Decision: this class only sequences; each concern is its own part — the Accountant (budgets), the
PolicyGate (SARC and decisions), ToolCalls (a turn's calls: gates, effects, approvals, running) and
the Journal (the record, which also drives the state projection). For a model call: reserve, record
the request, call within the deadline, check the reported usage against the reservation (an overrun
stops the run), record the response and its charge — through the one governed call every door uses
(``tether.runtime.chokepoint.model_call``), made once per session for its turns; a call that fails
is recorded by ``tether.runtime.chokepoint.failures``. What the next request adds comes from the
journaled state, so an Environment rebuilt on resume picks up exactly where the last one stopped.
The Environment remembers the Stop it raised and raises it again on every later call
(``StopLatch``), so no strategy can go on, or end the run another way, after a stop.

Its seams, each a public protocol it implements, so nothing outside reads its private fields:

- ``TurnShaper`` / ``TurnSeat`` (``tether.runtime.chokepoint.shaper``): what shapes a turn —
  compaction, tool selection — handed to it as an ordered tuple (empty: the plain path);
- ``Seat`` (``tether.runtime.strategy.seat``): what a strategy's doors beyond the turn and the
  tool calls need — a call on a branch's context (``tether.runtime.chokepoint.branch_call``),
  calls run through the gate, a note journaled, the conversation grown by a planned turn;
- ``RunContext`` (``tether.runtime.chokepoint.assembly``): the run's session id, journal, state,
  accountant and trace, passed once.

What of an answer may be charged and run (its usage, a call cut short, unique ids) is
``tether.runtime.accounting.answer_calls``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tether.models.base import (
    Model,
    estimate_tools_tokens,
    min_answer_seconds,
    output_ceiling,
)
from tether.runtime.accounting.accountant import Reservation
from tether.runtime.accounting.answer_calls import unique_ids, without_cut_call
from tether.runtime.accounting.stop import Stop, StopLatch
from tether.runtime.chokepoint.assembly import RunContext
from tether.runtime.chokepoint.branch_call import Asking, BranchCall, ask_on_branch
from tether.runtime.chokepoint.checks import check_open, check_turn
from tether.runtime.chokepoint.effects import skipped
from tether.runtime.chokepoint.failures import Failures
from tether.runtime.chokepoint.model_call import ModelCall, streamed
from tether.runtime.chokepoint.output import OutputCheck
from tether.runtime.chokepoint.shaper import Offered, TurnShaper
from tether.runtime.chokepoint.turn import ToolCalls
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState
from tether.types import (
    TOOL_CHOICES,
    Message,
    ModelRequest,
    ModelResponse,
    StructuredRequest,
    ToolCall,
    ToolSpec,
    detached,
)
from tether.vocabulary import EventType


class Environment:
    __slots__ = ("_accountant", "_answered", "_call", "_ceiling", "_choosable", "_failed",
                 "_failures", "_first_tool_choice", "_journal", "_min_seconds", "_model",
                 "_on_delta", "_output", "_pending", "_seen_ids", "_sent_estimate", "_shapers",
                 "_show_budget", "_specs", "_state", "_tool_names", "_tools", "_tools_added",
                 "_tools_estimate", "_trace", "stopped")

    def __init__(self, run: RunContext, *, model: Model, specs: Sequence[ToolSpec],
                 tools: ToolCalls, show_budget: bool, on_delta: Callable[[str], None] | None = None,
                 first_tool_choice: str | None = None, output: OutputCheck | None = None,
                 shapers: Sequence[TurnShaper] = ()) -> None:
        state = run.state
        self._model = model
        self._output = output  # the recipe's output type, when it has one
        self._trace = run.trace  # the run's trace segment, when the recipe has telemetry
        self._ceiling = output_ceiling(model)  # the cap the model sends at most
        self._min_seconds = min_answer_seconds(model)  # no call with less time left than this
        self._specs = tuple(specs)
        self._tool_names = tuple(s.name for s in specs)
        self._choosable = frozenset(self._tool_names)  # every tool, whatever a turn offers
        self._tools = tools
        self._accountant = run.accountant
        self._journal = run.journal
        self._state = state
        self._show_budget = show_budget
        self._on_delta = on_delta  # set when the caller streams: text deltas go there
        self._shapers = tuple(shapers)  # what shapes each turn, in order (none: the plain path)
        estimate = model.estimate_message_tokens
        self._sent_estimate = sum(estimate(m) for m in state.conversation)
        self._tools_estimate = estimate_tools_tokens(self._specs)
        self._tools_added = 0  # tools offered now, not before (show_tools)
        if output is not None:  # every request but the wrap-up carries the schema: counted
            self._sent_estimate += output.request_estimate  # always, erring high
        # every id the model used, those compacted away included (resumed: no longer in the
        # conversation; none without compaction)
        self._seen_ids = {c.id for m in state.conversation for c in m.tool_calls}
        self._seen_ids |= state.compacted_ids
        self._pending: tuple[tuple[Message, ...], int] = ((), 0)
        tools.room = self._result_room
        # the stop the chokepoint raised, if any: every later call raises it again, so a
        # strategy that catches it can neither go on nor end the run another way
        self.stopped: Stop | None = None
        self._first_tool_choice = first_tool_choice  # the tool choice of the session's first turn
        # the last answer's place in the conversation and its estimate (see _ask)
        self._answered: tuple[int, int] = (-1, 0)
        self._failures = failures = Failures(run.journal)
        self._failed = failures.failed_call  # (bound once: a step makes no bound method for it)
        self._call = ModelCall(run.journal, run.accountant,
                               failures.turn_door())  # every turn's governed model call

    @property
    def state(self) -> SessionState:
        """The session's state, the fold of its journal (read only by the doors)."""
        return self._state

    # -- model calls ---------------------------------------------------------------------------

    async def ask_model(self, *, note: str | None = None, tool_choice: str | None = None,
                        cap: int | None = None) -> ModelResponse:
        """Make one governed model call; raise Stop if the budget does not allow it.
        ``tool_choice`` and ``cap`` (a lower output cap for this call): see ``Handle``."""
        with StopLatch(self):
            if tool_choice is not None or cap is not None:
                self.check_turn(tool_choice, cap)
            return await self._ask(False, note, tool_choice, cap)

    def check_turn(self, tool_choice: str | None, cap: int | None) -> None:
        """``Seat``: a turn's or a branch call's tool choice and cap, checked (``checks``)."""
        check_turn(tool_choice, cap, self._choosable)

    def skip_unresolved(self, why: str) -> None:
        """Give each call of the open turn that has no result one (``skipped``): a strategy
        that moved on, or ended the run, without running them still owes the model results."""
        for call in self._state.unresolved():
            self._tools.record(skipped(call, why))

    def branch_tools(self, key: str, messages: Sequence[Message],
                     forced: str | None) -> Offered:
        """The tools a branch call (``tether.runtime.strategy.branching``) is offered and their
        token estimate: the first a shaper offers (tool selection: a selection of the
        branch's own), else the agent's."""
        for shaper in self._shapers:
            offered = shaper.branch_tools(self, key, messages, forced)
            if offered is not None:
                return offered
        return self._specs, self._tools_estimate

    async def ask_on_branch(self, branch: BranchCall) -> ModelResponse:
        """One governed model call on a branch's own context
        (``tether.runtime.chokepoint.branch_call``)."""
        output = self._output
        return await ask_on_branch(Asking(
            self._model, None if output is None else output.spec.schema,
            0 if output is None else output.request_estimate, self._ceiling, self._min_seconds,
            self._trace, self._journal, self._accountant, self._state, self._failures), branch)

    async def wrap_up(self, note: str) -> ModelResponse:
        """The model's last turn, without tools, after the run was stopped (the session's)."""
        return await self._ask(True, note)

    async def _ask(self, final: bool, note: str | None, tool_choice: str | None = None,
                   cap: int | None = None) -> ModelResponse:
        if self._shapers:  # (none: nothing to do, not even a loop)
            for shaper in self._shapers:
                await shaper.before_turn(self, final, note, tool_choice)
            if tool_choice is not None and tool_choice not in TOOL_CHOICES \
                    and tool_choice not in self._tool_names:
                tool_choice = None  # a tool the turn is not offered is not forced on it
        self.skip_unresolved("the strategy did not run this call")  # (it still owes results)
        extra = []
        if note:
            extra.append(Message.user(note))
        if self._show_budget and not final:
            extra.append(Message.user(self._budget_note()))
        estimate = self._model.estimate_message_tokens
        new_estimate = self._pending_estimate() + sum(map(estimate, extra))
        new = [*self._state.outbox(), *extra]
        specs = () if final else self._specs
        input_estimate = self._sent_estimate + new_estimate + (
            self._tools_estimate if specs else 0)
        counted = self._state.counted
        ceiling = self._ceiling if cap is None else min(cap, self._ceiling or cap)
        if counted is None:
            reservation = self._call.reserve(input_estimate, final, ceiling=ceiling,
                                             min_seconds=self._min_seconds)
        else:  # the provider counted everything before its last answer: estimate only the rest
            input_tokens, answer = counted
            known = self._answered  # the answer's estimate, made when it was recorded
            rest = new_estimate + (known[1] if known[0] == answer else sum(map(
                estimate, self._state.conversation[answer:])))
            if specs:
                rest += self._tools_added  # (tools new to this request: not in the count)
            reservation = self._call.reserve(rest, final, known=input_tokens, ceiling=ceiling,
                                             min_seconds=self._min_seconds)
        step = self._state.tally.steps + 1
        choice = tool_choice if tool_choice is not None and specs else (
            self._first_tool_choice if step == 1 and specs else None)
        call = self._call
        journaled, history = self._state.journaled(new)  # a thread's turns: named by the start
        seq, durable = call.open({
            "step": step, "ref": len(self._state.conversation),
            "new": journaled, **({"history": history} if history else {}),
            "tools": self._tool_names if specs else (),
            "max_output_tokens": reservation.max_output_tokens, "final": final,
            "reserved_input": reservation.input_tokens,
            "reserved_cost_usd": reservation.cost_usd,
            **({"tool_choice": choice} if choice is not None else {}),
        })  # (the step so far is durable before the next model call)
        await durable
        self._sent_estimate += new_estimate
        traceparent = self._trace.model_call_header(seq) if self._trace else ""
        # the wrap-up is free text, and so is a turn the strategy capped: a side question (a
        # route, a grade, a critique, a plan's problem), never the answer — a provider that
        # enforces the schema would force it into the answer's shape
        if self._output is None or final or cap is not None:
            request = ModelRequest(self._state.conversation.snapshot(), specs,
                                   reservation.max_output_tokens, input_estimate, choice,
                                   traceparent)
        else:
            request = StructuredRequest(
                self._state.conversation.snapshot(), specs, reservation.max_output_tokens,
                input_estimate, choice, traceparent, self._output.spec.schema)
        sent = self._accountant.now() if reservation.deadline is not None else 0.0
        on_delta = self._on_delta
        answered = await call.answer(self._model.complete(request) if on_delta is None
                                     else streamed(self._model, request, on_delta), step,
                                     reservation, reservation.deadline, self._failed)
        response = self._record(call, answered, reservation, step, final)
        if reservation.deadline is not None:
            self._accountant.learn_rate(response.usage.output_tokens, sent)
        cap = reservation.max_output_tokens
        if (not final and reservation.bound_by is not None and cap is not None
                and response.finish_reason == "length" and response.usage.output_tokens >= cap):
            raise self._accountant.cut_short(reservation)
        if not response.tool_calls:
            return response
        # the strategy gets its own copy of the calls: whatever it does to their arguments, the
        # calls that run are the ones the model asked for, as journaled
        calls = tuple(ToolCall(c.id, c.name, detached(c.arguments)) for c in response.tool_calls)
        return ModelResponse(response.text, calls, response.usage, response.model,
                             response.finish_reason)

    def _record(self, call: ModelCall, response: ModelResponse, reservation: Reservation,
                step: int, final: bool) -> ModelResponse:
        """Journal the response and charge it through the governed call (an overrun or usage
        that cannot be charged as reported stops the run), out of the wrap-up any calls it may
        not make, a secret the model repeats blanked, each call with an id of its own."""
        usage = response.usage
        if final and response.tool_calls:  # tools were not offered: calls cannot be honoured
            response = ModelResponse(response.text, (), usage, response.model,
                                     response.finish_reason)
        text = self._journal.hide_secrets(response.text)  # a secret the model repeats
        if text != response.text:
            response = ModelResponse(text, response.tool_calls, usage, response.model,
                                     response.finish_reason)
        if response.tool_calls:
            response = unique_ids(without_cut_call(response), step, self._seen_ids)
        call.settle(step, response, reservation, {
            "step": step, "response": response, "reserved_input": reservation.input_tokens})
        answered = self._model.estimate_message_tokens(self._state.conversation[-1])
        self._sent_estimate += answered
        self._answered = (len(self._state.conversation) - 1, answered)
        return response

    # -- what the next request holds (the estimates every reservation is made from) ------------

    def _result_room(self, wanted: int) -> int | None:
        """Tokens tool results may still add before a wrap-up would no longer fit (None when
        ``wanted`` fits)."""
        if not self._accountant.bounds_tokens:
            return None
        return self._accountant.result_room(self._sent_estimate + self._pending_estimate(),
                                            wanted)

    def _pending_estimate(self) -> int:
        """Tokens of what the next request adds, counted once per change of the outbox."""
        outbox = self._state.outbox()
        if self._pending[0] is not outbox:  # (a thread's history: at its remembered estimate)
            self._pending = (outbox, self._state.estimated(outbox,
                                                           self._model.estimate_message_tokens))
        return self._pending[1]

    def next_input(self, final: bool, note: str | None) -> int:
        """The next request's input tokens, as its reservation will count them (``TurnSeat``:
        what compaction compares with its trigger)."""
        estimate = self._model.estimate_message_tokens
        new = self._pending_estimate()
        if note:
            new += estimate(Message.user(note))
        if self._show_budget and not final:
            new += estimate(Message.user(self._budget_note()))
        if not final and self._specs:
            new += self._tools_estimate
        scale = self._state.tally.input_scale
        counted = self._state.counted
        if counted is None:
            return math.ceil((self._sent_estimate + new) * scale)
        tokens, answer = counted
        known = self._answered  # the answer's estimate, made when it was recorded
        rest = known[1] if known[0] == answer else sum(map(
            estimate, self._state.conversation[answer:]))
        return tokens + math.ceil((rest + new) * scale)

    def conversation_rewritten(self) -> None:
        """``TurnSeat``: what the next request resends is now the rewritten (compacted)
        conversation, all of it estimated."""
        output = self._output
        self._sent_estimate = sum(map(self._model.estimate_message_tokens,
                                      self._state.conversation)) + (
            output.request_estimate if output is not None else 0)
        self._answered = (-1, 0)

    def show_tools(self, specs: tuple[ToolSpec, ...], added: int) -> None:
        """``TurnSeat``: offer the next turn ``specs`` (tool selection); ``added``: the
        estimate of those the last turn was not offered."""
        self._specs = specs
        self._tool_names = names = tuple(s.name for s in specs)
        self._tools_estimate = estimate_tools_tokens(specs)
        self._tools_added = added
        if self._first_tool_choice not in (None, *TOOL_CHOICES, *names):
            self._first_tool_choice = None  # the policy hid the tool it names

    def conversation_grew(self, flushed: Sequence[Message], turn: Sequence[ToolCall]) -> None:
        """``Seat``: the strategy's own turn (``turn``, after ``flushed``) joined the
        conversation: count what the next request resends; its ids are taken."""
        estimate = self._model.estimate_message_tokens
        self._sent_estimate += sum(map(estimate, flushed)) + estimate(
            self._state.conversation[-1])
        self._answered = (-1, 0)  # the conversation grew past the last answer
        self._seen_ids.update(c.id for c in turn)

    def _budget_note(self) -> str:
        left = {k: str(v) for k, v in self._accountant.remaining().items() if v is not None}
        return "[tether] budget left: " + (", ".join(f"{k}={v}" for k, v in left.items())
                                           or "unlimited")

    def remaining_budget(self) -> dict[str, Any]:
        return self._accountant.remaining()

    def check_output(self, answer: str) -> bool:
        """Whether ``answer`` validates as the recipe's output type, journaled either way. One
        that does not gets a repair note for the next turn while repairs are left, else the
        run stops (``output_invalid``)."""
        if self.stopped is not None:
            raise self.stopped
        output = self._output
        assert output is not None
        if output.check(answer, self._journal, self._state):
            return True
        stop = output.exhausted(self._state)
        if stop is not None:
            self.stopped = stop
            raise stop
        return False

    def record(self, kind: EventType, data: Mapping[str, Any]) -> None:
        """``Seat``: journal a door's own event (a note, planned calls, a simulated call)."""
        self._journal.append(kind, data)

    # -- tool calls ----------------------------------------------------------------------------

    async def call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run tool calls the model asked for in its last turn; one result per call, in order."""
        with StopLatch(self):
            return await self._call_tools(calls)

    async def _call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        unresolved = self._state.unresolved()
        if len(calls) != len(unresolved) or not all(map(operator.is_, calls, unresolved)):
            calls = check_open(calls, unresolved)
        return await self._tools.run(calls)

    async def run_calls(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """``Seat``: run calls a door journaled (planned, a branch's) through the gate."""
        return await self._tools.run(calls)

    def side_effecting(self, name: str) -> bool:
        """``Seat``: whether the tool ``name`` has side effects (a branch simulates it)."""
        return self._tools.side_effecting(name)

    def invalid(self, call: ToolCall) -> ToolResult | None:
        """``Seat``: the result the gate would refuse ``call`` with before deciding it."""
        return self._tools.invalid(call)

    async def resolve_open_turn(self) -> None:
        """On resume: finish the calls of the open turn (approved, refused or still waiting)."""
        unresolved = self._state.unresolved()
        if unresolved:
            with StopLatch(self):
                await self._tools.run(unresolved)
