"""Instructions per step, counted (not timed): python bench/instructions.py [--store URL]
[--telemetry] [--output] [--compaction] [--containment] [--quota]

Wall-clock figures on a shared 2-vCPU machine move by 30% from one minute to the next; the
number of machine instructions a step executes does not. This runs the scripted 20-tool-call
run of ``bench/overhead.py`` under valgrind's cachegrind (deterministic for a fixed
PYTHONHASHSEED) for N and N + 40 runs and prints the difference per step, so set-up and imports
cancel out. Use it to compare two versions of the hot path; use ``overhead.py`` for time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

RUNS = 40
STEPS_PER_RUN = 21

CHILD = """
import asyncio, dataclasses, sys
sys.path.insert(0, {bench!r})
from overhead import BUDGET, twenty_call_agent
from tether import Budget
from tether.policy import AllowAll
from tether.tools import calculator
agent, budget, without = twenty_call_agent(), BUDGET, {without!r}
if {store!r}:
    agent = dataclasses.replace(agent, store={store!r})
if "calculator" in without:
    calculator.evaluate = lambda expression: 3
if "budget" in without:
    budget = Budget()
if "policy" in without:
    agent = dataclasses.replace(agent, policy=AllowAll())
if "+output" in without:  # structured output on: the last answer validates as Done
    from pydantic import BaseModel
    from overhead import TOOL_CALLS
    from tether import ModelResponse, ScriptedModel, ToolCall
    class Done(BaseModel):
        done: bool
    script = [ModelResponse(tool_calls=(ToolCall("c%d" % i, "calculator",
                                                 dict(expression="%d * 3" % i)),))
              for i in range(TOOL_CALLS)]
    agent = dataclasses.replace(agent, model=ScriptedModel([*script, '{{"done": true}}']),
                                output_type=Done)
if "+compaction" in without:  # compaction armed (a window no request comes near): its check
    from tether import Compaction  # runs before every model turn; it never compacts
    agent = dataclasses.replace(agent, compaction=Compaction(context_window=10_000_000))
if "+effects" in without:  # the calculator as a side effect the request asks for ("compute"),
    from tether.policy import (AllowAll, DenyOverrides, contain_untrusted_flows,  # so the
        keep_private, named_days, no_unasked_repeats, scope_to_plan,  # containment rules
        scope_to_request, untrusted_shapes)  # run their whole course on every call
    from tether.tools import Calculator
    from tether.tools.base import ToolMeta
    class Effectful(Calculator):
        meta = ToolMeta(tags=frozenset({{"math"}}), timeout=2.0, side_effect=True, egress=True,
                        intents=frozenset({{"compute"}}))
    policy = AllowAll()
    if "+scoped" in without:
        policy = DenyOverrides(contain_untrusted_flows, scope_to_request)
    if "+contained" in without:
        policy = DenyOverrides(contain_untrusted_flows, scope_to_plan, keep_private,
                               no_unasked_repeats, untrusted_shapes, named_days)
    agent = dataclasses.replace(agent, tools=[Effectful()], policy=policy)
if "+quota" in without:  # a token quota and a tool-call quota, per tenant, in the store
    from tether import Quota
    agent = dataclasses.replace(agent, quotas=[
        Quota("tokens", 10**12, "1d", counts="tokens"), Quota("calls", 10**9, "1h")])
if {telemetry!r}:  # spans derived and exported to memory (and metrics recorded), on a thread
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tether.observe import OTelSink
    sink = OTelSink(InMemorySpanExporter(),
                    meter_provider=MeterProvider() if {telemetry!r} == "metrics" else None)
    agent = dataclasses.replace(agent, telemetry=[sink])
async def main() -> None:
    for _ in range({runs}):
        await agent.arun("compute", budget=budget)
asyncio.run(main())
if {telemetry!r}:
    sink.close()  # every queued event derived and exported: all of its work is counted
"""

# What --breakdown takes away, one more part each time.
BREAKDOWN = (("as measured", ()),
             ("the Calculator's own work replaced by a constant", ("calculator",)),
             ("... and no budget limits", ("calculator", "budget")),
             ("... and an allow-all policy", ("calculator", "budget", "policy")))


def instructions(runs: int, store: str, without: tuple[str, ...] = ()) -> int:
    return _counted(CACHEGRIND, runs, store, without, "")


CACHEGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=no",
              "--cachegrind-out-file=/dev/null")


def counted(code: str, *args: str, valgrind: Sequence[str] = CACHEGRIND) -> int:
    """The machine instructions of ``python -c code args...`` in a child process under valgrind
    (deterministic: PYTHONHASHSEED fixed). Every bench script counts through this one."""
    done = subprocess.run([*valgrind, sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode or match is None:
        raise SystemExit(f"the counted child failed, or valgrind gave no count:\n"
                         f"{done.stderr[-3000:]}")
    return int(match.group(1).replace(",", ""))


def _counted(valgrind: Sequence[str], runs: int, store: str, without: tuple[str, ...],
             telemetry: str) -> int:
    return counted(CHILD.format(bench=str(Path(__file__).parent), store=store, runs=runs,
                                without=without, telemetry=telemetry), valgrind=valgrind)


def threads(runs: int, store: str, telemetry: str) -> tuple[int, int]:
    """Instructions of the main thread (the run's: its event loop) and of all threads, counted
    by callgrind per thread: telemetry derives and exports on a thread of its own."""
    with tempfile.TemporaryDirectory() as out:
        _counted(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                  f"--callgrind-out-file={out}/cg.%p"], runs, store, (), telemetry)
        totals = {}
        for path in Path(out).iterdir():
            match = re.search(r"^totals:\s+(\d+)", path.read_text(errors="replace"), re.M)
            if match is not None:
                totals[path.name] = int(match.group(1))
    main = next(count for name, count in totals.items() if name.endswith("-01"))
    return main, sum(totals.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="",
                        help="e.g. memory:// or sqlite:///{tmp}/x.db ({tmp}: a scratch dir)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also count with the tool, the budget and the policy taken away")
    parser.add_argument("--telemetry", action="store_true",
                        help="also count with an OTelSink (in-memory exporter, metrics on)")
    parser.add_argument("--output", action="store_true",
                        help="also count with structured output on (an output_type, the last "
                             "answer valid JSON)")
    parser.add_argument("--containment", action="store_true",
                        help="also count the calculator as a side effect under no policy, "
                             "'scoped' and 'contained' (the injection-containment rules)")
    parser.add_argument("--quota", action="store_true",
                        help="also count with two quotas (tokens, tool calls) kept in --store")
    parser.add_argument("--compaction", action="store_true",
                        help="also count with compaction armed (Compaction(context_window="
                             "10_000_000): checked before every turn, never triggered)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    print(f"python {sys.version.split()[0]}, store {args.store or 'none'}")
    modes = list(BREAKDOWN if args.breakdown else BREAKDOWN[:1])
    if args.output:
        modes.append(("structured output on (output_type=Done)", ("+output",)))
    if args.quota:
        modes.append(("two quotas (tokens, tool calls) in the store", ("+quota",)))
    if args.compaction:
        modes.append(("compaction armed (never triggered)", ("+compaction",)))
    if args.containment:
        modes += [("side-effecting calculator, policy off", ("+effects",)),
                  ("... scoped (flows, scope_to_request)", ("+effects", "+scoped")),
                  ("... contained (flows, plan, labels, repeats, copies, days)",
                   ("+effects", "+contained"))]
    for label, without in modes:
        with tempfile.TemporaryDirectory() as scratch:
            store = args.store.replace("{tmp}", scratch)
            base = instructions(5, store, without)
            more = instructions(5 + RUNS, store, without)
        print(f"  {label:<50} {per_step(more - base):7.1f} k instructions per step")
    if args.telemetry:  # callgrind, per thread: the run's own thread, and all of them
        print(f"  {'telemetry (OTelSink, in-memory exporter)':<50} run's thread  all threads")
        for label, telemetry in (("off", ""), ("traces", "traces"),
                                 ("traces and metrics", "metrics")):
            with tempfile.TemporaryDirectory() as scratch:
                store = args.store.replace("{tmp}", scratch)
                base_main, base_all = threads(5, store, telemetry)
                main_more, all_more = threads(5 + RUNS, store, telemetry)
            print(f"    {label:<48} {per_step(main_more - base_main):7.1f} k     "
                  f"{per_step(all_more - base_all):7.1f} k")


def per_step(instructions: int) -> float:
    return instructions / (RUNS * STEPS_PER_RUN) / 1000


if __name__ == "__main__":
    main()
