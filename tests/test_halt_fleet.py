"""A halt proved to stop across processes: 50 sessions from two worker processes on one store
(SQLite, then PostgreSQL) halted by tenant from a third while they run, and the randomized
trials of tests/test_halt_trials.py on PostgreSQL. ``halt_fleet.check`` holds each run to the
guarantee; here also: every session of tenant ``a`` that was running when the halt committed
ended ``halted``, and every session of tenant ``b`` finished.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from halt_fleet import check, from_file, started
from test_halt_trials import OPERATOR, run_trials
from tether.runtime.chokepoint.halts import halt
from tether.store.halts import Halt, Halted, HaltScope
from tether.store.sqlite import SQLiteStore

from conftest import PG_URL, postgres_store

HERE = Path(__file__).parent


def test_randomized_trials_on_postgres(tmp_path: Path) -> None:
    run_trials("postgres", tmp_path)


def wait_for(condition: Any, what: str, timeout: float = 120.0) -> None:
    """Poll ``condition`` until it holds (a deadline only against a hang, not a margin)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_fifty_sessions_two_processes_halted_by_tenant(kind: str, tmp_path: Path) -> None:
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        store: Any = SQLiteStore(tmp_path / "fleet.db")
    else:
        store = postgres_store()
        url = f"{PG_URL}?schema={store.schema}"
    evidence = tmp_path / "ran"
    rng = random.Random()
    workers = [subprocess.Popen(
        [sys.executable, str(HERE / "halt_fleet.py"), url, str(evidence), "25", "60"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"),
                                                          os.environ.get("PYTHONPATH", "")])})
        for _ in range(2)]
    try:
        wait_for(lambda: len(from_file(evidence)) >= rng.randint(40, 200), "side effects")
        made: Halt = halt(store, HaltScope(tenant_id="a"), reason="fleet", by=OPERATOR)
        listed = store.sessions()
        before = started(store, [i.session_id for i in listed])
        ended = {i.session_id for i in listed if i.status == "ended"}
        outputs = [w.communicate(timeout=180)[0] for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
    reasons = dict(line.split() for out in outputs for line in out.splitlines())
    assert len(reasons) == 50 and all(w.returncode == 0 for w in workers)
    try:
        check(store, made, before, from_file(evidence), reasons)
        owners = {sid: store.session_owner(sid)[0] for sid in reasons}
        # every session of tenant a that was running when the halt committed ended halted
        assert {r for s, r in reasons.items() if owners[s] == "a" and s not in ended} == \
            {"halted"}
        assert {r for s, r in reasons.items() if owners[s] == "b"} == {"finished"}
    finally:
        if kind == "postgres":
            with store._pool.connection() as db:
                db.execute(f"DROP SCHEMA {store.schema} CASCADE")
        store.close()



def test_on_postgres_a_halt_waits_for_a_start_admitted_before_it_to_commit() -> None:
    """The race the lock closes: an append read no halt, and has not committed yet. The halt
    must commit after it (it waits on halt_state's row), never before it."""
    import threading

    from tether.journal.chain import Journal
    from tether.store.halts import new_halt
    from tether.store.postgres_steps import run
    from tether.vocabulary import EventType

    store = postgres_store()
    try:
        journal = Journal("s-race", store=store)
        journal.append(EventType.SESSION_START, {"subject": {"tenant_id": "a"}, "agent": "x"})
        journal.flush()
        journal.append(EventType.TOOL_STARTED, {"call_id": "c1", "tool": "pay"})
        pending = journal.events()[journal.flushed:]
        append = store._as_append("s-race", pending, None, None)
        done = threading.Event()
        made = new_halt(HaltScope(tenant_id="a"), "race", "ops", "test")

        def halting() -> None:
            store.put_halt(made)
            done.set()

        with store._pool.connection() as db:  # the append's transaction, held open
            refused = run(db, store._statements.write([append]))
            assert refused == [None]  # admitted: no halt yet
            issuer = threading.Thread(target=halting)
            issuer.start()
            with store._pool.connection() as watcher:
                wait_for(lambda: done.is_set() or watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE %s", (f"%{store.schema}.halt_state%",)).fetchone()[0] > 0,
                    "the halt to wait, or to commit")
            assert not done.is_set(), "the halt committed while an admitted start was open"
        issuer.join(60)  # the append committed: now the halt does
        assert done.is_set()
        assert [e.type for e in store.read("s-race")][-1] == "tool.started"
        journal.append(EventType.TOOL_STARTED, {"call_id": "c2", "tool": "pay"})
        with pytest.raises(Halted):
            journal.flush()
    finally:
        with store._pool.connection() as db:
            db.execute(f"DROP SCHEMA {store.schema} CASCADE")
        store.close()
