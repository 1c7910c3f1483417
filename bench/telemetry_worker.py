"""What the telemetry sink's worker spends per step, stage by stage, counted deterministically:
python bench/telemetry_worker.py [--old-histograms] [--shape acs]

``bench/telemetry_cost.py`` counts every thread of a whole run, and the run's own thread moves
by a few per cent from one window to the next (the store's commits, the garbage collector, the
tool's thread); the worker's work does not. This records one run of the 21-step benchmark's
events (SQLite store), then replays them through the sink's stages — decoding only, deriving
SDK spans, deriving and exporting them, and the same with an SDK ``MeterProvider`` (no reader,
as the benchmark makes it, and with an in-memory reader) — under cachegrind for 20 and 120
replays, and prints the difference per step. ``--old-histograms`` records metric points
through ``Histogram.record`` and ``Counter.add`` themselves (as before ``tether.observe._record``);
``--shape acs`` derives ACS Trace's spans instead of the GenAI conventions'.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from instructions import counted

STAGES = (("decoding 4 events (orjson)", "decode"), ("deriving 2 SDK spans", "derive"),
          ("... and exporting them (in-memory exporter)", "export"),
          ("... with metrics (MeterProvider, no reader)", "metrics"),
          ("... with metrics and an in-memory reader", "reader"))

CAPTURE = """
import dataclasses, pickle, sys
sys.path.insert(0, {bench!r})
from overhead import BUDGET, twenty_call_agent
events = []
agent = dataclasses.replace(twenty_call_agent(), store={store!r}, telemetry=[events.append])
agent.run("compute", budget=BUDGET)
pickle.dump(events, open({path!r}, "wb"))
"""

REPLAY = """
import pickle
events = pickle.load(open({path!r}, "rb"))
if {old!r}:
    import tether.observe._metrics as metrics
    metrics.recorder = lambda instrument: instrument.record
    metrics.adder = lambda instrument: instrument.add
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tether.journal.views.span_records import data_of
from tether.observe import OTelSink
stage = {stage!r}
provider = None
if stage == "metrics":
    provider = MeterProvider()
elif stage == "reader":
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
sink = OTelSink(InMemorySpanExporter(), meter_provider=provider, shape={shape!r})
for _ in range({replays}):
    if stage == "decode":
        for event in events:
            data_of(event)
        continue
    batch = []
    for event in events:
        batch.extend(sink._derive(event))
    if stage != "derive":
        sink._export(batch)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-histograms", action="store_true",
                        help="histogram points through Histogram.record itself")
    parser.add_argument("--shape", choices=("default", "acs"), default="default",
                        help="the spans derived: the GenAI conventions' or ACS Trace's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = f"{scratch}/events.pkl"
        subprocess.run([sys.executable, "-c", CAPTURE.format(
            bench=str(Path(__file__).parent), store=f"sqlite:///{scratch}/b.db", path=path)],
            check=True)
        print("k instructions per step (one run's 84 events, 21 steps, replayed)")
        for label, stage in STAGES:
            counts = [counted(REPLAY.format(path=path, old=args.old_histograms, stage=stage,
                                           replays=replays, shape=args.shape))
                      for replays in (20, 120)]
            print(f"  {label:<48} {(counts[1] - counts[0]) / (100 * 21) / 1000:7.1f}")


if __name__ == "__main__":
    main()
