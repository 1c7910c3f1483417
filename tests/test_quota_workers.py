"""Quotas raced by worker processes on one store (SQLite and PostgreSQL), and a worker killed
between its reservation and its settlement (issue 49, part 2).

Each worker is a separate process (``tests/quota_app.py``) running real sessions of an agent
with a per-tenant quota on refunds (a side-effecting tool) and on tokens; workers start at once
(each waits for a line on stdin after it is ready). What actually ran is counted outside the
store: each refund appends to a ledger file, each session prints the tokens it used.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import quota_app
from tether.store.opening import open_store
from tether.store.quotas import QuotaAsk, QuotaGrant, QuotaRefusal

from conftest import PG_URL, unavailable

APP = quota_app.__file__
TENANTS = ("acme", "globex")


class Place:
    """A fresh store URL per example: a SQLite file, or a PostgreSQL schema dropped after."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind, self.tmp = kind, tmp
        self.schemas: list[str] = []

    def make(self) -> tuple[str, Path]:
        name = uuid.uuid4().hex[:10]
        ledger = self.tmp / f"ledger-{name}"
        if self.kind == "sqlite":
            return f"sqlite:///{self.tmp}/q-{name}.db", ledger
        self.schemas.append(f"q_{name}")
        return f"{PG_URL}?schema=q_{name}", ledger

    def drop(self) -> None:
        """Every schema made (at the fixture's end, whatever happened)."""
        if self.schemas:
            import psycopg

            with psycopg.connect(PG_URL, autocommit=True) as db:
                for schema in self.schemas:
                    db.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "postgres":
        try:
            import psycopg

            psycopg.connect(PG_URL, connect_timeout=5).close()
        except Exception as exc:  # (psycopg missing or the server down)
            unavailable(f"PostgreSQL is not reachable ({exc}); TETHER_TEST_PG names the server")
    made = Place(request.param, tmp_path)
    yield made
    made.drop()


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, APP, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def rows(store: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of the store's own tables (``{s}``: its schema, if any)."""
    if hasattr(store, "_db"):
        return [tuple(r) for r in store._db.execute(sql.format(s=""))]
    with store._connection() as db:
        return [tuple(r) for r in db.execute(store._sql(sql.format(s="{s}.")))]


def stop_all(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


turns = st.lists(st.tuples(st.integers(1, 300),
                           st.lists(st.sampled_from(["refund", "refund", "lookup"]), max_size=3)),
                 min_size=1, max_size=3)
sessions = st.lists(st.fixed_dictionaries({"tenant": st.sampled_from(TENANTS), "turns": turns}),
                    min_size=1, max_size=3)
plans = st.fixed_dictionaries({"refunds": st.integers(0, 4), "tokens": st.integers(250, 2500),
                               "workers": st.lists(sessions, min_size=2, max_size=3)})


@settings(max_examples=4, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example(plan={"refunds": 3, "tokens": 100_000, "workers": [  # every worker refunds at once
    [{"tenant": "acme", "turns": [[8, ["refund", "refund"]], [8, ["refund"]]]}] * 2] * 3})
@example(plan={"refunds": 50, "tokens": 900, "workers": [  # tokens run out first
    [{"tenant": "acme", "turns": [[200, ["lookup"]], [200, []]]}] * 2] * 3})
@given(plan=plans)
def test_racing_workers_never_exceed_a_quota(place: Place, plan: dict[str, Any]) -> None:
    url, ledger = place.make()
    open_store(url).close()  # made (and migrated) once, before the workers race on it
    limits = {"refunds": plan["refunds"], "tokens": plan["tokens"]}
    procs = [start("race", url, json.dumps({**limits, "sessions": s}), str(ledger))
             for s in plan["workers"]]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if \
                proc.stderr else ""
        for proc in procs:  # all ready: go, together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            results += [json.loads(line) for line in out.splitlines()]
    finally:
        stop_all(procs)
    assert len(results) == sum(len(s) for s in plan["workers"])
    refunds = Counter(line.split(":")[0] for line in
                      (ledger.read_text().split() if ledger.exists() else []))
    tokens = Counter[str]()
    for r in results:
        tokens[r["tenant"]] += r["tokens"]
        assert r["stop"] in ("finished", "quota"), r
        if r["stop"] == "quota":
            assert "quota '" in r["detail"] and "frees up" in r["detail"], r
    for tenant in TENANTS:  # each tenant within its own quota: never more, whatever the race
        assert refunds[tenant] <= plan["refunds"], (tenant, refunds, results)
        assert tokens[tenant] <= plan["tokens"], (tenant, tokens, results)


def test_a_worker_killed_mid_call_holds_its_reservation_for_its_lease(place: Place) -> None:
    """kill -9 between reserve and settle: the reservation counts until the worker's lease
    lapses — not before (another worker is refused the room), not never (then it is free)."""
    url, ledger = place.make()
    store = open_store(url)
    ttl = 30.0
    proc = start("hang", url, str(ledger), str(ttl))
    try:
        assert proc.stdout is not None
        session_id = proc.stdout.readline().strip()
        assert proc.stdout.readline().strip() == "reserved", proc.stderr.read() if \
            proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed = time.time()
    finally:
        stop_all([proc])
    quota = quota_app.quotas({"refunds": quota_app.REFUNDS, "tokens": quota_app.TOKENS})[1]
    key = json.dumps(["tokens", "tokens", None, "tenant", "acme"], separators=(",", ":"))
    held = store.quota_used(key, quota.seconds, killed)  # type: ignore[attr-defined]
    (amount, hold), = rows(store, "SELECT amount, hold FROM {s}quota_use WHERE settled = 0")
    assert amount > 0 and hold > 0
    assert held == amount + hold  # the killed call's worst case and its wrap-up's hold
    last = killed + ttl  # the lease (renewed at the latest when the worker died) lapses by then

    def ask(now: float) -> QuotaGrant | QuotaRefusal:
        whole = QuotaAsk(key, quota.limit_units, quota.seconds, quota_app.TOKENS,
                         lambda room: (room, 0), "another-session", "another-worker",
                         now + 60, settled=True)
        return store.quota_reserve(whole, now)  # type: ignore[attr-defined,no-any-return]

    assert store.quota_used(key, quota.seconds, last - 1) == held  # type: ignore[attr-defined]
    assert isinstance(ask(last - 1), QuotaRefusal)  # still held within the lease: not before
    assert store.quota_used(key, quota.seconds, last + 0.01) == 0  # type: ignore[attr-defined]
    assert isinstance(ask(last + 0.01), QuotaGrant)  # free once the lease lapsed: not never
    assert session_id
    store.close()
