"""A long session's step (issue 50, goal 4): does a step cost the same at 2,000 steps as at 100?

One session alternates a read and a side-effecting tool (``write``), step after step, on the
``ScriptedModel`` (what the quickstart, the tests and the scripted evaluations run on) or on a
model that keeps its own count (``CountingModel``: no work of its own that could grow, so what
grows is the runtime's). Each tool call ticks a probe; the cost of a step at *n* is measured
over the window of steps ``[n, n + window)`` of that one session:

- wall time (default): the median of the window's step times (a step is from one tool call to
  the next), the median over ``rounds`` sessions; the ratio of two depths is taken within each
  round, so the machine's drift between rounds cancels;
- instructions (``--instructions``): each window counted by valgrind's callgrind, which the
  child process switches on at the window's start and off at its end (a client request made
  through a 3-line C helper compiled on the spot: needs ``gcc`` and valgrind's headers), so the
  steps before it run at near native speed and a 10,000-step session takes seconds, not hours;
- memory (``--memory``): bytes traced (tracemalloc) per step over the window.

``per_step_costs`` is what ``bench/goals.py`` imports.

    PYTHONPATH=src .venv/bin/python bench/long_session.py [--at 100 2000 10000] [--store sqlite]
        [--model counting] [--compaction] [--instructions] [--memory] [--rounds 3]

With no ``--model``, ``--store`` or ``--compaction`` it measures four settings: the scripted and
the counting model with no store, the scripted model on SQLite, and with compaction on.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether import (
    Agent,
    Budget,
    Compaction,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    Usage,
    tool,
)
from tether.models.base import estimate_message_tokens
from tether.models.pricing import ZERO_PRICE, Price

WINDOW = 50
DEPTHS = (100, 2000)


class Probe:
    """Ticked once per step by the tools: starts and ends the measured windows."""

    def __init__(self, starts: Sequence[int], window: int, mode: str,
                 helper: Any = None) -> None:
        self.starts, self.window, self.mode, self.helper = tuple(starts), window, mode, helper
        self.step = 0
        self.times: list[float] = []  # (wall) each step's tick time, within the windows
        self.costs: dict[int, float] = {}
        self._open: int | None = None
        self._mark = 0.0

    def tick(self) -> None:
        step, self.step = self.step, self.step + 1
        if self._open is not None:
            if self.mode == "wall":
                self.times.append(time.perf_counter())
            if step == self._open + self.window:
                self._close(self._open)
                self._open = None
        if self._open is None and step in self.starts:
            self._open = step
            if self.mode == "wall":
                self.times = [time.perf_counter()]
            elif self.mode == "memory":
                gc.collect()
                self._mark = tracemalloc.get_traced_memory()[0]
            else:
                self.helper.window_start()

    def _close(self, start: int) -> None:
        if self.mode == "wall":
            steps = [b - a for a, b in zip(self.times, self.times[1:], strict=False)]
            self.costs[start] = statistics.median(steps) * 1e6  # µs
        elif self.mode == "memory":
            gc.collect()
            self.costs[start] = (tracemalloc.get_traced_memory()[0] - self._mark) / self.window
        else:
            self.helper.window_end(f"w{start}".encode())


class CountingModel:
    """The script's answers by its own count of the calls: no work that grows with the
    conversation, so whatever grows in a session on it is the runtime's."""

    def __init__(self, script: Sequence[ModelResponse | str]) -> None:
        self._script = [ModelResponse(text=s) if isinstance(s, str) else s for s in script]
        self._next = 0

    name = "counting"
    price: Price | None = ZERO_PRICE
    estimate_message_tokens = staticmethod(estimate_message_tokens)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = self._script[self._next]
        self._next += 1
        usage = Usage(request.input_tokens_estimate or 1, 8)
        return ModelResponse(response.text, response.tool_calls, usage, self.name,
                             "tool_calls" if response.tool_calls else "stop")


def script(steps: int) -> list[ModelResponse | str]:
    """``steps`` turns alternating a read and a write, then an answer."""
    turns: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "write" if i % 2 else "read", {"n": i}),))
        for i in range(steps)]
    turns.append("done")
    return turns


def long_agent(steps: int, probe: Probe, *, model: str = "scripted", store: str | None = None,
               compaction: bool = False) -> Agent:
    """The session's recipe: the two tools ticking ``probe``, on ``model``."""

    @tool
    def read(n: int) -> str:
        """Read item n."""
        probe.tick()
        return f"item {n}"

    @tool(side_effect=True)
    def write(n: int) -> str:
        """Write item n."""
        probe.tick()
        return f"wrote {n}"

    turns = script(steps)
    answering = ScriptedModel(turns) if model == "scripted" else CountingModel(turns)
    return Agent(model=answering, reasoning=ReAct(), tools=[read, write], store=store,
                 compaction=(Compaction(strategy="drop", context_window=20_000, keep_last=8)
                             if compaction else None))


def one_session(depths: Sequence[int], window: int, mode: str, *, model: str = "scripted",
                store: str | None = None, compaction: bool = False,
                helper: Any = None) -> dict[int, float]:
    """Run one session through the deepest window; the cost of a step at each depth."""
    probe = Probe(depths, window, mode, helper)
    steps = max(depths) + window + 1
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{directory}/long.db" if store == "sqlite" else store
        agent = long_agent(steps, probe, model=model, store=url, compaction=compaction)
        result = agent.run("go", budget=Budget(max_steps=steps + 10))
        assert result.stop_reason == "finished", (result.stop_reason, result.answer)
    return probe.costs


@dataclass(frozen=True)
class Figures:
    """A step's cost at each depth (µs, instructions or bytes), and each depth's ratio to the
    first."""

    unit: str
    cost: dict[int, float]
    ratio: dict[int, float]


def per_step_costs(depths: Sequence[int] = DEPTHS, *, window: int = WINDOW, rounds: int = 3,
                   model: str = "scripted", store: str | None = None,
                   compaction: bool = False, mode: str = "wall") -> Figures:
    """The per-step cost of one long session at each of ``depths`` (ascending) and the ratios
    to the first depth. ``mode``: ``"wall"`` (µs, medians over ``rounds`` sessions, ratios
    within each round), ``"instructions"`` (callgrind, one session in a child process) or
    ``"memory"`` (bytes traced per step)."""
    depths = sorted(depths)
    if mode == "instructions":
        cost = counted_instructions(depths, window, model=model, store=store,
                                    compaction=compaction)
        return Figures("instructions", cost, {d: cost[d] / cost[depths[0]] for d in depths})
    runs = []
    for _ in range(rounds):
        if mode == "memory":
            tracemalloc.start()
        try:
            runs.append(one_session(depths, window, mode, model=model, store=store,
                                    compaction=compaction))
        finally:
            if mode == "memory":
                tracemalloc.stop()
    cost = {d: statistics.median(r[d] for r in runs) for d in depths}
    if mode == "memory":
        return Figures("bytes", cost, {d: cost[d] / cost[depths[0]] for d in depths})
    ratio = {d: statistics.median(r[d] / r[depths[0]] for r in runs) for d in depths}
    return Figures("µs", cost, ratio)


HELPER_C = """#include <valgrind/callgrind.h>
void window_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void window_end(const char *name) { CALLGRIND_DUMP_STATS_AT(name); CALLGRIND_STOP_INSTRUMENTATION; }
"""


def counted_instructions(depths: Sequence[int], window: int, **options: Any) -> dict[int, float]:
    """Instructions per step at each depth: one session under callgrind, instrumented only
    inside the windows."""
    if not (shutil.which("valgrind") and shutil.which("gcc")):
        raise RuntimeError("--instructions needs valgrind and gcc")
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        (work / "helper.c").write_text(HELPER_C)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(work / "helper.so"),
                        str(work / "helper.c")], check=True)
        child = [sys.executable, __file__, "--child", str(work / "helper.so"),
                 "--at", *map(str, depths), "--window", str(window),
                 "--options", json.dumps(options)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={work}/cg.out", *child],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cost: dict[int, float] = {}
        for dump in work.glob("cg.out*"):
            text = dump.read_text(errors="replace")
            trigger = re.search(r"^desc: Trigger: Client Request: w(\d+)", text, re.M)
            total = re.search(r"^totals: (\d+)", text, re.M)
            if trigger and total:
                cost[int(trigger.group(1))] = int(total.group(1)) / window
    return cost


SETTINGS = (("scripted", None, False), ("counting", None, False), ("scripted", "sqlite", False),
            ("scripted", None, True))  # (model, store, compaction): what a default run measures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=int, nargs="+", default=list(DEPTHS),
                        help="the depths (steps) to measure a step at; the first is the base")
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=("scripted", "counting"), default=None)
    parser.add_argument("--store", default=None, help="sqlite, or a store URL")
    parser.add_argument("--compaction", action="store_true")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        helper = ctypes.CDLL(args.child)
        one_session(args.at, args.window, "instructions", helper=helper,
                    **json.loads(args.options))
        return
    mode = "instructions" if args.instructions else "memory" if args.memory else "wall"
    chosen = args.model or args.store or args.compaction
    for model, store, compaction in ([(args.model or "scripted", args.store, args.compaction)]
                                     if chosen else SETTINGS):
        figures = per_step_costs(args.at, window=args.window, rounds=args.rounds, model=model,
                                 store=store, compaction=compaction, mode=mode)
        print(f"model={model} store={store or 'none'} compaction={'on' if compaction else 'off'}"
              f" window={args.window}: {figures.unit} per step")
        for depth in sorted(figures.cost):
            print(f"  step {depth:>6,}: {figures.cost[depth]:>12,.1f}   "
                  f"x{figures.ratio[depth]:.2f} of step {min(figures.cost):,}")

if __name__ == "__main__":
    main()
