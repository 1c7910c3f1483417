"""Streaming: the same governed run, seen as it happens."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, StopReason
from tether.runtime.stream import Finished, TextDelta, ToolCallEvent, ToolResultEvent
from tether.tools import Calculator

from conftest import call


async def test_run_stream_yields_deltas_tool_events_then_the_result() -> None:
    answer = "The product of seventeen and twenty-three is 391."
    agent = Agent(model=ScriptedModel([call("calculator", {"expression": "17 * 23"}), answer]),
                  reasoning=ReAct(), tools=[Calculator()])
    events = [e async for e in agent.run_stream("What is 17 * 23?")]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolCallEvent") < kinds.index("ToolResultEvent") < kinds.index(
        "TextDelta")
    decided = next(e for e in events if isinstance(e, ToolCallEvent))
    assert decided.call.name == "calculator" and decided.effect == "allow"
    ran = next(e for e in events if isinstance(e, ToolResultEvent))
    assert ran.result.content == "391"
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == answer and len([e for e in events if isinstance(e, TextDelta)]) > 1
    final = events[-1]
    assert isinstance(final, Finished)
    assert final.result.answer == answer and final.result.stop_reason is StopReason.FINISHED


class SlowStreamer(ScriptedModel):
    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        for word in ["one ", "two ", "three "]:
            yield word
            await asyncio.sleep(0.2)
        yield ModelResponse(text="one two three ")


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    agent = Agent(model=SlowStreamer(["unused"]), reasoning=ReAct())
    session = agent.session("x")
    async with contextlib.aclosing(session.astream()) as stream:
        async for event in stream:
            assert event == TextDelta("one ")
            break
    await asyncio.sleep(0)
    last = session.replay()[-1]  # paused, resumable: leaving the loop is an interruption
    assert last.type == "session.paused" and last.data["reason"] == "interrupted"
