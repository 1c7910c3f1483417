"""A plain sync tool's step against an async tool's: python bench/sync_tool.py [--runs N]

A scripted model calls ``add(a, b)`` 20 times with distinct arguments, then answers; the tool is
a plain ``def`` in one agent, a ``def`` declared ``inline=True`` in another and an ``async def``
in the third, interleaved in one run so the ratios hold on a noisy machine. What it answers: what
does running a blocking tool off the event loop (on a daemon worker) cost per step, against a
tool that runs on the loop?
"""

from __future__ import annotations

import argparse
import statistics
import time

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

STEPS = 20


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add", inline=True)
def add_inline(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add")
async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(adder: object) -> Agent:
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "add", {"a": i, "b": i}),))
        for i in range(STEPS)]
    return Agent(model=ScriptedModel([*script, "done"]), reasoning=ReAct(),
                 tools=[adder])  # type: ignore[list-item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    agents = {"sync tool": agent(add), "sync, inline": agent(add_inline),
              "async tool": agent(add_async)}
    times: dict[str, list[float]] = {name: [] for name in agents}
    for _ in range(args.runs):
        for name, each in agents.items():
            start = time.perf_counter()
            each.run("add", budget=Budget(max_steps=100))
            times[name].append((time.perf_counter() - start) / (STEPS + 1) * 1e6)
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, value in median.items():
        print(f"  {name:<12} {value:7.1f} µs per step (median of {args.runs} runs)")
    print(f"  sync / async: {median['sync tool'] / median['async tool']:.2f}, "
          f"inline / async: {median['sync, inline'] / median['async tool']:.2f}")


if __name__ == "__main__":
    main()
