"""What a quota costs: python bench/quota.py [--store sqlite|postgres|all] [--runs N]

Two figures per store. The ledger: one model call's reservation (one transaction that sums the
window and inserts) and its settlement, timed directly against the store, median and p95 µs.
The run: the scripted 20-tool-call run of ``bench/overhead.py`` on the store, with no quota
and with two (a token quota and a tool-call quota: each model call reserves and settles one,
each tool call takes one), interleaved round by round; the ratio of the medians is the quota's
share of a step (a step is a model call and a tool call). Quotas off cost nothing beyond a
``None`` check: ``bench/instructions.py`` counts it (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from overhead import BUDGET, TOOL_CALLS, twenty_call_agent

from tether import Agent, Quota
from tether.store.opening import open_store
from tether.store.quotas import QuotaAsk, QuotaGrant

STEPS_PER_RUN = TOOL_CALLS + 1  # model calls: one per tool call, and the answer
PG = os.environ.get("TETHER_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
QUOTAS = [Quota("tokens", 10**12, "1d", per="tenant", counts="tokens"),
          Quota("calls", 10**9, "1h", per="tenant", counts="tool_calls")]


def url_for(kind: str, scratch: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{scratch}/quota-{uuid.uuid4().hex[:8]}.db"
    return f"{PG}?schema=bench_quota_{uuid.uuid4().hex[:8]}"


def prefill(store: object, rows: int) -> None:
    """``rows`` settled rows of the timed key inside its window (a window's worth of use)."""
    now = time.time()
    values = [(uuid.uuid4().hex, "bench", now - i * 0.001, 1, 0, 1, f"s{i}", "h", 0.0)
              for i in range(rows)]
    sql = ("INSERT INTO {s}quota_use (id, key, at, amount, hold, settled, session_id, holder, "
           "expires_at) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})")
    db = getattr(store, "_db", None)
    if db is not None:
        with db:
            db.executemany(sql.format(s="", p="?"), values)
        return
    statement = store._sql(sql.format(s="{s}.", p="%s"))  # type: ignore[attr-defined]
    with store._connection() as pg, pg.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.executemany(statement, values)


def ledger_us(url: str, n: int, rows: int = 0) -> tuple[list[float], list[float]]:
    store = open_store(url)
    prefill(store, rows)
    reserve, settle = [], []
    for _ in range(n):
        ask = QuotaAsk("bench", 10**15, 3600.0, 100, lambda room: (300, 400), "s", "h",
                       time.time() + 60)
        started = time.perf_counter()
        got = store.quota_reserve(ask, time.time())  # type: ignore[attr-defined]
        middle = time.perf_counter()
        assert isinstance(got, QuotaGrant)
        store.quota_settle(got.row, 250, 400, time.time())  # type: ignore[attr-defined]
        reserve.append((middle - started) * 1e6)
        settle.append((time.perf_counter() - middle) * 1e6)
    store.close()
    return reserve, settle


def run_us(agent: Agent) -> float:
    started = time.perf_counter()
    asyncio.run(agent.arun("compute", budget=BUDGET, tenant_id="acme"))
    return (time.perf_counter() - started) * 1e6 / STEPS_PER_RUN


def drop(url: str) -> None:
    if "schema=" in url:
        import psycopg

        with psycopg.connect(PG, autocommit=True) as db:
            db.execute(f"DROP SCHEMA IF EXISTS {url.rsplit('=', 1)[1]} CASCADE")


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="all", choices=("sqlite", "postgres", "all"))
    parser.add_argument("--runs", type=int, default=30, help="runs of each kind, interleaved")
    parser.add_argument("--n", type=int, default=1000, help="ledger reservations timed")
    parser.add_argument("--rows", type=int, default=10_000,
                        help="settled rows in the window for the second ledger figure")
    args = parser.parse_args()
    kinds = ("sqlite", "postgres") if args.store == "all" else (args.store,)
    print(f"python {sys.version.split()[0]}; {args.n} reservations; {args.runs} runs of "
          f"{STEPS_PER_RUN} steps each way")
    for kind in kinds:
        with tempfile.TemporaryDirectory() as scratch:
            url = url_for(kind, scratch)
            for rows in (0, args.rows):
                filled = url_for(kind, scratch)
                reserve, settle = ledger_us(filled, args.n, rows)
                drop(filled)
                print(f"{kind}, {rows} rows in the window: reserve median "
                      f"{statistics.median(reserve):.0f} µs (p95 {p95(reserve):.0f}), settle "
                      f"median {statistics.median(settle):.0f} µs (p95 {p95(settle):.0f})")
            plain = dataclasses.replace(twenty_call_agent(), store=url)
            quota = dataclasses.replace(plain, quotas=QUOTAS)
            off, on = [], []
            run_us(plain), run_us(quota)  # warm: the store made, the imports done
            for _ in range(args.runs):
                off.append(run_us(plain))
                on.append(run_us(quota))
            m_off, m_on = statistics.median(off), statistics.median(on)
            print(f"{kind}: a step {m_off:.0f} µs without quotas, {m_on:.0f} µs with two "
                  f"(+{m_on - m_off:.0f} µs, ratio {m_on / m_off:.2f})")
            drop(url)
    print("(quotas off: see bench/instructions.py; the check is one `is None` per call)")


if __name__ == "__main__":
    main()
