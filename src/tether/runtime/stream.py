"""Streaming a run: text as the model writes it, tool calls as they are decided and finish.

Decision: streaming is a view of the same governed run, not a second loop. The session runs as a
task; the model's text deltas and the journal's tool events are put on a queue the caller reads
from. Budgets, policy and the record are exactly those of ``run()``; the last item is the Result.
"""

from __future__ import annotations

from dataclasses import dataclass

from tether.runtime.result import Result, ToolResult
from tether.types import ToolCall


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """The policy decided a call (``effect``); if it may run, a ToolResultEvent follows."""

    call: ToolCall
    effect: str


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    result: ToolResult


@dataclass(frozen=True, slots=True)
class Finished:
    result: Result


StreamEvent = TextDelta | ToolCallEvent | ToolResultEvent | Finished
