"""Many sessions at once on one event loop, per store: python bench/concurrency.py [--sessions N]

100 concurrent 20-step sessions (a scripted model, an async tool that yields to the loop) on the
in-memory journal, SQLite and PostgreSQL, in one run, so the figures compare. The question it
answers: does one worker's PostgreSQL journal make its sessions wait for each other's commits?
PostgreSQL needs ``TETHER_TEST_PG`` (default: postgresql://postgres@127.0.0.1:5432/test); each
run gets a schema of its own, dropped afterwards. PostgreSQL is measured twice: as it runs (each
commit awaited off the event loop) and with its commits made on the loop, as before, for the
ratio in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from typing import Any

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

STEPS = 20
PG_URL = os.environ.get("TETHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@tool
async def lookup(n: int) -> str:
    """Look something up (yields to the event loop, as real I/O would)."""
    await asyncio.sleep(0)
    return f"item {n}"


def agent(store: Any) -> Agent:
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "lookup", {"n": i}),)) for i in range(STEPS)]
    script.append("done")
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[lookup], store=store)


async def run_many(recipe: Agent, sessions: int) -> float:
    start = time.perf_counter()
    results = await asyncio.gather(*(recipe.arun("go", budget=Budget(max_steps=100))
                                     for _ in range(sessions)))
    elapsed = time.perf_counter() - start
    assert all(r.stop_reason == "finished" for r in results)
    return elapsed


def main() -> None:
    from tether.store.postgres import PostgresStore
    from tether.store.sqlite import SQLiteStore

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"memory": [], "sqlite": [], "postgres": [],
                                     "postgres, commits on the loop": []}
    with tempfile.TemporaryDirectory() as scratch:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        pg = PostgresStore(PG_URL, schema=schema)
        on_loop = PostgresStore(PG_URL, schema=schema)
        on_loop.append_async = None  # type: ignore[assignment,method-assign]  # as before
        stores = {"memory": "memory://", "sqlite": SQLiteStore(f"{scratch}/bench.db"),
                  "postgres": pg, "postgres, commits on the loop": on_loop}
        try:
            for _ in range(args.rounds):  # interleaved, so drift hits every store alike
                for name, store in stores.items():
                    times[name].append(asyncio.run(run_many(agent(store), args.sessions)))
        finally:
            with pg._pool.connection() as db:
                db.execute(f"DROP SCHEMA {schema} CASCADE")
            pg.close()
            on_loop.close()
    best = {name: min(values) for name, values in times.items()}
    print(f"{args.sessions} concurrent {STEPS}-step sessions, best of {args.rounds}:")
    for name, value in best.items():
        print(f"  {name:<30} {value:6.2f} s")
    print(f"  postgres / sqlite: {best['postgres'] / best['sqlite']:.2f}   target <= 2 "
          f"(commits on the loop: {best['postgres, commits on the loop'] / best['sqlite']:.2f})")


if __name__ == "__main__":
    main()
