"""A halt and its unhalt from the console, against the same through the Python API:
python bench/console_halt.py [--rounds N] [--pg URL] [--skip-pg]

Why: the console's halt form (``tether.web.halts``) is the Python API (``halt``/``unhalt``)
behind a page; what it adds is the request — authentication, the CSRF and Origin guard, the
form, the session check, the redirect. This prints, per store, the median wall time of a halt
plus its unhalt issued each way over N rounds (the console in-process through Starlette's
TestClient, no socket), so the page's own share is the difference. Nothing here runs on an
agent's calls: a console that is not used costs a run nothing. The SQLite file is a temporary
one; the PostgreSQL store is a schema of its own, dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable

from starlette.testclient import TestClient

from tether.runtime import HaltScope, Identity, halt, unhalt
from tether.store.base import Store
from tether.store.opening import open_store
from tether.web import Console, create_app

PG_URL = os.environ.get("TETHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def median_ms(rounds: int, once: Callable[[], None]) -> float:
    once()  # warm: templates compiled, connections open
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        once()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def measure(store: Store, rounds: int) -> tuple[float, float]:
    ops = Identity("ops", "os-user")

    def api() -> None:
        made = halt(store, HaltScope(agent="bench"), reason="bench", by=ops)
        unhalt(store, made.id, by=ops)

    page = TestClient(create_app(Console(store, auth="none")), follow_redirects=False)
    csrf = page.get("/sessions").text.split('name="csrf" value="', 1)[1].split('"', 1)[0]

    def console() -> None:
        posted = page.post("/halts", data={"csrf": csrf, "agent": "bench", "reason": "bench"})
        page.post(f"/halts/{posted.headers['location'].split('=', 1)[1]}/unhalt",
                  data={"csrf": csrf})

    return median_ms(rounds, api), median_ms(rounds, console)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pg", default=PG_URL)
    parser.add_argument("--skip-pg", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/bench.db")
        try:
            report("SQLite", *measure(store, args.rounds), args.rounds)
        finally:
            store.close()
    if args.skip_pg:
        return
    from tether.store.postgres import PostgresStore

    schema = f"bench_console_halt_{uuid.uuid4().hex[:8]}"
    pg = PostgresStore(args.pg, schema=schema)
    try:
        report("PostgreSQL", *measure(pg, args.rounds), args.rounds)
    finally:
        with pg._connection() as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
        pg.close()


def report(name: str, api: float, console: float, rounds: int) -> None:
    print(f"{name}: halt + unhalt, median of {rounds}: API {api:.2f} ms, "
          f"console {console:.2f} ms (the page's share {console - api:.2f} ms)")


if __name__ == "__main__":
    main()
