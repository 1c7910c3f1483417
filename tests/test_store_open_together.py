"""Workers that start together on one store (``--workers``, a fleet restarting): processes
released at the same instant open, create and migrate one new SQLite file, or one new
PostgreSQL schema, and every one of them must get its turn — none may fail with ``database is
locked`` or a duplicate-object error. Each child imports everything first, then blocks on a pipe
the parent closes for all of them at once (``tests/store_open_app.py``)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.store.sqlite import MIGRATIONS, SQLiteStore
from tether.store.sqlite import SCHEMA_VERSION as SQLITE_VERSION

from conftest import PG_URL, postgres_store

APP = str(Path(__file__).parent / "store_open_app.py")
WORKERS = 6
ROUNDS = 8


def together(url: str, workers: int = WORKERS) -> list[str]:
    """Start ``workers`` children on ``url``, wait until each is ready, release them at once;
    return what each printed last (``ok`` or its error)."""
    barrier, release = os.pipe()  # one pipe read by every child: one close releases all
    children = [subprocess.Popen([sys.executable, APP, url, f"s{i}"], stdin=barrier,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for i in range(workers)]
    os.close(barrier)
    try:
        for child in children:  # every child has imported tether and waits on the barrier
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        os.close(release)  # the barrier opens for all of them at the same instant
        release = -1
        outcomes = []
        for child in children:
            out, _ = child.communicate(timeout=120)
            outcomes.append(out.strip().splitlines()[-1] if out.strip() else
                            f"exit {child.returncode}, no output")
        return outcomes
    finally:
        if release != -1:
            os.close(release)
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def test_workers_opening_a_new_sqlite_file_at_the_same_instant_all_get_their_turn(
        tmp_path: Path) -> None:
    failures = []
    for round_ in range(ROUNDS):
        path = tmp_path / f"new-{round_}.db"
        outcomes = together(f"sqlite:///{path}")
        failures += [o for o in outcomes if o != "ok"]
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == WORKERS
            assert db.execute("SELECT value FROM meta").fetchone()[0] == str(SQLITE_VERSION)
    assert failures == []


def test_connections_opening_a_new_sqlite_file_at_the_same_instant_all_get_their_turn(
        tmp_path: Path) -> None:
    """The same, on threads of one process (each its own connection): the switch to WAL meets
    SQLite's deadlock rule far more often here than across processes on a 2-core machine."""
    failures: list[str] = []
    for round_ in range(60):
        barrier = threading.Barrier(8)

        def open_it(path: Path = tmp_path / f"threads-{round_}.db",
                    barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                SQLiteStore(path).close()
            except Exception as exc:  # collected: the assertion below names every one
                failures.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=open_it) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def old_sqlite_file(path: Path, version: int) -> None:
    """A store file as a tether of schema ``version`` left it (WAL already on)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for number in range(1, version + 1):
        for statement in MIGRATIONS[number].split(";"):
            if statement.strip():
                db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    db.close()


def test_workers_migrating_an_old_sqlite_file_at_the_same_instant_all_get_their_turn(
        tmp_path: Path) -> None:
    failures = []
    for round_ in range(ROUNDS // 2):
        path = tmp_path / f"old-{round_}.db"
        old_sqlite_file(path, 3)
        failures += [o for o in together(f"sqlite:///{path}") if o != "ok"]
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == WORKERS
            assert db.execute("SELECT value FROM meta").fetchone()[0] == str(SQLITE_VERSION)
    assert failures == []


@pytest.fixture
def schemas() -> Iterator[list[str]]:
    """Names for new PostgreSQL schemas, dropped afterwards."""
    from tether.store.postgres import PostgresStore

    names: list[str] = []
    yield names
    admin = postgres_store()  # fails under CI=true when PostgreSQL is unreachable
    assert isinstance(admin, PostgresStore)
    with admin._pool.connection() as db:
        for name in [*names, admin.schema]:
            db.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    admin.close()


def test_workers_creating_a_new_postgres_schema_at_the_same_instant_all_get_their_turn(
        schemas: list[str]) -> None:
    postgres_store().close()  # reachable (or skipped outside CI)
    failures = []
    for _ in range(ROUNDS):
        schema = f"t_open_{uuid.uuid4().hex[:8]}"
        schemas.append(schema)
        failures += [o for o in together(f"{PG_URL}?schema={schema}") if o != "ok"]
    assert failures == []


def test_workers_migrating_an_old_postgres_schema_at_the_same_instant_all_get_their_turn(
        schemas: list[str]) -> None:
    import psycopg

    from tether.store.postgres_schema import MIGRATIONS as PG_MIGRATIONS

    postgres_store().close()  # reachable (or skipped outside CI)
    failures = []
    for _ in range(ROUNDS // 2):
        schema = f"t_old_{uuid.uuid4().hex[:8]}"
        schemas.append(schema)
        with psycopg.connect(PG_URL, autocommit=True) as db:  # as a schema-3 tether left it
            db.execute(f"CREATE SCHEMA {schema}")
            db.execute(f"CREATE TABLE {schema}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for number in (1, 2, 3):
                for statement in PG_MIGRATIONS[number]:
                    db.execute(statement.replace("{s}", schema))
            db.execute(f"INSERT INTO {schema}.meta VALUES ('schema_version', '3')")
        failures += [o for o in together(f"{PG_URL}?schema={schema}") if o != "ok"]
    assert failures == []


def test_the_switch_to_wal_is_retried_while_another_worker_holds_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic: another connection holds a write lock on a new (not yet WAL) file, so
    SQLite refuses the switch at once, without waiting out the busy timeout (its deadlock
    rule); the open retries, and the holder lets go during the first back-off."""
    import types

    from tether.store import sqlite_open

    path = str(tmp_path / "new.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE other(x)")
    holder.execute("BEGIN IMMEDIATE")  # another worker, mid-write
    holder.execute("INSERT INTO other VALUES (1)")
    backoffs: list[float] = []

    def back_off(seconds: float) -> None:  # the first back-off: the other worker finishes
        backoffs.append(seconds)
        if holder.in_transaction:
            holder.execute("COMMIT")

    monkeypatch.setattr(sqlite_open, "time", types.SimpleNamespace(
        monotonic=sqlite_open.time.monotonic, sleep=back_off))
    try:
        SQLiteStore(path).close()
    finally:
        holder.close()
    assert len(backoffs) >= 1  # it was refused, then retried
    check = sqlite3.connect(path)
    try:
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert check.execute("SELECT count(*) FROM other").fetchone()[0] == 1
    finally:
        check.close()
