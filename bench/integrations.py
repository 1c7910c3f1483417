"""What tether adds to a tool call of pydantic-ai's and the OpenAI Agents SDK's own agents
(docs/benchmarks.md, "Under pydantic-ai" and "Under the OpenAI Agents SDK").

One pydantic-ai ``Agent.run`` with ``FunctionModel`` (no network, no tokens): the model asks for
``--calls`` tool calls of a trivial tool in one turn, then answers; pydantic-ai runs them. Then
one call a turn for 40 turns: each turn adds a model request (metered). The
same run under tether (``PydanticAIRun``: every call through the door — policy, budget,
journal — and the model's two requests metered), on the memory store and on SQLite. The figure
is the wall time per tool call, the best of ``--rounds`` runs of each, and the ratio to
pydantic-ai alone (one run of this script: the machine's speed drifts between runs). Then the
same two cases for the Agents SDK's ``Runner.run`` with its ``ScriptedModel``, alone and under
tether (``OpenAIAgentsRun``: each call asked first — ``needs_approval``, a policy probe — then
through the door).

    PYTHONPATH=src .venv/bin/python bench/integrations.py [--calls 200] [--rounds 5]
        [--only pydantic-ai|openai-agents]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["pydantic-ai", "openai-agents"], default=None)
    args = parser.parse_args()
    # many calls in one turn (the tool side alone), then one call a turn (a model request too)
    from sdk_integration import sdk_alone, sdk_governed
    cases = {"pydantic-ai": (alone, governed), "openai-agents": (sdk_alone, sdk_governed)}
    for name, (bare, under) in cases.items():
        if args.only in (None, name):
            for calls, turns in ((args.calls, 1), (1, TURNS)):
                await measure(name, bare, under, calls, turns, args.rounds)


async def measure(name: str, bare: Any, under: Any, calls: int, turns: int,
                  rounds: int) -> None:
    n, first = calls * turns, f"{name} alone"
    with tempfile.TemporaryDirectory() as tmp:
        rows: dict[str, list[float]] = {first: [], "under tether, memory store": [],
                                        "under tether, SQLite": []}
        for i in range(rounds):
            rows[first].append(await bare(calls, turns))
            rows["under tether, memory store"].append(await under(calls, turns, MemoryStore()))
            rows["under tether, SQLite"].append(
                await under(calls, turns, SQLiteStore(Path(tmp) / f"{i}.db")))
    base = min(rows[first]) / n
    print(f"{n} tool calls, {calls} in each of {turns} turns; best of {rounds} runs")
    print(f"{'':30} {'per tool call':>14} {'ratio':>7}")
    for row, times in rows.items():
        per = min(times) / n
        print(f"{row:30} {per * 1e6:11.0f} µs {per / base:6.2f}x")
    print()


if __name__ == "__main__":
    asyncio.run(main())
