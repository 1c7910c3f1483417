"""The chokepoint's model call on a branch's own context (a search's explored branch).

Why here, not in the strategy's door: the call is a governed model call like a turn's — reserved
and charged by the Accountant, counted as a step, cut at its output cap, an overrun stops the run
— through the same ``ModelCall`` (``tether.runtime.chokepoint.model_call``), the model, its
ceiling, the recipe's output schema, the trace; those are the chokepoint's, and a strategy's door
(``tether.runtime.strategy.branching``) never holds them. The door decides what is the
branch's (its key, messages, the tools it is offered, the tool it forces) and hands this module a
``BranchCall``; the Environment asks it with its own parts (``Asking``, made per branch call: a
run that explores no branch pays nothing for it).

Decision: journaled as ``branch.request`` (the key, the branch's messages after the session's
opening, their digest, the tools offered) and ``branch.response``; it never folds into the
conversation. A reservation the budget refuses raises ``BranchRefused`` (not a Stop: nothing was
spent and the run goes on; the search should end). The answer's calls get ids
``branch_<key>_<i>`` (``branch_ids``), its text is blanked of secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument, RunError
from tether.journal.chain import Journal, JournalValueError
from tether.models.base import Model
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.answer_calls import without_cut_call
from tether.runtime.accounting.stop import Stop
from tether.runtime.chokepoint.failures import Failures
from tether.runtime.chokepoint.model_call import ModelCall
from tether.runtime.record.state import SessionState
from tether.tracing import Segment
from tether.types import (
    BRANCH_CALL_PREFIX,
    Message,
    ModelRequest,
    ModelResponse,
    StructuredRequest,
    ToolCall,
    ToolSpec,
)


class BranchRefused(RunError):
    """The budget left does not allow another branch call: nothing was asked or spent, and the
    run goes on — the search should end and use what it found."""

    def __init__(self, stop: Stop) -> None:
        super().__init__(f"{stop.reason.value}: {stop.detail}")
        self.stop = stop


@dataclass(frozen=True, slots=True)
class BranchCall:
    """What is the branch's: its key, its messages (after the session's opening) and their
    digest, the tools it is offered and their estimate, the tool it forces, its output cap."""

    key: str
    messages: tuple[Message, ...]
    digest: str
    specs: tuple[ToolSpec, ...]
    tools_estimate: int
    tool_choice: str | None
    cap: int | None


@dataclass(frozen=True, slots=True)
class Asking:
    """The chokepoint's parts a branch call is asked with."""

    model: Model
    schema: Mapping[str, Any] | None  # the recipe's output schema, if it has one ...
    schema_estimate: int  # ... and the tokens it adds to a request that carries it
    ceiling: int | None
    min_seconds: float
    trace: Segment | None
    journal: Journal
    accountant: Accountant
    state: SessionState
    failures: Failures


async def ask_on_branch(asking: Asking, branch: BranchCall) -> ModelResponse:
    """One governed model call on ``branch``'s context (see the module docstring)."""
    key, specs, cap, state = branch.key, branch.specs, branch.cap, asking.state
    sent = (*state.opening, *branch.messages)
    # an uncapped branch call may be the answer: it carries the recipe's output schema, as a
    # turn does (a capped one — a value, a reflection — is a side question, as on a turn)
    schema = asking.schema if cap is None else None
    input_estimate = sum(map(asking.model.estimate_message_tokens, sent)) + (
        branch.tools_estimate if specs else 0) + (
        asking.schema_estimate if schema is not None else 0)
    ceiling = asking.ceiling if cap is None else min(cap, asking.ceiling or cap)
    call = ModelCall(asking.journal, asking.accountant, asking.failures.branch_door(key))
    try:
        reservation = call.reserve(input_estimate, ceiling=ceiling,
                                   min_seconds=asking.min_seconds)
    except Stop as refused:
        raise BranchRefused(refused) from None
    step = state.tally.steps + 1
    choice = branch.tool_choice
    try:
        seq, durable = call.open({
            "step": step, "key": key, "messages": branch.messages, "digest": branch.digest,
            "tools": tuple(s.name for s in specs),
            "max_output_tokens": reservation.max_output_tokens,
            "reserved_input": reservation.input_tokens,
            "reserved_cost_usd": reservation.cost_usd,
            **({"tool_choice": choice} if choice is not None else {})})
    except JournalValueError as exc:
        raise InvalidArgument(f"the branch's messages cannot be journaled: {exc}") from None
    await durable
    trace = asking.trace
    traceparent = trace.model_call_header(seq) if trace else ""  # (as a turn's)
    request = ModelRequest(sent, specs, reservation.max_output_tokens, input_estimate, choice,
                           traceparent) if schema is None else StructuredRequest(
        sent, specs, reservation.max_output_tokens, input_estimate, choice, traceparent, schema)
    response = await call.answer(asking.model.complete(request), step, reservation,
                                 reservation.deadline, asking.failures.failed_call)
    response = branch_ids(without_cut_call(ModelResponse(
        asking.journal.hide_secrets(response.text), response.tool_calls, response.usage,
        response.model, response.finish_reason)), key)
    call.settle(step, response, reservation, {
        "step": step, "key": key, "response": response,
        "reserved_input": reservation.input_tokens})
    if (reservation.bound_by is not None and response.finish_reason == "length"
            and reservation.max_output_tokens is not None
            and response.usage.output_tokens >= reservation.max_output_tokens):
        raise asking.accountant.cut_short(reservation)
    return response


def branch_ids(response: ModelResponse, key: str) -> ModelResponse:
    """The answer with each call named ``branch_<key>_<i>``: ids the strategy cannot forge for
    a session turn's call and a rerun makes again."""
    if not response.tool_calls:
        return response
    calls = tuple(ToolCall(f"{BRANCH_CALL_PREFIX}{key}_{i}", c.name, c.arguments)
                  for i, c in enumerate(response.tool_calls, start=1))
    return ModelResponse(response.text, calls, response.usage, response.model,
                         response.finish_reason)
