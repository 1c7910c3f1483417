"""Issue 50's goals beside the anchor, in one run: python bench/goals.py [--rounds N] [--keep DIR]

What a user switching from the seed framework compares: petfishframework 1.3.0 (installed from
PyPI into a throwaway venv; ``--keep DIR`` reuses it) runs the same scenario as tether — a
scripted model that calls a sync ``add`` tool 20 times with distinct arguments, then answers
(each framework's own fake model; tether's is the ``ScriptedModel``, a scripted stand-in for a
model, as petfish's ``FakeModel`` is). Printed, each as a ratio measured in this one run:

1. the wall time of a step (sync tool; async tool) over petfish's — each case in its own process,
   the processes interleaved round by round, medians (``bench/peers.py``'s harness); goals 1.5×
   and 1.3×; and the instructions per step over petfish's, counted by valgrind (goal 1.2×);
2. telemetry: instructions per step with traces over without, and with metrics over traces,
   every thread counted, SQLite store (goals 1.10 and 1.10; counted, so only with valgrind);
3. a conversation thread: bytes stored for 10, 100 and 1,000 turns, and what starting a session
   on the 1,000-turn thread costs over a 10-turn one (goal 2×);
4. a long session: a step at 2,000 steps over a step at 100 (goal 1.2×; ``--long`` adds 10,000).

Wall figures on a shared 2-vCPU machine drift by tens of percent from one minute to the next: read
the ratios of one run, never microseconds across runs. Instruction counts do not drift.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # bench/ is not a package: found on the path set above

Row = tuple[str, float, str, float | None]  # what, measured, unit, goal (at most; None: shown)


def step_goals(rounds: int, runs: int, keep: Path | None, count: bool) -> list[Row]:
    """Goal 1: wall time (and instructions) per step against petfish's."""
    where = keep or Path(tempfile.mkdtemp(prefix="tether-goals-"))
    where.mkdir(parents=True, exist_ok=True)
    try:
        found, missing = peers.install_peers(where)
        if "petfish" not in found:
            raise SystemExit(f"petfishframework could not be installed: {missing['petfish']}")
        here = sys.executable
        cases = {"petfish": peers.Case("petfish", found["petfish"], peers.PETFISH.format()),
                 "sync": peers.Case("tether, sync tool", here,
                                    peers.TETHER.format(tool="add", store=None)),
                 "async": peers.Case("tether, async tool", here,
                                     peers.TETHER.format(tool="add_async", store=None))}
        walls: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, case in cases.items():
                walls[name].append(peers.child(case, "step", runs)["value"])
        wall = {name: statistics.median(values) for name, values in walls.items()}
        print(f"µs per step, medians of {rounds} interleaved rounds of {runs} runs: "
              + ", ".join(f"{cases[n].name} {v:.1f}" for n, v in wall.items()))
        rows: list[Row] = [
            ("step wall, sync tool / petfish's", wall["sync"] / wall["petfish"], "×", 1.5),
            ("step wall, async tool / petfish's", wall["async"] / wall["petfish"], "×", 1.3)]
        if count:
            counted = {name: peers.instructions(case) for name, case in cases.items()}
            print("instructions per step: " + ", ".join(
                f"{cases[n].name} {v / 1000:.1f} k" for n, v in counted.items()))
            rows += [("instructions, sync tool / petfish's",
                      counted["sync"] / counted["petfish"], "×", 1.2),
                     ("instructions, async tool / petfish's",
                      counted["async"] / counted["petfish"], "×", 1.2)]
        return rows
    finally:
        if keep is None:
            shutil.rmtree(where, ignore_errors=True)


def telemetry_goals() -> list[Row]:
    """Goal 2: telemetry's instructions per step, every thread counted (SQLite store)."""
    import telemetry_cost

    cost = telemetry_cost.ratios()
    print(telemetry_cost.report(cost))
    return [("telemetry: traces / off, all threads", cost.traces_over_off, "×", 1.10),
            ("telemetry: traces+metrics / traces, all threads", cost.metrics_over_traces, "×",
             1.10)]


def thread_goals(count: bool) -> list[Row]:
    """Goal 3: a thread stores O(N); a start on 1,000 turns costs at most 2x one on 10."""
    import thread_growth

    growth = thread_growth.measure(valgrind=count)
    print("bytes stored per turn: " + ", ".join(
        f"{n:,} turns {stored / n:,.0f} B" for n, stored in growth.stored.items()))
    turns = sorted(growth.stored)
    rows: list[Row] = [("thread: bytes per turn at 1,000 / at 10",
                        (growth.stored[turns[-1]] / turns[-1]) / (growth.stored[turns[0]]
                                                                  / turns[0]), "×", 1.1)]
    if growth.start_ratio is not None:
        rows.append(("thread: a session on 1,000 turns / on 10", growth.start_ratio, "×", 2.0))
    if growth.cold_ratio is not None:  # (the whole history read and checked: no goal)
        rows.append(("thread: ... the first in a fresh process", growth.cold_ratio, "×", None))
    return rows


def long_session_goals(long: bool) -> list[Row]:
    """Goal 4: a step at 2,000 (and 10,000) steps over a step at 100, the ScriptedModel."""
    import long_session

    depths = (100, 2000, 10000) if long else (100, 2000)
    figures = long_session.per_step_costs(depths)
    print("a long session's step, µs: " + ", ".join(
        f"at {d:,} {c:.1f}" for d, c in figures.cost.items()))
    return [(f"long session: step at {d:,} / at 100 (wall)", figures.ratio[d], "×", 1.2)
            for d in depths[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=150, help="sessions per wall measurement")
    parser.add_argument("--keep", type=Path, help="keep petfish's venv here, for reuse")
    parser.add_argument("--no-valgrind", action="store_true", help="skip instruction counts")
    parser.add_argument("--long", action="store_true", help="also measure at 10,000 steps")
    args = parser.parse_args()
    count = not args.no_valgrind
    parts: list[Callable[[], list[Row]]] = [
        lambda: step_goals(args.rounds, args.runs, args.keep, count),
        lambda: long_session_goals(args.long),
        lambda: thread_goals(count)]
    if count:
        parts.append(telemetry_goals)
    rows = [row for part in parts for row in part()]
    print(f"\n{'goal':<52}{'measured':>10}{'goal':>8}")
    for what, value, unit, goal in rows:
        if goal is None:
            print(f"  {what:<50}{value:>9.2f}{unit}")
            continue
        verdict = "met" if value <= goal else "NOT met"
        print(f"  {what:<50}{value:>9.2f}{unit}{goal:>7.2f}{unit}  {verdict}")
    print(f"  (python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
