"""The LangGraph case of bench/integrations.py (docs/benchmarks.md, "Under LangGraph").

LangChain's ``create_agent`` (LangGraph underneath, no checkpointer) with a scripted chat model
(no network, no tokens) and a trivial sync tool: the model asks for ``calls`` calls in each of
``turns`` turns, then answers. Alone, with a middleware that does nothing, and with tether's
middleware (``LangGraphRun``: every call through the door — policy, budget, journal — and every
model call metered), ``ainvoke``.
"""

from __future__ import annotations

import time
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tether import Decision, Effect
from tether.integrations.langgraph import LangGraphRun
from tether.policy import Action, Context, Resource, Subject
from tether.tools.base import ToolMeta

USAGE: Any = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}


def echo(n: int) -> str:
    """Say the number back."""
    return f"n={n}"


class Allow:
    reads_provenance = False  # undeclared, its reads' origins would be worked out (policy.reads)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.ALLOW, "ok", "allow")


class Script(BaseChatModel):
    """A model that asks for ``calls`` calls in each of ``turns`` turns, then answers."""

    calls: int
    turns: int

    @property
    def _llm_type(self) -> str:
        return "script"

    def bind_tools(self, tools: Any, **settings: Any) -> Any:
        return self.bind(**settings)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **settings: Any) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn < self.turns:
            message = AIMessage(content="", usage_metadata=USAGE, tool_calls=[
                {"name": "echo", "args": {"n": turn * self.calls + i}, "id": f"c{turn}_{i}",
                 "type": "tool_call"} for i in range(self.calls)])
        else:
            message = AIMessage(content="done", usage_metadata=USAGE)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _limit(turns: int) -> dict[str, Any]:
    return {"recursion_limit": 4 * turns + 10}  # LangGraph's default (25) is ~12 turns


async def alone(calls: int, turns: int) -> float:
    agent = create_agent(Script(calls=calls, turns=turns), tools=[echo])
    started = time.perf_counter()
    await agent.ainvoke({"messages": [{"role": "user", "content": "echo"}]}, _limit(turns))
    return time.perf_counter() - started


class Empty(AgentMiddleware):
    """A middleware that only passes each call on: what LangChain charges for wrapping at all
    (it traces each wrap hook, on a worker thread), apart from what tether does."""

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


async def empty(calls: int, turns: int) -> float:
    agent = create_agent(Script(calls=calls, turns=turns), tools=[echo], middleware=[Empty()])
    started = time.perf_counter()
    await agent.ainvoke({"messages": [{"role": "user", "content": "echo"}]}, _limit(turns))
    return time.perf_counter() - started


async def governed(calls: int, turns: int, store: Any) -> float:
    started = time.perf_counter()  # the run's start is journaled: counted
    model = Script(calls=calls, turns=turns)
    run = LangGraphRun([echo], model=model, policy=Allow(), request="echo the numbers",
                       store=store, meta={"echo": ToolMeta()})
    agent = create_agent(model, tools=run.tools, middleware=[run.middleware])
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "echo"}]},
                                _limit(turns))
    run.close(state)
    elapsed = time.perf_counter() - started
    assert [e.type for e in store.read(run.id)].count("tool.result") == calls * turns
    return elapsed
