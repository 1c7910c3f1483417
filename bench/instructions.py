"""Instructions per step, counted (not timed): python bench/instructions.py [--store URL]

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
from pathlib import Path

RUNS = 40
STEPS_PER_RUN = 21

CHILD = """
import asyncio, dataclasses, sys
sys.path.insert(0, {bench!r})
from overhead import BUDGET, twenty_call_agent
agent = twenty_call_agent()
if {store!r}:
    agent = dataclasses.replace(agent, store={store!r})
async def main() -> None:
    for _ in range({runs}):
        await agent.arun("compute", budget=BUDGET)
asyncio.run(main())
"""


def instructions(runs: int, store: str) -> int:
    code = CHILD.format(bench=str(Path(__file__).parent), store=store, runs=runs)
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", code],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if match is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="", help="e.g. memory:// or sqlite:///x.db")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as scratch:
        store = args.store.replace("{tmp}", scratch)
        base, more = instructions(5, store), instructions(5 + RUNS, store)
    print(f"python {sys.version.split()[0]}, store {args.store or 'none'}: "
          f"{(more - base) / (RUNS * STEPS_PER_RUN) / 1000:.1f} k instructions per step")


if __name__ == "__main__":
    main()
