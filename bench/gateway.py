"""A gateway that lives for weeks: memory per call, and what rolling its journal costs.

Memory: one Gateway session on SQLite makes ``--warmup`` calls of a trivial tool, then
``--calls`` more, traced by tracemalloc from the start; the traced size those calls added, per
call, is the figure (deterministic: no RSS, no timing). Run it against an older tree (its
PYTHONPATH) for the "before" figure; on a tree without ``roll_calls`` only this part runs.

Roll: each call's wall time with the journal in one session and rolled every ``--roll`` calls.
A roll's cost is the call that rolled less a call that did not, both medians within one run
(the machine's speed drifts between runs), then the median over the runs.

    PYTHONPATH=src .venv/bin/python bench/gateway.py [--calls 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from tether import Decision, Effect, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.sqlite import SQLiteStore


@tool
def echo(n: int) -> str:
    """Say the number back."""
    return f"n={n}"


class Allow:
    reads_provenance = False  # undeclared, its reads' origins would be worked out (policy.reads)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.ALLOW, "ok", "allow")


async def calls(gateway: Gateway, start: int, count: int) -> None:
    for i in range(start, start + count):
        await gateway.call("echo", {"n": i})


async def memory_per_call(directory: Path, warmup: int, count: int) -> float:
    store = SQLiteStore(directory / "memory.db")
    tracemalloc.start()  # from the start: what replaces an untraced object is not growth
    try:
        gateway = Gateway([echo], policy=Allow(), client="bench", store=store)
        await calls(gateway, 0, warmup)
        gc.collect()  # cyclic garbage the collector has not reached yet is not kept
        before = tracemalloc.get_traced_memory()[0]
        await calls(gateway, warmup, count)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    store.close()
    return grown / count


async def call_times(directory: Path, name: str, count: int,
                     **options: Any) -> tuple[list[float], list[float]]:
    """Each call's wall time: of the calls that rolled the journal, and of the others."""
    store = SQLiteStore(directory / f"{name}.db")
    gateway = Gateway([echo], policy=Allow(), client="bench", store=store, **options)
    rolled: list[float] = []
    plain: list[float] = []
    for i in range(count):
        segment = getattr(gateway, "segment", 1)
        started = time.perf_counter()
        await gateway.call("echo", {"n": i})
        elapsed = time.perf_counter() - started
        (rolled if getattr(gateway, "segment", 1) != segment else plain).append(elapsed)
    gateway.close()
    store.close()
    return rolled, plain


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=2000, help="calls before measuring "
                        "memory: more than 1.5 windows (the default window is 1,000 calls)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--roll", type=int, action="append", help="roll every N calls "
                        "(repeatable; default 1000 and 100)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        per_call = await memory_per_call(directory, args.warmup, args.calls)
        print(f"memory left alive per call, {args.calls} calls after {args.warmup}: "
              f"{per_call:.0f} bytes")
        if "roll_calls" not in inspect.signature(Gateway).parameters:
            print("this tree cannot roll a gateway's journal: no roll figures")
            return
        rolls = args.roll or [1000, 100]
        means: dict[int, list[float]] = {0: [], **{n: [] for n in rolls}}
        roll_costs: list[float] = []
        for round_ in range(args.rounds):
            for n in means:
                rolled, plain = await call_times(directory, f"r{n}-{round_}", args.calls,
                                                 roll_calls=n or None)
                means[n].append(statistics.fmean(rolled + plain))
                if rolled:  # within one run: the same machine state for both
                    roll_costs.append(statistics.median(rolled) - statistics.median(plain))
    print(f"wall time per call, {args.calls} calls on SQLite, median of {args.rounds} rounds' "
          "means:")
    for n, samples in means.items():
        label = "one session" if not n else f"rolled every {n}"
        print(f"  {label:>18}: {statistics.median(samples) * 1e6:7.0f} µs")
    print(f"one roll (the call that rolls, less a call that does not, median within each run, "
          f"then across {len(roll_costs)} runs): {statistics.median(roll_costs) * 1e3:.2f} ms")
    for n in rolls:
        print(f"  amortised when rolled every {n}: "
              f"{statistics.median(roll_costs) / n * 1e6:.1f} µs per call")

if __name__ == "__main__":
    asyncio.run(main())
