"""What tether adds to a tool call of pydantic-ai's, LangGraph's and the OpenAI Agents SDK's own
agents (docs/benchmarks.md, "Under pydantic-ai", "Under LangGraph", "Under the OpenAI Agents
SDK").

One pydantic-ai ``Agent.run`` with ``FunctionModel`` (no network, no tokens): the model asks for
``--calls`` tool calls of a trivial tool in one turn, then answers; pydantic-ai runs them. Then
one call a turn for 40 turns: each turn adds a model request (metered). The
same run under tether (``PydanticAIRun``: every call through the door — policy, budget,
journal — and the model's two requests metered), on the memory store and on SQLite. The figure
is the wall time per tool call, the best of ``--rounds`` runs of each, and the ratio to
pydantic-ai alone (one run of this script: the machine's speed drifts between runs).

LangGraph the same way (``--framework langgraph``): LangChain's ``create_agent`` with a
scripted chat model, alone and with tether's middleware (``LangGraphRun``), ``ainvoke``. LangGraph
runs each tool call of a turn as its own task. And the Agents SDK's ``Runner.run`` with its
``ScriptedModel`` (``--framework openai-agents``), alone and under tether (``OpenAIAgentsRun``:
each call asked first — ``needs_approval``, a policy probe — then through the door).

    PYTHONPATH=src .venv/bin/python bench/integrations.py [--calls 200] [--rounds 5]
        [--framework pydantic-ai|langgraph|openai-agents|all]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from tether import Decision, Effect
from tether.integrations.pydantic_ai import PydanticAIRun
from tether.policy import Action, Context, Resource, Subject
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore
from tether.tools.base import ToolMeta

TURNS = 40  # pydantic-ai's own default request_limit is 50


def echo(n: int) -> str:
    """Say the number back."""
    return f"n={n}"


class Allow:
    reads_provenance = False  # undeclared, its reads' origins would be worked out (policy.reads)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.ALLOW, "ok", "allow")


def script(calls: int, turns: int = 1) -> FunctionModel:
    """A model that asks for ``calls`` calls in each of ``turns`` turns, then answers."""
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=100, output_tokens=10)
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < turns:
            return ModelResponse([ToolCallPart("echo", {"n": turn * calls + i})
                                  for i in range(calls)], usage=usage)
        return ModelResponse([TextPart("done")], usage=usage)
    return FunctionModel(model)


async def alone(calls: int, turns: int) -> float:
    agent = Agent(script(calls, turns), tools=[echo])
    started = time.perf_counter()
    await agent.run("echo the numbers")
    return time.perf_counter() - started


async def governed(calls: int, turns: int, store: Any) -> float:
    started = time.perf_counter()  # the run's start is journaled: counted
    run = PydanticAIRun([echo], model=script(calls, turns), policy=Allow(),
                        request="echo the numbers", store=store, meta={"echo": ToolMeta()})
    assert run.model is not None
    agent = Agent(run.model, toolsets=[run.toolset],
                  output_type=[str, DeferredToolRequests])  # type: ignore[arg-type]
    result = await agent.run("echo the numbers")
    run.close(result.output)
    elapsed = time.perf_counter() - started
    assert [e.type for e in store.read(run.id)].count("tool.result") == calls * turns
    return elapsed


Case = Callable[[int, int, str], Awaitable[float]]  # (calls, turns, a folder) -> seconds


def cases(bare: Any, under: Any, **more: Any) -> dict[str, Case]:
    """The rows of one framework: alone (and ``more`` baselines), then under tether on the memory
    store and on SQLite."""
    def alone_case(run: Any) -> Case:
        return lambda c, t, _: run(c, t)

    rows: dict[str, Case] = {"alone": alone_case(bare)}
    rows.update({name: alone_case(run) for name, run in more.items()})
    rows["under tether, memory store"] = lambda c, t, _: under(c, t, MemoryStore())
    rows["under tether, SQLite"] = lambda c, t, tmp: under(
        c, t, SQLiteStore(Path(tmp) / f"{time.perf_counter_ns()}.db"))
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--framework", default="all",
                        choices=("pydantic-ai", "langgraph", "openai-agents", "all"))
    args = parser.parse_args()
    wanted = {args.framework} if args.framework != "all" else {
        "pydantic-ai", "langgraph", "openai-agents"}
    frameworks: dict[str, dict[str, Case]] = {}
    if "pydantic-ai" in wanted:
        frameworks["pydantic-ai"] = cases(alone, governed)
    if "langgraph" in wanted:
        import integrations_langgraph as lg
        frameworks["langgraph"] = cases(lg.alone, lg.governed,
                                        **{"an empty middleware": lg.empty})
    if "openai-agents" in wanted:
        import sdk_integration as sdk
        frameworks["openai-agents"] = cases(sdk.sdk_alone, sdk.sdk_governed)
    # many calls in one turn (the tool side alone), then one call a turn (a model request too)
    for name, rows in frameworks.items():
        for calls, turns in ((args.calls, 1), (1, TURNS)):
            await measure(name, rows, calls, turns, args.rounds)


async def measure(framework: str, cases: dict[str, Case], calls: int, turns: int,
                  rounds: int) -> None:
    n = calls * turns
    with tempfile.TemporaryDirectory() as tmp:
        rows: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, case in cases.items():
                rows[name].append(await case(calls, turns, tmp))
    base = min(rows["alone"]) / n
    print(f"{framework}: {n} tool calls, {calls} in each of {turns} turns; "
          f"best of {rounds} runs")
    print(f"{'':30} {'per tool call':>14} {'ratio':>7}")
    for name, times in rows.items():
        per = min(times) / n
        label = f"{framework} {name}" if name == "alone" else name
        print(f"{label:30} {per * 1e6:11.0f} µs {per / base:6.2f}x")
    print()


if __name__ == "__main__":
    asyncio.run(main())
