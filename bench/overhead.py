"""Runtime overhead of the chokepoint, measured (not asserted): python bench/overhead.py

Prints: median µs per step of a scripted 20-tool-call run with a policy and all five budget
limits on (>= 200 runs); bytes retained per finished Result (1,000 kept); ``import tether`` ms over
a bare interpreter; wall time of 1,000 concurrent quickstart sessions under asyncio.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import subprocess
import sys
import time
import timeit
import tracemalloc
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from tether import Agent, Budget, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall
from tether.policy import Action, Context, Resource, Subject
from tether.tools import Calculator
from tether.vocabulary import EventType

TOOL_CALLS = 20
RUNS = 300


class DenyExpensive:
    """A realistic small policy: deny tools tagged 'expensive', allow the rest."""

    policy_id = "deny-expensive"
    inline = True  # pure: decides on the caller's thread (undeclared, it would get a thread)
    reads_provenance = False  # undeclared, its reads' origins would be worked out (policy.reads)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if "expensive" in resource.tags:
            return Decision(Effect.DENY, "expensive tools are off", self.policy_id)
        return Decision(Effect.ALLOW, "ok", self.policy_id)


def twenty_call_agent() -> Agent:
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "calculator", {"expression": f"{i} * 3"}),))
        for i in range(TOOL_CALLS)
    ]
    script.append("done")
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[Calculator()],
                 policy=DenyExpensive())


BUDGET = Budget(max_tokens=1_000_000, max_cost_usd=Decimal("10"), max_steps=100,
                max_tool_calls=100, max_seconds=60)


def per_step_us(agent: Agent) -> tuple[list[float], list[float]]:
    """µs per step of each run: awaited in one event loop, and through the sync ``agent.run``."""

    async def awaited() -> list[float]:
        samples = []
        for _ in range(RUNS):
            start = time.perf_counter()
            result = await agent.arun("compute", budget=BUDGET)
            samples.append((time.perf_counter() - start) / len(result.trajectory.steps) * 1e6)
            assert result.stop_reason == "finished", result.stop_reason
        return samples

    sync = []
    for _ in range(RUNS):
        start = time.perf_counter()
        result = agent.run("compute", budget=BUDGET)
        sync.append((time.perf_counter() - start) / len(result.trajectory.steps) * 1e6)
    return asyncio.run(awaited()), sync


def bytes_per_result(agent: Agent, keep: int = 1000) -> float:
    async def many() -> list[object]:
        return [await agent.arun("compute", budget=BUDGET) for _ in range(keep)]

    asyncio.run(many())  # warm caches (pydantic, interned strings) outside the measurement
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = asyncio.run(many())
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert len(kept) == keep
    return grown / keep


def import_ms(repeat: int = 15) -> float:
    def run(code: str) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return (run("import tether") - run("pass")) * 1000


def concurrent_sessions_s(n: int = 1000) -> float:
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], policy=DenyExpensive())

    async def main() -> float:
        start = time.perf_counter()
        results = await asyncio.gather(*(agent.arun("What is 17 * 23?", budget=BUDGET)
                                          for _ in range(n)))
        elapsed = time.perf_counter() - start
        assert all(r.answer == "391" for r in results)
        return elapsed

    return asyncio.run(main())


def awaited_us(agent: Agent, budget: Budget) -> float:
    async def runs() -> list[float]:
        samples = []
        for _ in range(RUNS):
            start = time.perf_counter()
            result = await agent.arun("compute", budget=budget)
            samples.append((time.perf_counter() - start) / len(result.trajectory.steps) * 1e6)
        return samples

    return statistics.median(asyncio.run(runs()))


def breakdown() -> None:
    """The same measurement with one part taken out at a time (monkeypatched, this process
    only), to show where a step's time goes."""
    import dataclasses
    from unittest import mock

    from tether.journal import chain as journal
    from tether.policy import AllowAll
    from tether.runtime.chokepoint import turn
    from tether.tools import calculator

    agent = twenty_call_agent()
    agent.run("warm up", budget=BUDGET)
    print(f"as measured                                   {awaited_us(agent, BUDGET):6.1f} µs")
    with mock.patch.object(calculator, "evaluate", lambda expression: 3):
        print(f"Calculator work replaced by a constant        {awaited_us(agent, BUDGET):6.1f} µs")
    print(f"no budget limits                              {awaited_us(agent, Budget()):6.1f} µs")
    allow = dataclasses.replace(agent, policy=AllowAll())
    print(f"no budget, allow-all policy                   {awaited_us(allow, Budget()):6.1f} µs")

    def apply_only(self: journal.Journal, type: EventType, data: Mapping[str, Any]) -> int:
        if self._on_append is not None:
            self._on_append(type, data)
        return 0

    with mock.patch.object(journal.Journal, "append", apply_only):
        print(f"journal records not kept (projection applied) {awaited_us(agent, BUDGET):6.1f} µs")
    with mock.patch.object(turn, "call_signature", lambda name, args: name + repr(args)):
        print(f"loop signature without canonical JSON/digest  {awaited_us(agent, BUDGET):6.1f} µs")


def reference_us() -> float:
    """µs for 1,000 calls of an empty Python function: how fast this interpreter on this machine
    runs the kind of code a step is made of, so figures from two machines can be compared."""
    def empty() -> None:
        return None

    def thousand() -> None:
        for _ in range(1000):
            empty()

    return min(timeit.repeat(thousand, number=200, repeat=7)) / 200 * 1e6


def main() -> None:
    if "--breakdown" in sys.argv:
        breakdown()
        return
    agent = twenty_call_agent()
    agent.run("warm up", budget=BUDGET)
    print(f"python {sys.version.split()[0]}; reference: 1,000 empty function calls take "
          f"{reference_us():.0f} µs here")
    awaited, sync = per_step_us(agent)
    print(f"per step (20-tool-call run, policy + 5 limits, median of {RUNS}): "
          f"{statistics.median(awaited):.1f} µs awaited (fastest run {min(awaited):.1f}), "
          f"{statistics.median(sync):.1f} µs via sync run()   target <= 20")
    print(f"retained per finished Result (1,000 kept, 21-step run): "
          f"{bytes_per_result(agent) / 1024:.1f} KB   target <= 24")
    print(f"import tether over a bare interpreter: {import_ms():.1f} ms   target <= 75")
    print(f"1,000 concurrent quickstart sessions: {concurrent_sessions_s():.3f} s   target <= 0.5")


if __name__ == "__main__":
    main()
