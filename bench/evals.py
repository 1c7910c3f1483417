"""What evaluating costs: python bench/evals.py [--rounds N] [--tasks T] [--k K] [--skip-large]

Two questions. (1) The harness's overhead per trial beyond the session itself: a scripted trial
(one tool call, one answer) run by ``evaluate`` — trial id, attempt check, perturbation, session
metadata, grading, the grade's own journal record, the report's estimates — against the same
sessions run directly on the same kind of store, interleaved round by round in one process
(medians; wall time as a ratio taken in one run). (2) 10,000 scripted trials (1,250 tasks × k=8)
on one SQLite store: in one process, then on a Dask LocalCluster of 2 worker processes, with the
speedup.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.evals import Task, evaluate, numeric
from tether.evals.report import Report
from tether.store.memory import MemoryStore


def respond(request: Any) -> ModelResponse | str:
    prompt = next(m.content for m in request.messages if m.role == "user")
    results = [m.content for m in request.messages if m.role == "tool"]
    if not results:
        a, b = (int(n) for n in re.findall(r"\d+", prompt)[:2])
        return ModelResponse(tool_calls=(ToolCall("c1", "multiply", {"a": a, "b": b}),))
    return f"The answer is {results[-1]}."


@tool(inline=True)
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def make_agent() -> Agent:
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[multiply])


def tasks(count: int) -> list[Task]:
    return [Task(f"What is {i} * {i + 7}?", expected=str(i * (i + 7)), grader=numeric(),
                 id=f"t{i}") for i in range(count)]


async def plain(agent: Agent, prompts: list[str], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> None:
        async with gate:
            await agent.session(prompt).arun()

    await asyncio.gather(*(one(p) for p in prompts))


def overhead(rounds: int, count: int, k: int) -> None:
    chosen = tasks(count)
    prompts = [t.prompt for t in chosen for _ in range(k)]
    harness, sessions, reports = [], [], []
    for r in range(rounds):
        agent = make_agent().with_store(MemoryStore())
        start = time.perf_counter()
        asyncio.run(plain(agent, prompts, 8))
        sessions.append((time.perf_counter() - start) / len(prompts))
        start = time.perf_counter()
        report = evaluate(make_agent(), chosen, k=k, store=MemoryStore(), name=f"o{r}")
        harness.append((time.perf_counter() - start) / len(prompts))
        start = time.perf_counter()
        Report.of(f"o{r}", report.records)  # the estimates: once per evaluation
        reports.append(time.perf_counter() - start)
    s, h, e = statistics.median(sessions), statistics.median(harness), statistics.median(reports)
    per_trial = h - e / len(prompts)
    print(f"harness overhead, {count} tasks × k={k} per round, {rounds} rounds, memory store:")
    print(f"  session alone              {s * 1e6:8.0f} µs per trial")
    print(f"  through evaluate           {h * 1e6:8.0f} µs per trial")
    print(f"  of which the report        {e * 1e3:8.1f} ms per evaluation "
          f"({e / len(prompts) * 1e6:.0f} µs per trial here)")
    print(f"  overhead per trial         {(per_trial - s) / s:8.1%} of a scripted trial, "
          "without the report")
    print(f"  overhead with the report   {(h - s) / s:8.1%}")


def large(count: int, k: int, postgres: str | None, concurrency: int) -> None:
    chosen = tasks(count)
    me = f"{Path(__file__).resolve()}:make_agent"
    with tempfile.TemporaryDirectory() as folder:
        timings = {}
        for label, options in (("one process", {}),
                               ("Dask LocalCluster, 2 workers", {"dask": "local",
                                                                 "workers": 2})):
            url = postgres or f"sqlite:///{folder}/{label.split()[0]}.db"
            start = time.perf_counter()
            report = evaluate(me, chosen, k=k, store=url, name=f"large-{time.time()}",
                              concurrency=concurrency, **options)
            timings[label] = time.perf_counter() - start
            assert len(report.records) == count * k and report.slices["canonical"].passed \
                == count * k, "every scripted trial passes"
            print(f"  {label:<30} {count * k} trials in {timings[label]:6.1f} s "
                  f"({count * k / timings[label]:.0f} trials/s)")
        one, spread = timings.values()
        print(f"  speedup on Dask: {one / spread:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=1250)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--small", type=int, default=200, help="tasks in the overhead rounds")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="trials at once per process in the large evaluation")
    parser.add_argument("--postgres", metavar="URL",
                        help="run the large evaluation on this PostgreSQL store, not SQLite")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    overhead(args.rounds, args.small, args.k)
    if not args.skip_large:
        print(f"{args.tasks * args.k} scripted trials on one "
              f"{'PostgreSQL' if args.postgres else 'SQLite'} store:")
        large(args.tasks, args.k, args.postgres, args.concurrency)


if __name__ == "__main__":
    main()
