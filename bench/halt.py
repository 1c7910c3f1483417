"""What a halt costs, measured (not asserted): python bench/halt.py [--pg URL]

Prints:
  1. the watch's check, per call (model calls and tool turns pay it): ns per ``check`` with no
     halt standing and with one standing halt that does not cover the session, and what one
     read of the store's halt version costs (paid at most once every ``PERIOD`` seconds per
     process);
  2. the store's check on a side effect's start: µs per append of a ``tool.started`` step on
     SQLite and PostgreSQL with the check taken away (the store's ``_refuse_halted`` / the
     batch's ``halted_in`` replaced by nothing), with no halt standing, and with one standing
     that does not cover the session; interleaved rounds, median and fastest.

The instructions a whole step executes (the 20-call run, model calls and read-only tool calls)
are counted by ``bench/instructions.py``, on this branch against its base.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.journal.chain import Journal
from tether.runtime.approvals.identity import Identity
from tether.runtime.chokepoint.halts import HaltWatch, halt
from tether.store.halts import HaltScope
from tether.store.sqlite import SQLiteStore
from tether.vocabulary import EventType

PG_URL = os.environ.get("TETHER_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
OPS = Identity("bench", "bench")


def watch_figures(store: Any) -> None:
    journal = Journal("bench-watched", store=store)
    journal.append(EventType.SESSION_START, {"subject": {"tenant_id": "acme"}, "agent": "a"})
    journal.flush()
    watch = HaltWatch(store)
    watch.check("bench-watched")
    n = 1_000_000
    none = min(timeit.repeat(lambda: watch.check("bench-watched"), number=n, repeat=5)) / n
    halt(store, HaltScope(tenant_id="other"), by=OPS)
    watch.refresh()
    one = min(timeit.repeat(lambda: watch.check("bench-watched"), number=n, repeat=5)) / n
    read = min(timeit.repeat(store.halt_version, number=2000, repeat=5)) / 2000
    print("1. the watch (per model call and per tool turn):")
    print(f"   check, no halt standing              {none * 1e9:7.0f} ns")
    print(f"   check, one halt standing, not ours   {one * 1e9:7.0f} ns")
    print(f"   one read of the halt version         {read * 1e6:7.1f} µs "
          "(at most once every 0.5 s per process)")


def starts(store: Any, rounds: int, per_round: int) -> list[float]:
    """µs per append of a step that starts a side effect, one sample per round."""
    samples = []
    for _ in range(rounds):
        journal = Journal(f"bench-{uuid.uuid4().hex}", store=store)
        journal.append(EventType.SESSION_START, {"subject": {"tenant_id": "acme"}, "agent": "a"})
        journal.flush()
        began = time.perf_counter()
        for i in range(per_round):
            journal.append(EventType.TOOL_DECISION, {"call_id": f"c{i}", "effect": "allow"})
            journal.append(EventType.TOOL_STARTED, {"call_id": f"c{i}", "tool": "pay"})
            journal.flush()
        samples.append((time.perf_counter() - began) / per_round * 1e6)
    return samples


def compare(name: str, store: Any, off: Callable[[], Any], on: Callable[[], Any],
            rounds: int = 15, per_round: int = 200) -> None:
    """Interleaved rounds of three: the check taken away, the check with no halt standing, the
    check with one halt standing that does not cover the session."""
    def standing(count: int) -> None:
        on()
        for one in store.list_halts():
            store.lift_halt(one.id, "bench", "bench")
        if count:
            halt(store, HaltScope(tenant_id="other"), by=OPS)

    configs: dict[str, Callable[[], Any]] = {
        "no check": off, "no halt standing": lambda: standing(0),
        "one halt standing": lambda: standing(1)}
    starts(store, 2, 50)  # warm up
    figures: dict[str, list[float]] = {label: [] for label in configs}
    for _ in range(rounds):
        for label, config in configs.items():
            config()
            figures[label] += starts(store, 1, per_round)
    standing(0)
    for label, values in figures.items():
        print(f"   {name:<11} {label:<18} {statistics.median(values):8.1f} µs/start "
              f"(fastest {min(values):.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=PG_URL, help="PostgreSQL URL ('' to skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "halt.db")
        watch_figures(store)
        print("2. the store's check on a side effect's start:")
        checked = SQLiteStore._refuse_halted
        compare("SQLite", store, lambda: setattr(store, "_refuse_halted", lambda *a: None),
                lambda: store.__dict__.pop("_refuse_halted", None) and None)
        assert store._refuse_halted.__func__ is checked  # type: ignore[attr-defined]
        store.close()
    if args.pg:
        from tether.store import postgres_steps
        from tether.store.postgres import PostgresStore

        pg = PostgresStore(args.pg, schema=f"bench_{uuid.uuid4().hex[:8]}")
        try:
            real = postgres_steps.halted_in

            def nothing(schema: str, batch: Any) -> Any:
                return {}
                yield  # a plan that runs no statement

            compare("PostgreSQL", pg, lambda: setattr(postgres_steps, "halted_in", nothing),
                    lambda: setattr(postgres_steps, "halted_in", real), rounds=9,
                    per_round=100)
        finally:
            with pg._pool.connection() as db:
                db.execute(f"DROP SCHEMA {pg.schema} CASCADE")
            pg.close()


if __name__ == "__main__":
    main()
