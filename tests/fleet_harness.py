"""What the fleet's tests share: one database per test (SQLite files, or a PostgreSQL database of
its own, never skipped under CI), worker processes killed at the end whatever happened, and a
poll with a deadline for what the workers do."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import fleet_app
from tether.durable import Fleet

from conftest import PG_URL, unavailable

ROOT = Path(__file__).resolve().parent.parent
AGENT = "fleet_app:build"


@dataclass(frozen=True)
class Database:
    dbos: str  # DBOS's system database
    store: str  # tether's journals
    ledger: str  # the test's ledger of effects


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    if request.param == "sqlite":
        made = Database(f"sqlite:///{tmp_path}/dbos.db", f"sqlite:///{tmp_path}/tether.db",
                        f"sqlite:///{tmp_path}/ledger.db")
        drop: Callable[[], None] = lambda: None  # noqa: E731
    else:  # one PostgreSQL database of its own: DBOS's schema, tether's and the ledger
        import psycopg

        name = f"tether_fleet_{uuid.uuid4().hex[:10]}"
        try:
            admin = psycopg.connect(PG_URL, autocommit=True)
        except psycopg.OperationalError as exc:
            unavailable(f"PostgreSQL is not reachable ({exc}); TETHER_TEST_PG names the server")
        admin.execute(f"CREATE DATABASE {name}")
        url = PG_URL.rsplit("/", 1)[0] + f"/{name}"
        made = Database(url, url, url)

        def drop() -> None:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.close()
    monkeypatch.setenv("FLEET_TEST_STORE", made.store)
    monkeypatch.setenv("FLEET_TEST_LEDGER", made.ledger)
    fleet_app.create_ledger(made.ledger)
    try:
        yield made
    finally:
        drop()


def environment() -> dict[str, str]:
    paths = [str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


class Workers:
    """Worker processes (``python -m tether.durable.worker``) by executor id; all killed at the
    end, whatever happened."""

    def __init__(self, database: Database, logs: Path) -> None:
        self.database, self.logs = database, logs
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, executor_id: str, concurrency: int = 8) -> None:
        log = (self.logs / f"{executor_id}-{len(self.procs)}-{time.monotonic_ns()}.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether.durable.worker", "--agent", AGENT,
             "--db", self.database.dbos, "--executor-id", executor_id,
             "--concurrency", str(concurrency), "--poll", "0.05"],
            stdout=subprocess.PIPE, stderr=log, text=True, env=environment())
        self.procs[executor_id] = proc
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        assert line.strip() == f"ready {executor_id}", f"worker {executor_id} did not start"

    def kill(self, executor_id: str) -> None:
        proc = self.procs.pop(executor_id)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def kill_all(self) -> None:
        for executor_id in list(self.procs):
            with contextlib.suppress(ProcessLookupError):
                self.kill(executor_id)


@pytest.fixture
def workers(database: Database, tmp_path: Path) -> Iterator[Workers]:
    made = Workers(database, tmp_path)
    try:
        yield made
    finally:
        made.kill_all()


@pytest.fixture
def fleet(database: Database) -> Iterator[Fleet]:
    with Fleet(AGENT, database.dbos) as made:
        made.client  # noqa: B018  (creates DBOS's tables before any worker races to)
        yield made


def wait_until(check: Callable[[], bool], what: str, timeout: float) -> None:
    """Poll ``check`` until it holds, failing with ``what`` past ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def running_on(fleet: Fleet, executor_id: str) -> bool:
    return bool(fleet.client.list_workflows(status="PENDING", executor_id=executor_id,
                                            load_input=False, load_output=False))


def unfinished(fleet: Fleet) -> int:
    return sum(1 for a in fleet.activations() if a.state in ("ENQUEUED", "PENDING"))
