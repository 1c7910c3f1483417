"""tether beside its peers on the common path: python bench/peers.py [--rounds N] [--keep DIR]

One scenario for all: a sync tool ``add(a: int, b: int) -> int``, a scripted model (each
framework's own fake model) that calls it 20 times with distinct arguments and then answers.
Measured, each framework in its own process, the processes interleaved round by round so that
the ratios hold on a noisy machine:

- the wall time of a step of one session (the run's time over its 21 model turns);
- 1,000 such sessions at once on one event loop, and the memory each one in flight holds;
- what the quickstart costs to start: its process's wall time over a bare interpreter's.

Peers are installed from PyPI into throwaway virtual environments (``--keep DIR`` reuses them).
A peer that cannot be installed is reported as such; the plain loop (a ``for`` loop calling the
tool, no governance at all) stands in as the floor. tether runs from the interpreter running this
script, with its in-memory and its SQLite journal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# children read and write cached bytecode, as an installed package's users do
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
PEERS = {"petfish": "petfishframework==1.3.0", "aimai-kit": "aimai-kit"}
ROOT = Path(__file__).resolve().parent.parent

# Each child measures one thing and prints one JSON object. ``prepare()`` returns a callable
# that runs one session (whatever per-run objects a framework needs are made outside the time);
# ``session()`` is a coroutine running one session; both must leave CALLS at 20 per session.
HARNESS = r"""
import asyncio, gc, json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
STEPS = 20
CALLS = [0]
measure, n = sys.argv[1], int(sys.argv[2])
{setup}

def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4

if measure == "step":
    times = []
    for i in range(n + 5):
        run = prepare()
        start = time.perf_counter()
        run()
        if i >= 5:  # warm-up runs are not counted
            times.append((time.perf_counter() - start) / (STEPS + 1) * 1e6)
    assert CALLS[0] == (n + 5) * STEPS, CALLS
    print(json.dumps({{"value": statistics.median(times) if times else 0.0}}))
else:
    async def many():
        sessions = [session() for _ in range(n)]
        gc.collect()
        before = rss_kb()
        start = time.perf_counter()
        await asyncio.gather(*sessions)
        return time.perf_counter() - start, before

    elapsed, before = asyncio.run(many())
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert CALLS[0] == n * STEPS, CALLS
    print(json.dumps({{"value": elapsed, "kb_per_session": max(0, peak - before) / n}}))
"""

TETHER = r"""
from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

@tool
def add(a: int, b: int) -> int:
    "Add two integers."
    CALLS[0] += 1
    return a + b

@tool(name="add", inline=True)
def add_inline(a: int, b: int) -> int:
    "Add two integers."
    CALLS[0] += 1
    return a + b

@tool(name="add")
async def add_async(a: int, b: int) -> int:
    "Add two integers."
    CALLS[0] += 1
    return a + b

script = [ModelResponse(tool_calls=(ToolCall(f"c{{i}}", "add", {{"a": i, "b": i}}),))
          for i in range(STEPS)]
store = {store!r}
if store == "sqlite":
    import tempfile
    from tether.store.sqlite import SQLiteStore
    store = SQLiteStore(tempfile.mkdtemp() + "/bench.db")
agent = Agent(model=ScriptedModel([*script, "done"]), reasoning=ReAct(),
              tools=[{tool}], store=store)

def prepare():
    def run():
        assert agent.run("add", budget=Budget(max_steps=100)).answer == "done"
    return run

async def session():
    assert (await agent.arun("add", budget=Budget(max_steps=100))).answer == "done"
"""

PETFISH = r"""
from petfishframework import Agent, Budget, ReAct, tool
from petfishframework.models.fake import FakeModel
from petfishframework.core.types import ModelResponse, ToolCall

@tool("add", "Add two integers.", {{"type": "object", "required": ["a", "b"],
      "properties": {{"a": {{"type": "integer"}}, "b": {{"type": "integer"}}}}}})
def add(a: int, b: int) -> int:
    CALLS[0] += 1
    return a + b

def agent():
    script = [ModelResponse(tool_calls=(ToolCall(f"c{{i}}", "add", {{"a": i, "b": i}}),))
              for i in range(STEPS)]
    return Agent(model=FakeModel(responses=(*script, ModelResponse(content="done"))),
                 reasoning=ReAct(), tools=(add,))

RECIPE = agent()

def prepare():
    RECIPE.model._index = 0  # the fake model's script starts again
    def run():
        assert RECIPE.run("add", budget=Budget(max_steps=100)).answer == "done"
    return run

async def session():
    recipe = agent()
    assert (await recipe.run_async("add", budget=Budget(max_steps=100))).answer == "done"
"""

PLAIN = r"""
import json

def add(a, b):
    CALLS[0] += 1
    return a + b

TOOLS = {{"add": add}}
SCRIPT = [{{"tool_calls": [{{"id": f"c{{i}}", "name": "add", "arguments": {{"a": i, "b": i}}}}]}}
          for i in range(STEPS)] + [{{"content": "done"}}]

def loop():
    messages = [{{"role": "user", "content": "add"}}]
    for turn in SCRIPT:
        messages.append({{"role": "assistant", **turn}})
        if "tool_calls" not in turn:
            return turn["content"]
        for call in turn["tool_calls"]:
            value = TOOLS[call["name"]](**call["arguments"])
            messages.append({{"role": "tool", "tool_call_id": call["id"],
                             "content": json.dumps(value)}})

def prepare():
    return loop

async def session():
    assert loop() == "done"
"""

QUICKSTART = {
    "tether": str(ROOT / "examples" / "quickstart.py"),
    "tether, a @tool": r"""
from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

@tool
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b

model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c", "add", {"a": 17, "b": 23}),)),
                       "40"])
print(Agent(model=model, reasoning=ReAct(), tools=[add]).run("17 + 23?").answer)
""",
    "petfish": r"""
from petfishframework import Agent, ReAct
from petfishframework.tools.calculator import Calculator
from petfishframework.models.fake import FakeModel
import warnings; warnings.simplefilter("ignore")
model = FakeModel.script_tool_then_answer(tool_name="calculator",
    tool_args={"expression": "17 * 23"}, final_answer="391")
print(Agent(model=model, reasoning=ReAct(), tools=(Calculator(),)).run("17 * 23?").answer)
""",
    "asyncio": "import asyncio",  # the floor for any runtime built on it
}


@dataclass(frozen=True)
class Case:
    name: str
    python: str
    setup: str


def install_peers(where: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Each installable peer's interpreter, and why the others could not be installed."""
    found, missing = {}, {}
    for name, requirement in PEERS.items():
        venv = where / name
        python = venv / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", requirement],
                              capture_output=True, text=True)
        if done.returncode == 0:
            found[name] = str(python)
        else:
            last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            missing[name] = last.removeprefix("ERROR: ")
    return found, missing


def child(case: Case, measure: str, n: int) -> dict[str, float]:
    code = HARNESS.format(setup=case.setup)
    done = subprocess.run([case.python, "-c", code, measure, str(n)], capture_output=True,
                          text=True, cwd=ROOT, env=ENV)
    if done.returncode != 0:
        raise SystemExit(f"{case.name} ({measure}) failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def instructions(case: Case) -> float:
    """Machine instructions per step, counted under valgrind: the difference between 45 and 5
    runs, so that start-up and imports cancel out."""
    return counters(case)["I refs"]


SIMULATED = ("I refs", "Branches", "Mispredicts", "I1 misses", "D refs", "D1 misses",
             "LLd misses")


def counters(case: Case, simulate: bool = False) -> dict[str, float]:
    """Per step, as ``instructions``: the instructions, and with ``simulate`` what cachegrind's
    simulation of the caches and of a branch predictor counts (``SIMULATED``) — a model of a
    CPU, not this CPU's own counters (this VM exposes none)."""
    child(case, "step", 0)  # bytecode cached first: compiling would count in one run only
    flags = ["--cache-sim=yes", "--branch-sim=yes"] if simulate else ["--cache-sim=no"]
    counts = []
    for runs in (0, 40):  # the harness adds 5 warm-up runs
        done = subprocess.run(
            ["valgrind", "--tool=cachegrind", *flags, "--cachegrind-out-file=/dev/null",
             case.python, "-c", HARNESS.format(setup=case.setup), "step", str(runs)],
            capture_output=True, text=True, cwd=ROOT, env={**ENV, "PYTHONHASHSEED": "0"})
        found: dict[str, int] = {}  # "==pid== D1  misses:  1,234  (...)" -> "D1 misses": 1234
        for label, value in re.findall(r"^==\d+== ([^:=]+):\s+([\d,]+)", done.stderr, re.M):
            found.setdefault(" ".join(label.split()), int(value.replace(",", "")))
        if done.returncode != 0 or "I refs" not in found:
            raise SystemExit(f"{case.name} under valgrind failed:\n{done.stderr[-2000:]}")
        counts.append(found)
    keys = SIMULATED if simulate else ("I refs",)
    return {k: (counts[1][k] - counts[0][k]) / (40 * 21) for k in keys}


def start_cost(python: str, program: str) -> float:
    """Wall seconds of a process running ``program`` (a file, or code)."""
    argv = [python, program] if program.endswith(".py") else [python, "-c", program]
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, cwd=ROOT, env=ENV)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=200, help="sessions per step measurement")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="keep the peers' venvs here, for reuse")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions per step under valgrind (slow)")
    args = parser.parse_args()
    where = args.keep or Path(tempfile.mkdtemp(prefix="tether-peers-"))
    where.mkdir(parents=True, exist_ok=True)
    try:
        peers, missing = install_peers(where)
        here = sys.executable
        cases = [Case("plain loop", here, PLAIN.format()),
                 Case("tether, sync tool", here, TETHER.format(tool="add", store=None)),
                 Case("tether, sync, inline", here,
                      TETHER.format(tool="add_inline", store=None)),
                 Case("tether, async tool", here, TETHER.format(tool="add_async", store=None)),
                 Case("tether, sync tool, SQLite", here,
                      TETHER.format(tool="add", store="sqlite")),
                 Case("tether, async tool, SQLite", here,
                      TETHER.format(tool="add_async", store="sqlite"))]
        if "petfish" in peers:
            cases.append(Case("petfish, sync tool", peers["petfish"], PETFISH.format()))
        report(cases, peers, missing, args)
        if args.instructions:
            print("\ninstructions per step (valgrind, 40 runs of 21 steps)")
            for case in cases:
                print(f"  {case.name:<26}{instructions(case) / 1000:>10.1f} k")
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)


def report(cases: list[Case], peers: dict[str, str], missing: dict[str, str],
           args: argparse.Namespace) -> None:
    step: dict[str, list[float]] = {c.name: [] for c in cases}
    many: dict[str, list[float]] = {c.name: [] for c in cases}
    memory: dict[str, list[float]] = {c.name: [] for c in cases}
    starts: dict[str, list[float]] = {"bare": [], **{n: [] for n in QUICKSTART}}
    start_cost(sys.executable, QUICKSTART["tether"])  # bytecode cached, as once installed
    few = {c.name: child(c, "many", args.sessions // 10)["kb_per_session"] for c in cases}
    for _ in range(args.rounds):
        for case in cases:
            step[case.name].append(child(case, "step", args.runs)["value"])
            out = child(case, "many", args.sessions)
            many[case.name].append(out["value"])
            memory[case.name].append(out["kb_per_session"])
        starts["bare"].append(start_cost(sys.executable, "pass"))
        for name in ("tether", "tether, a @tool", "asyncio"):
            starts[name].append(start_cost(sys.executable, QUICKSTART[name]) -
                                starts["bare"][-1])
        if "petfish" in peers:
            bare = start_cost(peers["petfish"], "pass")
            starts["petfish"].append(start_cost(peers["petfish"], QUICKSTART["petfish"]) - bare)
    med = statistics.median
    print(f"medians of {args.rounds} rounds, each framework in its own process, interleaved\n")
    print(f"{'':<28}{'µs/step':>10}{f'{args.sessions:,} sessions':>16}"
          f"{'KB/session':>12}{f'(at {args.sessions // 10:,})':>12}")
    for case in cases:
        print(f"  {case.name:<26}{med(step[case.name]):>10.1f}{med(many[case.name]):>14.2f} s"
              f"{med(memory[case.name]):>12.1f}{few[case.name]:>12.1f}")
    for name, why in missing.items():
        print(f"  {name:<26}not installable here: {why}")
    print("\na program's start over a bare interpreter "
          f"({med(starts['bare']) * 1000:.0f} ms):")
    for name in QUICKSTART:
        if starts[name]:
            print(f"  {name:<26}{med(starts[name]) * 1000:>8.0f} ms")

    def ratio(a: dict[str, list[float]], x: str, y: str) -> str:
        return f"{med(a[x]) / med(a[y]):.2f}" if a.get(y) else "n/a"

    peer = "petfish, sync tool" if "petfish" in peers else "plain loop"
    short = peer.split(",")[0]
    rows = [  # (what, table, numerator, denominator, goal)
        (f"tether sync step / {short}'s", step, "tether, sync tool", peer, "<= 1"),
        ("tether sync step / async step", step, "tether, sync tool", "tether, async tool",
         "<= 1.3"),
        ("inline sync step / async step", step, "tether, sync, inline", "tether, async tool", ""),
        (f"inline sync step / {short}'s", step, "tether, sync, inline", peer, ""),
        (f"{args.sessions:,} sessions / {short}'s", many, "tether, sync tool", peer, "<= 1"),
        ("SQLite step / memory step, sync tool", step, "tether, sync tool, SQLite",
         "tether, sync tool", "<= 2"),
        ("SQLite step / memory step, async tool", step, "tether, async tool, SQLite",
         "tether, async tool", "<= 2"),
    ]
    print("\nratios (goal)")
    for what, table, x, y, goal in rows:
        print(f"  {what:<40}{ratio(table, x, y):>6}  {goal}")
    print(f"  (python {sys.version.split()[0]}, {os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
