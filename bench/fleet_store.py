"""Short sessions per second on one store, and where a PostgreSQL session's time goes:
python bench/fleet_store.py [--sessions N] [--concurrency C] [--pg URL]

Why: a fleet's workers share one PostgreSQL store, and each session's start and end extends the
store's anchor chain(s) under a lock held to the commit. This measures, in one run and as ratios:
PostgreSQL against SQLite in one process, and 2 worker processes against 1 on PostgreSQL (with
the store's anchor lanes, and with one lane: a single chain, as before lanes); and,
on PostgreSQL, what every commit of the committer spent on each statement — the anchor lock
(``pg_advisory_xact_lock`` before lanes, taking a lane's row after: the wait for it), the
anchors' tail read (before lanes) and insert, the sessions'
statements, the commit — and how long the anchor lock was held (from acquiring it to the end of
the commit: what serialises the fleet).

Each session is a scripted agent making one async tool call, then answering (3 commits: start,
step, end). One process runs N sessions, C at a time, on one event loop; a worker process is
this script run with ``--worker``, started together from one "go" line. Every configuration gets
a fresh store (a SQLite file, a PostgreSQL schema of its own, dropped afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from typing import Any

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

PG_URL = os.environ.get("TETHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@tool
async def lookup(n: int) -> str:
    """Look something up (yields to the event loop, as real I/O would)."""
    await asyncio.sleep(0)
    return f"item {n}"


def agent(store: Any) -> Agent:
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall("c0", "lookup", {"n": 0}),)), "done"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[lookup], store=store)


def kind(statement: str) -> str:
    """Which part of a commit a statement is."""
    text = statement.lstrip()
    if "pg_advisory_xact_lock" in text or (".anchor_lanes" in text and "FOR UPDATE" in text):
        return "anchor lock (wait)"  # one lock (before lanes), or taking a lane (after)
    if "FROM" in text and ".anchors" in text and text.startswith("SELECT"):
        return "anchor tail read"
    if "INSERT INTO" in text and ".anchors" in text:
        return "anchor insert"
    if "ON CONFLICT (session_id) DO NOTHING" in text:
        return "session starts"
    if "FOR UPDATE" in text:
        return "later steps"
    return "other"


class Timed:
    """A psycopg async connection whose statements and commits are timed, by kind."""

    def __init__(self, db: Any, stats: dict[str, Any]) -> None:
        self._db, self._stats, self._locked_at = db, stats, None
        self._anchored = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    async def execute(self, statement: str, params: Any = None) -> Any:
        started = time.perf_counter()
        cursor = await self._db.execute(statement, params)
        ended = time.perf_counter()
        what = kind(statement)
        self._stats["seconds"][what] += ended - started
        self._stats["count"][what] += 1
        if what == "anchor lock (wait)":
            self._locked_at = ended
            self._stats["lock waits"].append(ended - started)
        if what == "anchor insert":
            self._anchored += len(params["kind"] if isinstance(params, dict) else params[0])
        return cursor

    async def commit(self) -> None:
        started = time.perf_counter()
        await self._db.commit()
        ended = time.perf_counter()
        self._stats["seconds"]["commit"] += ended - started
        self._stats["count"]["commit"] += 1
        if self._locked_at is not None:
            self._stats["lock held"].append(ended - self._locked_at)
        self._stats["anchors"] += self._anchored
        self._locked_at, self._anchored = None, 0

    async def rollback(self) -> None:
        self._locked_at, self._anchored = None, 0
        await self._db.rollback()


def new_stats() -> dict[str, Any]:
    return {"seconds": defaultdict(float), "count": defaultdict(int), "lock waits": [],
            "lock held": [], "anchors": 0}


async def run_sessions(recipe: Agent, sessions: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> str:
        async with gate:
            return (await recipe.arun("go", budget=Budget(max_steps=10))).stop_reason

    started = time.perf_counter()
    reasons = await asyncio.gather(*(one() for _ in range(sessions)))
    elapsed = time.perf_counter() - started
    assert all(r == "finished" for r in reasons), set(reasons)
    return elapsed


def open_pg(url: str, schema: str, stats: dict[str, Any] | None) -> Any:
    from tether.store.postgres import PostgresStore

    store = PostgresStore(url, schema=schema)
    if stats is not None:
        connect = store._connect

        async def timed() -> Any:
            return Timed(await connect(), stats)

        store._committers._connect = timed  # each loop's committer connects through it
    return store


def worker(args: argparse.Namespace) -> None:
    """One worker process: wait for "go", run the sessions, print what it measured."""
    stats = new_stats()
    store = open_pg(args.pg, args.schema, stats)
    recipe = agent(store)
    asyncio.run(run_sessions(recipe, 20, args.concurrency))  # warm up (not counted)
    stats.update(new_stats())
    print("ready", flush=True)
    sys.stdin.readline()
    elapsed = asyncio.run(run_sessions(recipe, args.sessions, args.concurrency))
    store.close()
    print(json.dumps({"elapsed": elapsed, "ended": time.time(), "stats": stats}), flush=True)


def workers(args: argparse.Namespace, count: int,
            lanes: int | None = None) -> tuple[float, list[dict[str, Any]]]:
    """``count`` worker processes on a fresh schema (with ``lanes`` anchor lanes, if given):
    sessions per second over all of them."""
    schema = f"bench_fleet_{uuid.uuid4().hex[:8]}"
    open_pg(args.pg, schema, None).close()  # created once, before the workers race to it
    if lanes is not None:
        import psycopg

        with psycopg.connect(args.pg, autocommit=True) as db:
            if db.execute(f"SELECT to_regclass('{schema}.anchor_lanes')").fetchone()[0]:
                db.execute(f"UPDATE {schema}.meta SET value = %s WHERE key = 'anchor_lanes'",
                           (str(lanes),))
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", "--schema", schema,
                               "--pg", args.pg, "--sessions", str(args.sessions),
                               "--concurrency", str(args.concurrency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(count)]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        started = time.time()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(proc.communicate()[0]) for proc in procs]
    finally:
        drop(args.pg, schema)
    wall = max(r["ended"] for r in reports) - started
    return count * args.sessions / wall, [r["stats"] for r in reports]


def drop(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def sqlite_rate(args: argparse.Namespace) -> float:
    from tether.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as scratch:
        store = SQLiteStore(f"{scratch}/bench.db")
        recipe = agent(store)
        asyncio.run(run_sessions(recipe, 20, args.concurrency))
        elapsed = asyncio.run(run_sessions(recipe, args.sessions, args.concurrency))
        store.close()
    return args.sessions / elapsed


def breakdown(label: str, sessions: int, all_stats: list[dict[str, Any]]) -> None:
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    waits: list[float] = []
    held: list[float] = []
    anchors = 0
    for stats in all_stats:
        for name, value in stats["seconds"].items():
            seconds[name] += value
        for name, value in stats["count"].items():
            count[name] += value
        waits += stats["lock waits"]
        held += stats["lock held"]
        anchors += stats["anchors"]
    commits = max(count["commit"], 1)
    total = sum(seconds.values())
    print(f"  {label}: {commits} commits ({sessions / commits:.1f} sessions a commit), "
          f"{sum(count.values()) - count['commit']} statements, "
          f"{anchors} anchors; time in the committer per session:")
    for name in sorted(seconds, key=lambda n: -seconds[n]):
        print(f"    {name:<22} {seconds[name] / sessions * 1e6:8.0f} µs/session  "
              f"({seconds[name] / total:4.0%}, {count[name]} calls, "
              f"{seconds[name] / max(count[name], 1) * 1e3:.2f} ms each)")
    if waits:
        waits.sort()
        held.sort()
        per = sum(waits) / max(anchors, 1)
        print(f"    anchor lock wait: {per * 1e6:.0f} µs per anchored start/end "
              f"(per commit: median {waits[len(waits) // 2] * 1e3:.2f} ms, "
              f"p95 {waits[int(len(waits) * .95)] * 1e3:.2f} ms); "
              f"held to the commit: median {held[len(held) // 2] * 1e3:.2f} ms, "
              f"sum {sum(held):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000, help="per process")
    parser.add_argument("--concurrency", type=int, default=64, help="sessions at once a process")
    parser.add_argument("--pg", default=PG_URL)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--schema", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    sqlite = sqlite_rate(args)
    one, one_stats = workers(args, 1)
    two, two_stats = workers(args, 2)
    chain, chain_stats = workers(args, 2, lanes=1)
    print(f"{args.sessions} short sessions a process, {args.concurrency} at a time "
          f"(os.cpu_count()={os.cpu_count()}):")
    print(f"  SQLite, one process          {sqlite:8.0f} sessions/s")
    print(f"  PostgreSQL, one process      {one:8.0f} sessions/s   "
          f"{one / sqlite:.2f}x SQLite")
    print(f"  PostgreSQL, two processes    {two:8.0f} sessions/s   {two / one:.2f}x one")
    print(f"  ... two, one anchor chain     {chain:8.0f} sessions/s   {chain / one:.2f}x one "
          "(a store of one lane)")
    breakdown("PostgreSQL, one process", args.sessions, one_stats)
    breakdown("PostgreSQL, two processes", 2 * args.sessions, two_stats)
    breakdown("PostgreSQL, two processes, one chain", 2 * args.sessions, chain_stats)


if __name__ == "__main__":
    main()
