"""Explored branches: a model call on a branch's own context, and a branch's calls through the gate.

Why: a tree search (LATS, Zhou et al. 2023) expands nodes of different partial trajectories, so
it must ask the model from a *branch's* context, not from the session's one linear conversation;
and an explored branch must never cause a real side effect, since most branches are abandoned.

Decision: a branch call (``Handle.ask_branch``) is a model call like any other, made by the
chokepoint (``Seat.ask_on_branch``, ``tether.runtime.chokepoint.branch_call``) — reserved and
charged by the Accountant, counted as a step, cut at its output cap, an overrun stops the run —
journaled as ``branch.request`` (the strategy's key, the branch's messages after the session's
opening, their digest, the tools it was offered) and ``branch.response``; it never folds into
the conversation. This door checks and decides what is the branch's: its key, its messages, the
tools it is offered, the tool it forces, and answers a resumed key from the journal. It reaches
the chokepoint only through ``Seat`` (``tether.runtime.strategy.seat``).
With tool selection a branch is offered — and shown — a selection of its own,
ranked for the task and the branch's messages, as a turn is, and its calls are held to it
(``Seat.branch_tools``, ``tether.runtime.context.selecting``). A
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

from tether.errors import InvalidArgument
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.chokepoint.branch_call import BranchCall
from tether.runtime.chokepoint.branch_call import BranchRefused as BranchRefused
from tether.runtime.record.branch_log import digest
from tether.runtime.record.result import ToolResult
from tether.types import TOOL_CHOICES, Message, ModelResponse, ToolCall, detached
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.strategy.seat import Seat

SIMULATED = ("[tether: not run — {tool} has side effects, and this branch is only explored. It "
             "runs for real only if this path is chosen; assume it succeeds.]")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


async def ask_branch(seat: Seat, key: str, messages: Sequence[Message],
                     tool_choice: str | None, cap: int | None, tools: bool) -> ModelResponse:
    """One governed model call on a branch's context (see the module docstring)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidArgument(f"a branch call's key must be 1-80 letters, digits, '.', '_' or '-' "
                         f"(e.g. 'n3.s1'), unique in the session; got {key!r}")
    messages = tuple(messages)
    if not all(isinstance(m, Message) for m in messages):
        raise InvalidArgument("ask_branch takes the branch's messages as tether Message objects")
    log = seat.state.branches
    wanted = digest(messages)
    if key in log.asked and log.asked[key] != wanted:
        raise InvalidArgument(f"the branch call {key!r} was journaled with other messages: a key "
                         "names one call; give each new call a key of its own")
    if key in log.answers:  # resumed: answered already, from the journal (not asked again)
        return _copy(log.answers[key])
    specs, tools_estimate = seat.branch_tools(key, messages, tool_choice) if tools else ((), 0)
    # (a tool the branch's selection left out is not forced on it, as on a turn)
    choice = tool_choice if specs and tool_choice in (
        *TOOL_CHOICES, *(s.name for s in specs)) else None
    return _copy(await seat.ask_on_branch(BranchCall(key, messages, wanted, specs,
                                                     tools_estimate, choice, cap)))


async def call_branch(seat: Seat, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
    """A branch's calls: side-effect-free ones through the gate, side-effecting ones simulated;
    one result per call, in order."""
    log = seat.state.branches
    for c in calls:
        if not isinstance(c, ToolCall) or log.calls.get(c.id) != c:
            raise InvalidArgument(
                f"call_branch takes calls from a branch answer (ask_branch), as the model asked "
                f"for them; {getattr(c, 'id', c)!r} is not one")
    if len({c.id for c in calls}) != len(calls):
        raise InvalidArgument("call_branch was given the same call twice")
    out: dict[str, ToolResult] = {}
    run: list[ToolCall] = []
    for c in calls:
        if c.id in log.results:  # resumed: it ran (or was refused) already
            out[c.id] = log.results[c.id]
        elif seat.side_effecting(c.name):  # proposed, not run: but checked as the gate
            invalid = seat.invalid(c)       # would, so no path counts on a call that could
            if c.id not in log.simulated:   # never run
                seat.record(EventType.BRANCH_SIMULATED, {
                    "call": c, **({"invalid": invalid.content} if invalid else {})})
            out[c.id] = invalid or ToolResult(c.id, c.name, SIMULATED.format(tool=c.name),
                                              "simulated")
        else:
            run.append(c)
    if run:
        left = seat.remaining_budget().get("tool_calls")
        if left is not None and left < len(run):  # none runs: the search ends, the run goes on
            raise BranchRefused(Stop(StopReason.TOOL_CALL_BUDGET,
                                     f"{left} tool calls left, the branch needs {len(run)}"))
        for r in await seat.run_calls(run):
            out[r.call_id] = r
    return tuple(out[c.id] for c in calls)


def _copy(response: ModelResponse) -> ModelResponse:
    """The strategy's own copy: whatever it does to the arguments, the journaled calls stand."""
    calls = tuple(ToolCall(c.id, c.name, detached(c.arguments)) for c in response.tool_calls)
    return ModelResponse(response.text, calls, response.usage, response.model,
                         response.finish_reason)
