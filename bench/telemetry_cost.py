"""What telemetry adds to a governed step, as two ratios: python bench/telemetry_cost.py
[--store URL] [--runs N]

Issue 50's goal 2: with an ``OTelSink`` (traces) a step costs at most 1.10x what it costs with
telemetry off, counting every thread (the sink's worker derives and exports beside the run),
and metrics (an SDK ``MeterProvider``) at most another 1.10x. ``ratios()`` counts the three
variants (off, traces, traces and metrics) with callgrind, per thread, in one call, and returns
the figures; ``bench/goals.py`` imports it. Instructions, not time: a shared 2-core machine
moves wall time by 30% from one minute to the next, an instruction count does not.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from instructions import RUNS, STEPS_PER_RUN, threads

SQLITE = "sqlite:///{tmp}/b.db"
VARIANTS = (("off", ""), ("traces", "traces"), ("traces and metrics", "metrics"))


@dataclass(frozen=True)
class StepCost:
    """Instructions per step (thousands) of one variant: the run's thread, all threads."""

    label: str
    run_thread: float
    all_threads: float


@dataclass(frozen=True)
class TelemetryCost:
    """The three variants and the goal's two ratios (all threads)."""

    store: str
    off: StepCost
    traces: StepCost
    metrics: StepCost

    @property
    def traces_over_off(self) -> float:
        return self.traces.all_threads / self.off.all_threads

    @property
    def metrics_over_traces(self) -> float:
        return self.metrics.all_threads / self.traces.all_threads


def _per_step(store: str, telemetry: str, runs: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as scratch:
        base = threads(5, store.replace("{tmp}", scratch), telemetry)
    with tempfile.TemporaryDirectory() as scratch:
        more = threads(5 + runs, store.replace("{tmp}", scratch), telemetry)
    steps = runs * STEPS_PER_RUN * 1000
    return (more[0] - base[0]) / steps, (more[1] - base[1]) / steps


def ratios(store: str = SQLITE, runs: int = RUNS, workers: int = 2) -> TelemetryCost:
    """Count off, traces and traces+metrics (``runs`` runs of the 21-step benchmark each,
    less 5 for set-up) and return them with the two ratios; ``store`` as
    ``bench/instructions.py --store`` takes it ("" for none). ``workers`` valgrind runs at
    once (counts do not depend on it)."""
    with ThreadPoolExecutor(workers) as pool:
        counted = list(pool.map(lambda v: _per_step(store, v[1], runs), VARIANTS))
    off, traces, metrics = (StepCost(label, *c) for (label, _), c in zip(VARIANTS, counted,
                                                                         strict=True))
    return TelemetryCost(store or "none", off, traces, metrics)


def report(cost: TelemetryCost) -> str:
    lines = [f"store {cost.store}: k instructions per step   run's thread   all threads"]
    for step in (cost.off, cost.traces, cost.metrics):
        lines.append(f"  {step.label:<36} {step.run_thread:10.1f}   {step.all_threads:10.1f}")
    lines.append(f"  traces / off (all threads)           {cost.traces_over_off:.3f}  "
                 "(goal <= 1.10)")
    lines.append(f"  traces+metrics / traces              {cost.metrics_over_traces:.3f}  "
                 "(goal <= 1.10)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=SQLITE, help="a store URL ({tmp}: a scratch dir); "
                        "'' for none (a subscriber then seals as events happen)")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    print(report(ratios(args.store, args.runs)))


if __name__ == "__main__":
    main()
