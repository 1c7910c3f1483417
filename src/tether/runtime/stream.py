"""Streaming a run: text as the model writes it, tool calls as they are decided and finish.

Decision: streaming is a view of the same governed run, not a second loop. The session runs as a
task; the model's text deltas and the journal's tool events are put on a queue the caller reads
from. Budgets, policy and the record are exactly those of ``run()``; the last item is the Result.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from tether.journal.chain import EventBus
from tether.runtime.record.result import Result, ToolResult
from tether.types import Event, ToolCall
from tether.vocabulary import EventType


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text, as it arrives."""
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """The policy decided a call (``effect``); if it may run, a ToolResultEvent follows."""

    call: ToolCall
    effect: str


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """A tool call's result, as the model will read it."""
    result: ToolResult


@dataclass(frozen=True, slots=True)
class Finished:
    """The run ended or paused: the last item, with its ``Result``."""
    result: Result


StreamEvent = TextDelta | ToolCallEvent | ToolResultEvent | Finished


async def stream(events: EventBus, run: Callable[[], Awaitable[Result]],
                 on_delta: Callable[[Callable[[str], None] | None], None],
                 ) -> AsyncIterator[StreamEvent]:
    """``run()`` as a task, its journal's tool events (``events``) and text deltas (handed to
    ``on_delta``) yielded as they come, then ``Finished``. Leaving early cancels the task,
    which pauses the session (``tether.runtime.lifecycle.interrupt``)."""
    queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()

    def on_event(event: Event) -> None:
        data = event.data
        if event.type == EventType.TOOL_DECISION:
            queue.put_nowait(ToolCallEvent(
                ToolCall(data["call_id"], data["tool"], data["arguments"]),
                data["decision"]["effect"]))
        elif event.type == EventType.TOOL_RESULT:
            queue.put_nowait(ToolResultEvent(ToolResult(
                data["call_id"], data["tool"], data["content"], data["status"])))

    unsubscribe = events.subscribe(on_event)
    on_delta(lambda text: queue.put_nowait(TextDelta(text)))
    task = asyncio.ensure_future(run())
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (item := await queue.get()) is not None:
            yield item
        yield Finished(task.result())
    finally:
        unsubscribe()
        on_delta(None)
        if not task.done():
            task.cancel()
