"""Keyset session paging at 100,000 sessions, on SQLite and PostgreSQL:
python bench/paging.py [--sessions N] [--repeats R] [--pg URL] [--skip-pg]

Why: the console's session list and ``tether audit list`` page through the session index by
keyset (``tether.store.paging``), which must stay fast however many sessions a store holds and
however deep the page. This fills a SQLite file and a PostgreSQL schema with N sessions, then
prints, for each store, the median wall time over R repeats of: the first page (50, newest
first), a page 1,000 pages deep (reached by walking the cursor, page by page: the walk's own
time per page is printed too), a filtered first page (agent + status + minimum cost) and a
tenant's first page; the query plan of each; what listing every session (``Store.sessions``,
what ``audit list`` did before) costs once; and ``tether audit list --limit 50`` as a whole
process (interpreter start and import included).

The rows are real: every session is written through the store's own append path, in two steps
(its start; then a note and its pause or end, with its spend), so the index columns are those an
agent's run leaves. SQLite appends one session step per transaction, as a run does. PostgreSQL
appends through the batch statements its group committer uses (``store.postgres_steps``), 500
sessions' steps per transaction: the same statements and rows as ``append``, without a round
trip per step, which would take most of an hour at 100,000 sessions. The SQLite file is a
temporary one and the PostgreSQL schema is dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tether.journal.chain import GENESIS, seal
from tether.store.base import Store
from tether.store.paging import SessionFilter, page_sessions
from tether.types import Event

PG_URL = os.environ.get("TETHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
AGENTS = [f"agent-{n}" for n in range(10)]
TENANTS = [f"tenant-{n:02d}" for n in range(20)]
REASONS = {"ended": ["finished", "finished", "finished", "cost_budget", "step_budget"],
           "paused": ["needs_approval"]}
T0 = 1_790_000_000.0  # the first session's start; the rest follow over 30 days
FILTERED = SessionFilter(agent="agent-3", status="ended", min_cost=1.0)
TENANT = SessionFilter(tenant_id="tenant-07")
DEEP = 1000


def sessions(count: int, seed: int = 48) -> Iterator[tuple[str, list[Event], list[Event]]]:
    """Each session's id, its first step (the start) and its second (a note and its pause or
    end, spend included; none for the 15% still open)."""
    rng = random.Random(seed)
    for n in range(count):
        sid = uuid.UUID(int=rng.getrandbits(128)).hex
        created = T0 + n * (30 * 86400 / count) + rng.random()
        start = {"task": "reconcile the ledger", "agent": rng.choice(AGENTS),
                 "subject": {"tenant_id": rng.choice(TENANTS),
                             "user_id": f"user-{rng.randrange(1000)}", "roles": []}}
        first = seal(GENESIS, sid, (1, "session.start", created, start))
        roll = rng.random()
        if roll < 0.15:
            yield sid, [first], []
            continue
        status = "ended" if roll < 0.75 else "paused"
        spend = {"tokens": rng.randrange(100, 20000), "steps": rng.randrange(1, 12),
                 "cost_usd": f"{rng.uniform(0, 2):.4f}", "tool_calls": 1, "seconds": 1.0}
        note = seal(first.hash, sid, (2, "session.note", created + 1, {"text": "working"}))
        stop = seal(note.hash, sid, (3, "session.end" if status == "ended" else "session.paused",
                                     created + 2, {"reason": rng.choice(REASONS[status]),
                                                   "answer": "", "spend": spend}))
        yield sid, [first], [note, stop]


def fill_sqlite(store: Any, count: int) -> float:
    began = time.perf_counter()
    for sid, first, rest in sessions(count):
        store.append(sid, first)
        if rest:
            store.append(sid, rest)
    return time.perf_counter() - began


def fill_postgres(store: Any, count: int, batch: int = 500) -> float:
    from tether.store.postgres_steps import run

    began = time.perf_counter()
    made = list(sessions(count))
    for at in range(0, count, batch):
        chunk = made[at:at + batch]
        for step in (1, 2):
            appends = [store._as_append(sid, first if step == 1 else rest, None, None)
                       for sid, first, rest in chunk if step == 1 or rest]
            with store._connection() as db:
                refused = run(db, store._statements.write(appends))
            assert not any(refused), refused
    return time.perf_counter() - began


def median_ms(repeats: int, call: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(name: str, store: Store, repeats: int, plan: Callable[[SessionFilter], str]) -> None:
    first = median_ms(repeats, lambda: page_sessions(store, limit=50))
    cursor, began = None, time.perf_counter()
    for _ in range(DEEP - 1):
        cursor = page_sessions(store, limit=50, after=cursor).next
    walked = (time.perf_counter() - began) * 1000 / (DEEP - 1)
    assert cursor is not None, "fewer sessions than 1,000 pages of 50"
    deep = median_ms(repeats, lambda: page_sessions(store, limit=50, after=cursor))
    filtered = median_ms(repeats, lambda: page_sessions(store, FILTERED, limit=50))
    shown = page_sessions(store, FILTERED, limit=50).sessions
    assert len(shown) == 50 and all(i.agent == "agent-3" and i.status == "ended" and
                                    (i.cost or 0) >= 1.0 for i in shown)
    tenant = median_ms(repeats, lambda: page_sessions(store, TENANT, limit=50))
    began = time.perf_counter()
    everything = len(store.sessions())
    listing = (time.perf_counter() - began) * 1000
    print(f"{name}: first page {first:.2f} ms; page {DEEP} (by cursor) {deep:.2f} ms, the walk "
          f"{walked:.2f} ms a page; filtered (agent + status + cost) {filtered:.2f} ms; a "
          f"tenant's {tenant:.2f} ms; every session listed ({everything:,}) {listing:.0f} ms")
    for label, where in (("newest first", SessionFilter()), ("filtered", FILTERED),
                         ("tenant", TENANT)):
        print(f"  plan, {label}: {plan(where)}")


def console(name: str, store: Store, repeats: int) -> None:
    """The console's session list (GET /sessions, rendered whole) over the same store: its first
    page, page 1,000 by cursor, the filtered page; in process, through Starlette's test client
    (auth "none": no login in the way)."""
    from starlette.testclient import TestClient

    from tether.web import Console, create_app

    cursor = None
    for _ in range(DEEP - 1):
        cursor = page_sessions(store, limit=50, after=cursor).next
    pages = {"first page": "/sessions", f"page {DEEP}": f"/sessions?after={cursor}",
             "filtered": "/sessions?agent=agent-3&status=ended&min_cost=1"}
    with TestClient(create_app(Console(store, auth="none"))) as browser:
        shown = {}
        for label, path in pages.items():
            answer = browser.get(path)
            assert answer.status_code == 200 and answer.text.count("/sessions/") >= 50, path
            shown[label] = median_ms(repeats, lambda path=path: browser.get(path))
    print(f"{name}: the console's /sessions: " + "; ".join(
        f"{label} {ms:.1f} ms" for label, ms in shown.items()))


def cli_ms(url: str, repeats: int) -> float:
    command = [sys.executable, "-m", "tether", "audit", "list", "--limit", "50", "--store", url]
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        times.append((time.perf_counter() - began) * 1000)
        assert done.stdout.count("\n") == 53, done.stdout[-300:]  # header, 50, count, next
    return statistics.median(times)


def sqlite_plan(store: Any) -> Callable[[SessionFilter], str]:
    from tether.store.session_index import where_sql

    def plan(where: SessionFilter) -> str:
        clause, args = where_sql(where, (T0 + 86400 * 15, "8"))
        rows = store._db.execute(f"EXPLAIN QUERY PLAN SELECT * FROM sessions WHERE {clause} "
                                 "ORDER BY created_at DESC, session_id DESC LIMIT 51",
                                 args).fetchall()
        return "; ".join(row[-1] for row in rows)
    return plan


def pg_plan(store: Any) -> Callable[[SessionFilter], str]:
    from tether.store.session_index import PG_SESSION_ID, where_sql

    def plan(where: SessionFilter) -> str:
        clause, args = where_sql(where, (T0 + 86400 * 15, "8"), "%s", PG_SESSION_ID)
        with store._connection() as db:
            rows = db.execute(f"EXPLAIN SELECT * FROM {store.schema}.sessions WHERE {clause} "
                              f"ORDER BY created_at DESC, {PG_SESSION_ID} DESC LIMIT 51",
                              args).fetchall()
        return "; ".join(r[0].strip() for r in rows if "Scan" in r[0] or "Sort" in r[0])
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--cli-repeats", type=int, default=7)
    parser.add_argument("--pg", default=PG_URL)
    parser.add_argument("--skip-pg", action="store_true")
    args = parser.parse_args()
    from tether.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "paging.db"
        store = SQLiteStore(path)
        seconds = fill_sqlite(store, args.sessions)
        print(f"SQLite: {args.sessions:,} sessions written in {seconds:.0f} s "
              f"({args.sessions / seconds:,.0f} a second, 2 transactions each but the open)")
        measure("SQLite", store, args.repeats, sqlite_plan(store))
        console("SQLite", store, args.repeats)
        store.close()
        print(f"SQLite: `tether audit list --limit 50` as a process: "
              f"{cli_ms(f'sqlite:///{path}', args.cli_repeats):.0f} ms")
    if args.skip_pg:
        return
    from tether.store.postgres import PostgresStore

    schema = f"bench_paging_{uuid.uuid4().hex[:8]}"
    pg = PostgresStore(args.pg, schema=schema)
    try:
        seconds = fill_postgres(pg, args.sessions)
        with pg._connection() as db:
            db.execute(f"ANALYZE {schema}.sessions")
        print(f"PostgreSQL: {args.sessions:,} sessions written in {seconds:.0f} s "
              f"(batches of 500 sessions' steps a transaction)")
        measure("PostgreSQL", pg, args.repeats, pg_plan(pg))
        console("PostgreSQL", pg, args.repeats)
        url = f"{args.pg}{'&' if '?' in args.pg else '?'}schema={schema}"
        print(f"PostgreSQL: `tether audit list --limit 50` as a process: "
              f"{cli_ms(url, args.cli_repeats):.0f} ms")
    finally:
        with pg._connection() as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
        pg.close()


if __name__ == "__main__":
    main()
