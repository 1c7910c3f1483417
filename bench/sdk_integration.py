"""The OpenAI Agents SDK's cases of bench/integrations.py: ``Runner.run`` with the SDK's own
``ScriptedModel`` (no network, no tokens), alone and under tether (``OpenAIAgentsRun``)."""

from __future__ import annotations

import time
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.testing.model import ModelCall
from agents.usage import Usage

from tether import Decision, Effect
from tether.integrations.openai_agents import OpenAIAgentsRun
from tether.policy import Action, Context, Resource, Subject
from tether.tools.base import ToolMeta

set_tracing_disabled(True)  # the SDK would export its traces to OpenAI


@function_tool
def echo(n: int) -> str:
    """Say the number back."""
    return f"n={n}"


class Allow:
    reads_provenance = False  # undeclared, its reads' origins would be worked out (policy.reads)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.ALLOW, "ok", "allow")


def script(calls: int, turns: int) -> ScriptedModel:
    """A model that asks for ``calls`` calls in each of ``turns`` turns, then answers."""
    usage = Usage(requests=1, input_tokens=100, output_tokens=10, total_tokens=110)
    counter = {"turn": 0}

    def turn(call: ModelCall) -> ModelStep:
        t = counter["turn"]
        counter["turn"] += 1
        if t < turns:
            return ModelStep(output=[function_call("echo", {"n": t * calls + i},
                                                   call_id=f"c{t}_{i}") for i in range(calls)],
                             usage=usage)
        return ModelStep(output=[assistant_message("done")], usage=usage)

    return ScriptedModel([ModelStep.respond(turn) for _ in range(turns + 1)])


async def sdk_alone(calls: int, turns: int) -> float:
    agent = Agent(name="echo", model=script(calls, turns), tools=[echo])
    started = time.perf_counter()
    await Runner.run(agent, "echo the numbers", max_turns=turns + 5)
    return time.perf_counter() - started


async def sdk_governed(calls: int, turns: int, store: Any) -> float:
    started = time.perf_counter()  # the run's start is journaled: counted
    run = OpenAIAgentsRun([echo], model=script(calls, turns), policy=Allow(),
                          request="echo the numbers", store=store, meta={"echo": ToolMeta()})
    assert run.model is not None
    agent = Agent(name="echo", model=run.model, tools=run.tools)
    result = await Runner.run(agent, "echo the numbers", max_turns=turns + 5)
    run.close(result.final_output)
    elapsed = time.perf_counter() - started
    assert [e.type for e in store.read(run.id)].count("tool.result") == calls * turns
    return elapsed
