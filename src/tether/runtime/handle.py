"""The only door a reasoning strategy has: ask the model, call tools, see the budget left.

Decision: a strategy never holds the Environment, a tool, the policy or the journal. It gets this
handle, whose three methods each go through the chokepoint, and which exposes nothing else: it
has no public attribute, and its private slots hold only those three entry points. (Python cannot
stop code that digs through private internals on purpose; strategies are code the operator
installs, and the threat the handle closes is the accidental or model-steered path around the
gate.) Stops are raised from inside these methods, so a strategy cannot overrun a budget by
forgetting to check one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from tether.runtime.result import ToolResult
from tether.types import ModelResponse, ToolCall


class Handle:
    __slots__ = ("_ask", "_call", "_left")

    def __init__(
        self,
        ask: Callable[..., Awaitable[ModelResponse]],
        call: Callable[[Sequence[ToolCall]], Awaitable[tuple[ToolResult, ...]]],
        left: Callable[[], dict[str, Any]],
    ) -> None:
        self._ask = ask
        self._call = call
        self._left = left

    def __repr__(self) -> str:
        return "<tether Handle>"

    async def ask_model(self, *, note: str | None = None) -> ModelResponse:
        """One model turn with the agent's tools offered; ``note`` is added as a user message."""
        return await self._ask(note=note)

    async def call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run tool calls through the gate; one result per call, in order."""
        return await self._call(tuple(calls))

    def remaining_budget(self) -> dict[str, Any]:
        """What is left of each limit (``None`` for an unlimited one)."""
        return self._left()


class Strategy(Protocol):
    """A reasoning strategy: drives the run through the handle and returns the answer."""

    async def run(self, handle: Handle) -> str: ...
