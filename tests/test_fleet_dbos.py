"""A fleet of worker processes on one database (SQLite, and PostgreSQL: never skipped under CI):
sessions queued as DBOS workflows, workers killed -9 mid-run and recovered, each effect once.

The ledger (``fleet_app``) is the test's own table with a unique (session, n) constraint, so an
effect made twice fails the insert; the assertions read it beside each session's journal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from conftest import import_or_unavailable

import_or_unavailable("dbos", "dbos")

import fleet_app  # noqa: E402, I001
from fleet_harness import (  # noqa: E402  (and its fixtures)
    ROOT,
    Database,
    Workers,
    environment,
    running_on,
    unfinished,
    wait_until,
)
from fleet_harness import database, fleet, workers  # noqa: E402, F401  (fixtures)
from tether.durable import Fleet  # noqa: E402
from tether.durable.activation import activate  # noqa: E402
from tether.journal.chain import verify_chain  # noqa: E402

SESSIONS, EFFECTS = 200, 10


def test_three_workers_drain_the_queue_through_two_kill_9s_each_effect_once(
        database: Database, fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    started = time.monotonic()
    for executor_id in ("w1", "w2", "w3"):
        workers.start(executor_id)
    ids = [fleet.enqueue(f"record {EFFECTS} effects") for _ in range(SESSIONS)]
    doomed = {workers.procs[w].pid for w in ("w1", "w2")}

    def begun_not_ended() -> dict[int, set[str]]:  # per doomed pid: its sessions cut short
        half_done: dict[int, set[str]] = {pid: set() for pid in doomed}
        for session, by_pid in fleet_app.ledger_workers(database.ledger).items():
            if sum(by_pid.values()) < EFFECTS:
                for pid in doomed & set(by_pid):
                    half_done[pid].add(session)
        return half_done

    # the kills land while both doomed workers are mid-session (a slow start under load can
    # leave one idle, and a kill between sessions would recover nothing)
    wait_until(lambda: len(fleet_app.ledger_rows(database.ledger)) >= 600
               and all(begun_not_ended().values()),
               "600 effects, and both doomed workers mid-session", 120)
    workers.kill("w1")
    workers.kill("w2")
    interrupted = set().union(*begun_not_ended().values())  # the dead write no more
    assert interrupted, "the kills came between sessions: nothing to recover"
    workers.start("w1")  # same executor ids: DBOS recovers what the dead ones left pending
    workers.start("w2")
    wait_until(lambda: unfinished(fleet) == 0, "every session's workflow to end", 150)
    elapsed = time.monotonic() - started
    assert {a.state for a in fleet.activations()} == {"SUCCESS"}

    rows = fleet_app.ledger_rows(database.ledger)
    assert not [key for key, n in Counter(rows).items() if n > 1]  # (the constraint, too)
    made = {(s, n) for s, n in rows}
    store = fleet.recipe.journal_store
    assert store is not None
    waiting = fleet.waiting()
    statuses = Counter()
    for session_id in ids:
        events = store.read(session_id)
        assert verify_chain(events) is None, session_id
        status = fleet.status(session_id)
        statuses[status] += 1
        results = {e.data["call_id"] for e in events if e.type == "tool.result"}
        assert all(e.data["status"] == "ok" for e in events if e.type == "tool.result")
        started_calls = Counter(e.data["call_id"] for e in events if e.type == "tool.started")
        assert max(started_calls.values()) == 1, f"{session_id}: a call started twice"
        journaled = {(session_id, int(c[1:])) for c in results}
        assert journaled <= made, f"{session_id}: a journaled effect is not in the ledger"
        if status == "finished":
            assert journaled == {(session_id, n) for n in range(EFFECTS)}
            assert {(s, n) for s, n in made if s == session_id} == journaled
        else:  # paused on the call a kill cut between its effect and its result: surfaced
            assert status == "uncertain_effect", (session_id, status)
            assert waiting[session_id] == "uncertain_effect"
            uncertain = set(started_calls) - results
            assert len(uncertain) == 1
            assert events[-1].type == "session.paused"
            assert events[-1].data["uncertain"], session_id
    assert statuses["finished"] + statuses["uncertain_effect"] == SESSIONS, statuses
    assert set(waiting) == {s for s in ids if fleet.status(s) == "uncertain_effect"}
    # every session a kill cut short was taken over by another process (its effects name two
    # pids) or surfaced as uncertain: none was left, none began again
    made_by = fleet_app.ledger_workers(database.ledger)
    for session_id in interrupted:
        assert len(made_by[session_id]) > 1 or fleet.status(session_id) == "uncertain_effect", \
            (session_id, made_by[session_id])
    print(f"\n{SESSIONS}x{EFFECTS} through 3 workers, 2 killed -9: {elapsed:.1f}s, {statuses}")


def test_an_approval_wait_holds_no_worker_and_survives_a_restart_of_every_worker(
        database: Database, fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    workers.start("w1", concurrency=1)
    workers.start("w2", concurrency=1)
    waiting = fleet.enqueue("record 3 effects, approve the second")
    wait_until(lambda: fleet.status(waiting) == "needs_approval", "the pause", 60)
    # the wait holds no worker: with one slot each, two more sessions still run to the end
    others = [fleet.enqueue("record 2 effects") for _ in range(2)]
    wait_until(lambda: all(fleet.status(s) == "finished" for s in others), "the others", 60)
    assert [a.status for a in fleet.activations(waiting)] == ["needs_approval"]
    workers.kill_all()
    [request] = fleet.recipe.approval_store.pending(waiting)
    woken = fleet.approve(waiting, request.id, approver="ops", note="checked")
    assert woken == f"{waiting}#1"
    assert fleet.wake(waiting) == woken  # one activation per pause, however often woken
    assert fleet.status(waiting) == "queued"  # approving ran nothing: no worker is alive
    assert sorted(n for s, n in fleet_app.ledger_rows(database.ledger) if s == waiting) == [0]
    workers.start("w3")
    wait_until(lambda: fleet.status(waiting) == "finished", "the approved session", 60)
    rows = [n for s, n in fleet_app.ledger_rows(database.ledger) if s == waiting]
    assert sorted(rows) == [0, 1, 2]
    events = fleet.recipe.journal_store.read(waiting)  # type: ignore[union-attr]
    assert verify_chain(events) is None
    assert [e.data["approver"] for e in events if e.type == "approval.granted"] == ["ops"]


# -- the workflow's body, run again as DBOS's recovery would: harmless by construction --------

def test_a_body_run_again_after_a_kill_between_effect_and_result_surfaces_it_never_repeats(
        database: Database, tmp_path: Path) -> None:  # noqa: F811
    hang = tmp_path / "hang"
    session_id, task = uuid.uuid4().hex, "record 3 effects"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fleet_app.py"), "activate",
                             session_id, task], env={**environment(), "FLEET_TEST_HANG": str(hang)})
    try:
        wait_until(hang.exists, "effect 1, made and not yet journaled", 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    agent = fleet_app.build()
    store = agent.journal_store
    assert store is not None
    assert activate(agent, session_id, task) == "uncertain_effect"  # DBOS's recovery, once
    after_first = store.read(session_id)
    assert activate(agent, session_id, task) == "uncertain_effect"  # and again: nothing runs
    assert store.read(session_id) == after_first
    ledger = lambda: sorted(n for s, n in fleet_app.ledger_rows(database.ledger)  # noqa: E731
                            if s == session_id)
    assert ledger() == [0, 1]
    assert sum(1 for e in after_first if e.type == "tool.started") == 2
    agent.load(session_id).settle("c1", "skip", operator="ops", note="the ledger has it")
    assert activate(agent, session_id, task) == "finished"
    ended = store.read(session_id)
    assert activate(agent, session_id, task) == "finished"  # an ended session: nothing more
    assert store.read(session_id) == ended and verify_chain(ended) is None
    assert ledger() == [0, 1, 2]


def test_a_body_run_again_after_a_kill_between_two_calls_goes_on_where_the_journal_stands(
        database: Database) -> None:  # noqa: F811
    session_id, task = uuid.uuid4().hex, "record 6 effects"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fleet_app.py"), "activate",
                             session_id, task], env=environment())
    try:
        wait_until(lambda: len([1 for s, _ in fleet_app.ledger_rows(database.ledger)
                                if s == session_id]) >= 2, "two effects", 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    agent = fleet_app.build()
    status = activate(agent, session_id, task)
    rows = sorted(n for s, n in fleet_app.ledger_rows(database.ledger) if s == session_id)
    assert len(rows) == len(set(rows))
    if status == "finished":
        assert rows == list(range(6))
    else:  # the kill fell inside an effect: surfaced, not repeated
        assert status == "uncertain_effect"


def test_a_session_started_elsewhere_and_paused_for_a_person_is_not_run_by_a_body(
        database: Database) -> None:  # noqa: F811
    agent = fleet_app.build()
    session = agent.session("record 3 effects, approve", session_id=uuid.uuid4().hex)
    assert session.run().stop_reason.value == "needs_approval"
    store = agent.journal_store
    assert store is not None
    paused = store.read(session.id)
    assert activate(agent, session.id, "ignored: the journal has the task") == "needs_approval"
    assert store.read(session.id) == paused
    [request] = agent.approval_store.pending(session.id)
    agent.approval_store.deny(request.id, approver="ops", note="no")
    assert activate(agent, session.id, "ignored") == "finished"
    assert sorted(n for s, n in fleet_app.ledger_rows(database.ledger) if s == session.id) \
        == [0, 2]


def test_the_readme_example_runs_kills_a_worker_and_sends_each_notice_once() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "fleet_dbos.py")],
                         capture_output=True, text=True, timeout=300, env=environment())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("kill -9 w1 after") for line in lines), out.stdout
    assert "approved, then: finished" in lines
    assert lines[-1].endswith("sent twice: 0"), out.stdout


def test_a_worker_gone_for_good_has_its_sessions_recovered_by_the_others_a_live_one_safely(
        database: Database, fleet: Fleet, workers: Workers,  # noqa: F811
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setenv("FLEET_TEST_GATE", str(gate))  # the workers inherit it
    workers.start("w1", concurrency=4)
    workers.start("w2", concurrency=4)
    ids = [fleet.enqueue("record 5 effects, held") for _ in range(12)]
    # both workers run sessions held at their third effect until the gate opens
    wait_until(lambda: len(fleet_app.ledger_rows(database.ledger)) >= 16, "8 sessions held", 60)
    assert running_on(fleet, "w1") and running_on(fleet, "w2")
    workers.kill("w1")
    # w2 is alive and running these: a second activation of each must wait, then run nothing
    assert fleet.recover("w2"), "a mistaken recovery of live w2 found nothing to hand back"
    gate.touch()
    handed_back = fleet.recover("w1")
    assert handed_back, "w1 was killed running nothing"
    wait_until(lambda: unfinished(fleet) == 0, "every session's workflow to end", 120)
    errors = [(r.workflow_id, r.error) for r in fleet.client.list_workflows(load_input=False)
              if r.status == "ERROR"]
    assert not errors
    assert {a.state for a in fleet.activations()} == {"SUCCESS"}
    rows = fleet_app.ledger_rows(database.ledger)
    assert len(rows) == len(set(rows))
    for session_id in ids:
        status = fleet.status(session_id)
        assert status in ("finished", "uncertain_effect"), status
        done = sorted(n for s, n in rows if s == session_id)
        if status == "finished":
            assert done == list(range(5))
        events = fleet.recipe.journal_store.read(session_id)  # type: ignore[union-attr]
        started = Counter(e.data["call_id"] for e in events if e.type == "tool.started")
        assert max(started.values()) == 1, f"{session_id}: a call started twice"
        assert verify_chain(events) is None
