"""The only door a reasoning strategy has: ask the model, call tools, see the budget left.

Decision: a strategy never holds the Environment, a tool, the policy or the journal. It gets this
handle, whose three methods each go through the chokepoint (and a fourth, ``record``, that only
journals what the strategy decided), and which exposes nothing else: it
has no public attribute, and its private slots hold only those three entry points. (Python cannot
stop code that digs through private internals on purpose; strategies are code the operator
installs, and the threat the handle closes is the accidental or model-steered path around the
gate.) Stops are raised from inside these methods, so a strategy cannot overrun a budget by
forgetting to check one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from tether.runtime.result import ToolResult
from tether.types import ModelResponse, ToolCall


class Handle:
    __slots__ = ("_ask", "_call", "_left", "_record", "_task")

    def __init__(
        self,
        ask: Callable[..., Awaitable[ModelResponse]],
        call: Callable[[Sequence[ToolCall]], Awaitable[tuple[ToolResult, ...]]],
        left: Callable[[], dict[str, Any]],
        record: Callable[[str, Mapping[str, Any]], None] | None = None,
        task: str = "",
    ) -> None:
        self._task = task
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
        grade): an answer past the cap is an overrun like any other."""
        if tool_choice is None and max_output_tokens is None:
            return await self._ask(note=note)
        return await self._ask(note=note, tool_choice=tool_choice, cap=max_output_tokens)

    async def call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run tool calls through the gate; one result per call, in order."""
        return await self._call(tuple(calls))

    def remaining_budget(self) -> dict[str, Any]:
        """What is left of each limit (``None`` for an unlimited one)."""
        return self._left()

    def record(self, kind: str, data: Mapping[str, Any]) -> None:
        """Journal what the strategy decided and why (a route, a grade, a plan) as a
        ``strategy.note`` event: it changes nothing the run does, and audit shows it."""
        if self._record is None:
            raise RuntimeError("this handle journals nothing")
        self._record(kind, data)


class Strategy(Protocol):
    """A reasoning strategy: drives the run through the handle and returns the answer."""

    async def run(self, handle: Handle) -> str: ...
