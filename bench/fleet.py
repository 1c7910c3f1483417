"""Sessions per second through a fleet's DBOS queue with 1, 2 and 3 worker processes, against the
same sessions run directly in one process: python bench/fleet.py [--sessions N] [--effects K]
[--pg URL]

Each session is a scripted agent making K side-effecting tool calls, then answering. "direct"
runs the N sessions one after another in this process on the same kind of store; "queue, W
workers" starts W worker processes (``python -m tether.durable.worker``, 8 sessions at a time
each), enqueues the N sessions and times from the first enqueue to the last workflow's end.
Every configuration gets fresh databases: SQLite files by default, or a PostgreSQL database of
its own on the server of ``--pg`` (created and dropped). Ratios are to "direct", in one run.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

ROOT = Path(__file__).resolve().parent.parent


def build() -> Agent:
    """The fleet's agent factory (``fleet:build``): K effects, K from the task."""

    @tool(side_effect=True)
    def touch(n: int) -> str:
        """Make effect n."""
        return f"effect {n} made"

    def respond(request: ModelRequest) -> ModelResponse | str:
        task = next(str(m.content) for m in request.messages if m.role == "user")
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < int(task.split()[1]):
            return ModelResponse(tool_calls=(ToolCall(f"c{done}", "touch", {"n": done}),))
        return f"made {done} effects"

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[touch],
                 store=os.environ["FLEET_BENCH_STORE"], name="bench-fleet")


@contextmanager
def databases(pg: str | None) -> Iterator[tuple[str, str]]:
    """(DBOS's system database, tether's store), fresh, removed afterwards."""
    if pg is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/dbos.db", f"sqlite:///{tmp}/tether.db"
        return
    import psycopg

    name = f"tether_fleet_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            url = pg.rsplit("/", 1)[0] + f"/{name}"
            yield url, url
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def direct(sessions: int, effects: int, pg: str | None) -> float:
    with databases(pg) as (_, store):
        os.environ["FLEET_BENCH_STORE"] = store
        agent = build()
        started = time.perf_counter()
        for _ in range(sessions):
            assert agent.run(f"make {effects} effects").stop_reason.value == "finished"
        elapsed = time.perf_counter() - started
        agent.journal_store.close()  # type: ignore[union-attr]
    return sessions / elapsed


def through_queue(sessions: int, effects: int, workers: int, pg: str | None,
                  concurrency: int) -> float:
    from tether.durable import Fleet

    with databases(pg) as (system, store):
        os.environ["FLEET_BENCH_STORE"] = store
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "bench"), os.environ.get("PYTHONPATH", "")])}
        procs: list[subprocess.Popen[str]] = []
        with Fleet("fleet:build", system) as fleet:
            fleet.client  # noqa: B018  (DBOS's tables, before the workers start)
            try:
                for i in range(workers):
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "tether.durable.worker", "--agent", "fleet:build",
                         "--db", system, "--executor-id", f"bench-{i}", "--poll", "0.05",
                         "--concurrency", str(concurrency)],
                        stdout=subprocess.PIPE, text=True, env=env)
                    procs.append(proc)
                    assert proc.stdout is not None
                    if not select.select([proc.stdout], [], [], 60)[0]:
                        raise RuntimeError("a worker did not start")
                    proc.stdout.readline()
                started = time.perf_counter()
                for _ in range(sessions):
                    fleet.enqueue(f"make {effects} effects")
                wait(lambda: all(a.state == "SUCCESS" for a in fleet.activations()))
                elapsed = time.perf_counter() - started
                assert all(a.status == "finished" for a in fleet.activations())
            finally:
                for proc in procs:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
    return sessions / elapsed


def wait(done: Callable[[], bool]) -> None:
    while not done():
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--effects", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=8,
                        help="sessions each worker runs at once (default: 8)")
    parser.add_argument("--pg", default=None, help="a PostgreSQL URL (default: SQLite files)")
    args = parser.parse_args()
    base = direct(args.sessions, args.effects, args.pg)
    print(f"{args.sessions} sessions x {args.effects} effects on "
          f"{'PostgreSQL' if args.pg else 'SQLite'}, {os.cpu_count()} cores, "
          f"{args.concurrency} sessions at a time per worker")
    print(f"{'direct, one process':28} {base:8.1f} sessions/s   1.00x")
    for workers in (1, 2, 3):
        rate = through_queue(args.sessions, args.effects, workers, args.pg, args.concurrency)
        print(f"{f'queue, {workers} worker(s)':28} {rate:8.1f} sessions/s   {rate / base:.2f}x")


if __name__ == "__main__":
    main()
