"""A halt proved to stop, under load: 1,000 randomized trials in all.

Each in-process trial runs 2-5 sessions at once (tenants ``a``/``b``, agents ``x``/``y``, 2-9
turns, a side effect two turns in three and on the last) and halts a random scope (a tenant, an
agent, one session, an agent of a tenant, everything) after a random number of side effects, from
inside a running tool, then takes what the store holds of starts; ``halt_fleet.check`` holds the
run to the guarantee: no covered side effect ran that was not started before the halt committed,
every covered session ended ``halted`` (or finished within the stated bound, its last side
effect started before the halt), the others finished, nothing lost, every journal verifies.
Memory and
SQLite here; PostgreSQL's trials and the two-process runs: tests/test_halt_fleet.py.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from halt_fleet import agent, check, started
from tether.runtime.approvals.identity import Identity
from tether.runtime.chokepoint.halts import halt
from tether.store.halts import HaltScope
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore

from conftest import postgres_store

OPERATOR = Identity("ops", "test")
# with the two two-process runs of tests/test_halt_fleet.py and its 60 on PostgreSQL: 1,000
TRIALS = {"memory": 640, "sqlite": 298, "postgres": 60}


def scope_for(rng: random.Random, ids: list[str]) -> HaltScope:
    return rng.choice([HaltScope(tenant_id="a"), HaltScope(agent="x"),
                       HaltScope(session_id=rng.choice(ids)), HaltScope(),
                       HaltScope(agent="x", tenant_id="a")])


async def trial(store: Any, rng: random.Random) -> None:
    specs = [(rng.choice("ab"), rng.choice("xy"), rng.randint(2, 9))
             for _ in range(rng.randint(2, 5))]
    ran: list[tuple[str, str]] = []
    at = rng.randint(0, sum(s for *_, s in specs) * 2 // 3)
    made: dict[str, Any] = {}

    def stop_now() -> None:
        made["halt"] = halt(store, made["scope"], reason="trial", by=OPERATOR)
        made["before"] = started(store, ids)

    def record(session_id: str, call_id: str) -> None:
        ran.append((session_id, call_id))
        if len(ran) == at:
            stop_now()

    agents = {name: agent(store, record, name) for name in "xy"}
    sessions = [agents[name].session(f"pay {steps}", tenant_id=tenant)
                for tenant, name, steps in specs]
    ids = [s.id for s in sessions]
    made["scope"] = scope_for(rng, ids)
    if at == 0:  # before anything runs (sessions not yet stored: the halt waits for them)
        stop_now()
    results = await asyncio.gather(*(s.arun() for s in sessions))
    if "halt" not in made:  # every side effect ran before the trigger: halt them, now ended
        stop_now()
    check(store, made["halt"], made["before"],
          ran, {s.id: r.stop_reason.value for s, r in zip(sessions, results, strict=True)})


def run_trials(kind: str, tmp_path: Path) -> None:
    """``TRIALS[kind]`` trials, each on a store of ``kind``; a failure names its seed."""
    base = postgres_store() if kind == "postgres" else None
    try:
        for number in range(TRIALS[kind]):
            seed = random.randrange(2**32)
            if kind == "memory":
                store: Any = MemoryStore()
            elif kind == "sqlite":  # a store object of its own: its watch read no earlier trial
                store = SQLiteStore(tmp_path / f"t{number % 20}.db")
            else:
                store = base
            try:
                asyncio.run(trial(store, random.Random(seed)))
            except AssertionError as exc:
                raise AssertionError(f"{kind} trial {number}, seed {seed}: {exc}") from exc
            finally:  # lift this trial's halts: the file (or schema) serves later trials
                for one in store.list_halts():
                    store.lift_halt(one.id, "ops", "test")
                if kind == "postgres":
                    store._halt_watch.refresh()
                else:
                    store.close()
    finally:
        if base is not None:
            with base._pool.connection() as db:
                db.execute(f"DROP SCHEMA {base.schema} CASCADE")
            base.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_randomized_trials_no_side_effect_starts_after_the_halt(kind: str, tmp_path: Path) -> None:
    run_trials(kind, tmp_path)
