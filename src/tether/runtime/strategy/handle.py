"""The only door a reasoning strategy has: ask the model, call tools, see the budget left.

Decision: a strategy never holds the Environment, a tool, the policy or the journal. It gets this
handle, whose methods each go through the chokepoint (``record`` only journals what the strategy
decided, ``history`` only reads it back), and which exposes nothing else: it has no public
attribute, and its private slots hold only those entry points. ``call_planned`` is how a
planning strategy runs the actions of a plan it validated: journaled as the strategy's own turn,
then through the very gate a model's call passes (``tether.runtime.strategy.planned``). (Python
cannot stop code that digs through private internals on purpose; strategies are code the operator
installs, and the threat the handle closes is the accidental or model-steered path around the
gate.) ``ask_branch`` and ``call_branch`` are how a tree search explores: a model call on a
branch's own context, journaled apart from the conversation and budgeted like any other, and the
branch's calls — side-effect-free ones through the gate, side-effecting ones only simulated
(``tether.runtime.strategy.branching``). Stops are raised from inside these methods, so a strategy
cannot overrun a budget by forgetting to check one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from tether.errors import WrongState
from tether.runtime.record.result import ToolResult
from tether.runtime.strategy.planned import Entry
from tether.types import Message, ModelResponse, ToolCall, detached


class Handle:
    """The only door a strategy has to a run: ask the model (``ask_model``), call tools
    (``call_tools``), journal its own decisions (``record``), read them back (``history``) and
    see the budget left. Each method goes through the chokepoint, and a budget, loop or denial
    stop is raised from inside it. Made by the session, never by a strategy."""
    __slots__ = ("_ask", "_branch", "_call", "_history", "_left", "_planned", "_record",
                 "_task")

    def __init__(
        self,
        ask: Callable[..., Awaitable[ModelResponse]],
        call: Callable[[Sequence[ToolCall]], Awaitable[tuple[ToolResult, ...]]],
        left: Callable[[], dict[str, Any]],
        record: Callable[[str, Mapping[str, Any]], None] | None = None,
        task: str = "",
        planned: Callable[[Sequence[tuple[str, Mapping[str, Any]]], str],
                          Awaitable[tuple[ToolResult, ...]]] | None = None,
        history: Callable[[], tuple[Entry, ...]] | None = None,
        branch: tuple[Callable[..., Awaitable[ModelResponse]],
                      Callable[[Sequence[ToolCall]], Awaitable[tuple[ToolResult, ...]]]]
        | None = None,
    ) -> None:
        self._branch = branch
        self._task = task
        self._planned = planned
        self._history = history
        self._ask = ask
        self._call = call
        self._left = left
        self._record = record

    def __repr__(self) -> str:
        return "<tether Handle>"

    @property
    def task(self) -> str:
        """The session's task: what a strategy that routes on the question reads."""
        return self._task

    async def ask_model(self, *, note: str | None = None, tool_choice: str | None = None,
                        max_output_tokens: int | None = None) -> ModelResponse:
        """One model turn with the agent's tools offered; ``note`` is added as a user message.
        ``tool_choice``: ``"none"`` (answer without a tool), ``"required"`` (some tool), a
        tool's name (that tool), or None/``"auto"`` (the model chooses). ``max_output_tokens``
        caps this turn's answer below what the budget allows (a short classification, a
        grade): an answer past the cap is an overrun like any other, and the turn — a side
        question, never the run's answer — is sent without the recipe's output schema."""
        if tool_choice is None and max_output_tokens is None:
            return await self._ask(note=note)
        return await self._ask(note=note, tool_choice=tool_choice, cap=max_output_tokens)

    async def call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run tool calls through the gate; one result per call, in order."""
        return await self._call(tuple(calls))

    def call_planned(self, calls: Sequence[tuple[str, Mapping[str, Any]]], *,
                     reason: str) -> Awaitable[tuple[ToolResult, ...]]:
        """Run calls the strategy derived from a plan it validated — ``(tool name, arguments)``
        pairs — through the same gate as a model's calls (policy, approval, budget, effect
        ledger, journal, provenance); one result per call, in order. The arguments are copied
        here, at the call (what runs is what was planned, whatever happens to the objects
        later); the calls are journaled first (``strategy.calls``, with ``reason``) as the
        strategy's own turn: the model sees them as calls it did not write, each followed by
        its result."""
        if self._planned is None:
            raise WrongState("this handle runs no planned calls")
        frozen = tuple((c[0], detached(dict(c[1])))
                       if isinstance(c, tuple) and len(c) == 2 and isinstance(c[1], Mapping)
                       else c for c in calls)
        return self._planned(frozen, reason)

    async def ask_branch(self, messages: Sequence[Message], *, key: str,
                         tool_choice: str | None = None, max_output_tokens: int | None = None,
                         tools: bool = True) -> ModelResponse:
        """One model call on a branch's own context: the session's opening (system prompt,
        task) followed by ``messages`` — not the session's conversation, which it never joins.
        Budgeted, capped and journaled (``branch.request``/``branch.response``, under ``key``,
        unique in the session: a resumed search is answered from the journal) like any model
        call; an overrun stops the run. When the budget left does not allow the call, nothing is
        asked and ``BranchRefused`` is raised: the run goes on, the search should end. The
        calls of the answer have ids ``branch_<key>_<i>``; run them with ``call_branch``.
        ``tools=False`` offers none (an evaluation, a reflection)."""
        if self._branch is None:
            raise WrongState("this handle explores no branches")
        return await self._branch[0](key, tuple(messages), tool_choice=tool_choice,
                                     cap=max_output_tokens, tools=tools)

    async def call_branch(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run calls a branch answer asked for: those without side effects through the gate
        (policy, budget, loop check, journal, provenance), those with side effects only
        *simulated* — journaled as proposed (``branch.simulated``), neither decided nor run,
        their result a placeholder with status ``simulated``. One result per call, in order.
        A path's side effects run for real only through ``call_planned``."""
        if self._branch is None:
            raise WrongState("this handle explores no branches")
        return await self._branch[1](tuple(calls))

    def history(self) -> tuple[Entry, ...]:
        """What the strategy journaled in this session so far — its notes (``Note``), its
        planned calls (``PlannedCalls``) and the model's answers in the conversation
        (``ModelTurn``), each call with its result — in order: what a strategy resumed after a
        pause or a crash continues from, so it never repeats a step that ran nor takes one
        phase's answer for another's."""
        return () if self._history is None else self._history()

    def remaining_budget(self) -> dict[str, Any]:
        """What is left of each limit (``None`` for an unlimited one)."""
        return self._left()

    def record(self, kind: str, data: Mapping[str, Any]) -> None:
        """Journal what the strategy decided and why (a route, a grade, a plan) as a
        ``strategy.note`` event: it changes nothing the run does, and audit shows it."""
        if self._record is None:
            raise WrongState("this handle journals nothing")
        self._record(kind, data)


class Strategy(Protocol):
    """A reasoning strategy: drives the run through the handle and returns the answer."""

    async def run(self, handle: Handle) -> str:
        """Drive one run through ``handle`` and return the answer."""
        ...
