"""Explored branches: a model call on a branch's own context, and a branch's calls through the gate.

Why: a tree search (LATS, Zhou et al. 2023) expands nodes of different partial trajectories, so
it must ask the model from a *branch's* context, not from the session's one linear conversation;
and an explored branch must never cause a real side effect, since most branches are abandoned.

Decision: a branch call (``Handle.ask_branch``) is a model call like any other, through the one
governed call (``tether.runtime.chokepoint.model_call``) — reserved and charged by the Accountant,
counted as a step, cut at its output cap, an overrun stops the run — journaled as ``branch.request``
(the strategy's key, the branch's messages after the session's opening, their digest, the tools
it was offered) and ``branch.response``; it never folds into the conversation.
With tool selection a branch is offered — and shown — a selection of its own,
ranked for the task and the branch's messages, as a turn is, and its calls are held to it
(``Environment.branch_tools``, ``tether.runtime.context.selecting``). A
reservation the budget refuses does not stop the run: nothing was spent, and the search ends
cleanly with what it found (``BranchRefused``; so too when a branch's calls would not fit the
tool calls left — none of them runs); everything the strategy does after still reserves. The
calls a branch answer asks for get ids ``branch_<key>_<i>`` (a model's own id never
starts so). ``call_branch`` runs a branch's side-effect-free calls through the very gate a
model's call passes (policy, budget, loop check, journal, provenance, taint); a side-effecting
one (``ToolMeta.side_effect``) is *simulated*: journaled as proposed (``branch.simulated``), not
decided, not run, its observation a placeholder that says so. Only the path the search finally
chooses runs its side effects, through ``Handle.call_planned``. Resume: a key whose answer is
journaled is answered from the journal, a branch call whose result is journaled is not run again
(``tether.runtime.record.branch_log``), so a resumed search repeats nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.errors import RunError
from tether.journal.chain import JournalValueError
from tether.runtime.accounting.answer_calls import without_cut_call
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.record.branch_log import digest
from tether.runtime.record.result import ToolResult
from tether.types import (
    BRANCH_CALL_PREFIX,
    TOOL_CHOICES,
    Message,
    ModelRequest,
    ModelResponse,
    StructuredRequest,
    ToolCall,
    detached,
)
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.chokepoint.environment import Environment

SIMULATED = ("[tether: not run — {tool} has side effects, and this branch is only explored. It "
             "runs for real only if this path is chosen; assume it succeeds.]")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


class BranchRefused(RunError):
    """The budget left does not allow another branch call: nothing was asked or spent, and the
    run goes on — the search should end and use what it found."""

    def __init__(self, stop: Stop) -> None:
        super().__init__(f"{stop.reason.value}: {stop.detail}")
        self.stop = stop


async def ask_branch(env: Environment, key: str, messages: Sequence[Message],
                     tool_choice: str | None, cap: int | None, tools: bool) -> ModelResponse:
    """One governed model call on a branch's context (see the module docstring)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"a branch call's key must be 1-80 letters, digits, '.', '_' or '-' "
                         f"(e.g. 'n3.s1'), unique in the session; got {key!r}")
    messages = tuple(messages)
    if not all(isinstance(m, Message) for m in messages):
        raise ValueError("ask_branch takes the branch's messages as tether Message objects")
    state, log = env._state, env._state.branches
    wanted = digest(messages)
    if key in log.asked and log.asked[key] != wanted:
        raise ValueError(f"the branch call {key!r} was journaled with other messages: a key "
                         "names one call; give each new call a key of its own")
    if key in log.answers:  # resumed: answered already, from the journal (not asked again)
        return _copy(log.answers[key])
    specs, tools_estimate = env.branch_tools(key, messages, tool_choice) if tools else ((), 0)
    estimate = env._model.estimate_message_tokens
    sent = (*state.opening, *messages)
    # an uncapped branch call may be the answer: it carries the recipe's output schema, as a
    # turn does (a capped one — a value, a reflection — is a side question, as on a turn)
    output = env._output if cap is None else None
    input_estimate = sum(map(estimate, sent)) + (tools_estimate if specs else 0) + (
        output.request_estimate if output is not None else 0)
    ceiling = env._ceiling if cap is None else min(cap, env._ceiling or cap)
    call = env.model_call(branch=key)
    try:
        reservation = call.reserve(input_estimate, ceiling=ceiling, min_seconds=env._min_seconds)
    except Stop as refused:
        raise BranchRefused(refused) from None
    step = state.tally.steps + 1
    # (a tool the branch's selection left out is not forced on it, as on a turn)
    choice = tool_choice if specs and tool_choice in (
        *TOOL_CHOICES, *(s.name for s in specs)) else None
    try:
        seq, durable = call.open({
            "step": step, "key": key, "messages": messages, "digest": wanted,
            "tools": tuple(s.name for s in specs),
            "max_output_tokens": reservation.max_output_tokens,
            "reserved_input": reservation.input_tokens,
            "reserved_cost_usd": reservation.cost_usd,
            **({"tool_choice": choice} if choice is not None else {})})
    except JournalValueError as exc:
        raise ValueError(f"the branch's messages cannot be journaled: {exc}") from None
    await durable
    traceparent = env._trace.model_call(seq).header() if env._trace else ""  # (as a turn's)
    request = ModelRequest(sent, specs, reservation.max_output_tokens, input_estimate, choice,
                           traceparent) if output is None else StructuredRequest(
        sent, specs, reservation.max_output_tokens, input_estimate, choice, traceparent,
        output.spec.schema)
    response = await call.answer(env._model.complete(request), step, reservation,
                                 reservation.deadline, env.failed_call)
    response = branch_ids(without_cut_call(ModelResponse(
        env._journal.hide_secrets(response.text), response.tool_calls, response.usage,
        response.model, response.finish_reason)), key)
    call.settle(step, response, reservation, {
        "step": step, "key": key, "response": response,
        "reserved_input": reservation.input_tokens})
    if (reservation.bound_by is not None and response.finish_reason == "length"
            and reservation.max_output_tokens is not None
            and response.usage.output_tokens >= reservation.max_output_tokens):
        raise Stop(reservation.bound_by, f"the model's answer was cut at the "
                   f"{reservation.max_output_tokens} output tokens the budget had left")
    return _copy(response)


def branch_ids(response: ModelResponse, key: str) -> ModelResponse:
    """The answer with each call named ``branch_<key>_<i>``: ids the strategy cannot forge for
    a session turn's call and a rerun makes again."""
    if not response.tool_calls:
        return response
    calls = tuple(ToolCall(f"{BRANCH_CALL_PREFIX}{key}_{i}", c.name, c.arguments)
                  for i, c in enumerate(response.tool_calls, start=1))
    return ModelResponse(response.text, calls, response.usage, response.model,
                         response.finish_reason)


async def call_branch(env: Environment, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
    """A branch's calls: side-effect-free ones through the gate, side-effecting ones simulated;
    one result per call, in order."""
    log = env._state.branches
    for c in calls:
        if not isinstance(c, ToolCall) or log.calls.get(c.id) != c:
            raise ValueError(
                f"call_branch takes calls from a branch answer (ask_branch), as the model asked "
                f"for them; {getattr(c, 'id', c)!r} is not one")
    if len({c.id for c in calls}) != len(calls):
        raise ValueError("call_branch was given the same call twice")
    out: dict[str, ToolResult] = {}
    run: list[ToolCall] = []
    for c in calls:
        if c.id in log.results:  # resumed: it ran (or was refused) already
            out[c.id] = log.results[c.id]
        elif env._tools.side_effecting(c.name):  # proposed, not run: but checked as the
            invalid = env._tools.invalid(c)       # gate would, so no path counts on a call
            if c.id not in log.simulated:         # that could never run
                env._journal.append(EventType.BRANCH_SIMULATED, {
                    "call": c, **({"invalid": invalid.content} if invalid else {})})
            out[c.id] = invalid or ToolResult(c.id, c.name, SIMULATED.format(tool=c.name),
                                              "simulated")
        else:
            run.append(c)
    if run:
        left = env._accountant.remaining().get("tool_calls")
        if left is not None and left < len(run):  # none runs: the search ends, the run goes on
            raise BranchRefused(Stop(StopReason.TOOL_CALL_BUDGET,
                                     f"{left} tool calls left, the branch needs {len(run)}"))
        for r in await env._tools.run(run):
            out[r.call_id] = r
    return tuple(out[c.id] for c in calls)


def _copy(response: ModelResponse) -> ModelResponse:
    """The strategy's own copy: whatever it does to the arguments, the journaled calls stand."""
    calls = tuple(ToolCall(c.id, c.name, detached(c.arguments)) for c in response.tool_calls)
    return ModelResponse(response.text, calls, response.usage, response.model,
                         response.finish_reason)
