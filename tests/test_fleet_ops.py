"""A fleet's operations: cancel (queued and running), priority and deduplication, the command
line, and what a fleet refuses."""

from __future__ import annotations

import pytest

from conftest import import_or_unavailable

import_or_unavailable("dbos", "dbos")

import fleet_app  # noqa: E402, I001
from fleet_harness import (  # noqa: E402  (and its fixtures)
    AGENT,
    Database,
    Workers,
    unfinished,
    wait_until,
)
from fleet_harness import database, fleet, workers  # noqa: E402, F401  (fixtures)
from tether.durable import Fleet  # noqa: E402


def test_a_fleet_refuses_what_its_workers_could_not_run(
        database: Database) -> None:  # noqa: F811
    with pytest.raises(ValueError, match="is not"):
        Fleet("no_colon", database.dbos)
    with pytest.raises(ValueError, match="cannot be loaded"):
        Fleet("fleet_app:nothing_here", database.dbos)
    with Fleet(AGENT, database.dbos) as made:
        with pytest.raises(ValueError, match="non-empty"):
            made.enqueue("  ")
        with pytest.raises(ValueError, match="cannot contain"):
            made.enqueue("record 1 effects", session_id="a#1")
        with pytest.raises(LookupError, match="no approval request"):
            made.approve("nope", "apr_nope", approver="ops")
    secret = Fleet(AGENT, "postgresql://app:hunter2@db.internal/fleet")
    assert "hunter2" not in repr(secret) and "db.internal" in repr(secret)

def test_cancel_stops_a_queued_session_and_interrupts_a_running_one_which_wake_resumes(
        database: Database, fleet: Fleet, workers: Workers,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_TEST_SLOW", "0.1")  # the workers inherit it
    workers.start("w1", concurrency=1)
    running = fleet.enqueue("record 40 effects")
    queued = fleet.enqueue("record 2 effects")  # behind it: one slot
    made = lambda s: sorted(n for x, n in fleet_app.ledger_rows(database.ledger)  # noqa: E731
                            if x == s)
    wait_until(lambda: len(made(running)) >= 3, "three effects", 60)
    assert fleet.cancel(queued) == 1
    assert fleet.cancel(running) == 1
    store = fleet.recipe.journal_store
    assert store is not None
    wait_until(lambda: store.read(running)[-1].type == "session.paused",
               "the running session to pause", 30)
    events = store.read(running)
    assert fleet.status(running) in ("cancelled", "uncertain_effect")
    assert "cancelled (DBOS)" in events[-1].data["detail"]
    stopped_at = len(made(running))
    assert stopped_at < 40
    assert fleet.status(queued) == "cancelled" and made(queued) == []
    if fleet.status(running) == "uncertain_effect":  # the cancel fell inside an effect
        [call_id] = events[-1].data["uncertain"]
        # the cancel may fall between the call's start and its effect: the abandoned tool
        # body still makes it (once: the ledger's constraint), and the skip does not repeat it
        wait_until(lambda: int(call_id[1:]) in made(running), "the uncertain call's effect", 30)
        woken = fleet.settle(running, call_id, "skip", operator="ops")
    else:
        woken = fleet.wake(running)
    assert woken is not None
    wait_until(lambda: fleet.status(running) == "finished", "the woken session", 60)
    assert made(running) == list(range(40))
    assert all(e.data["status"] != "error" for e in store.read(running)
               if e.type == "tool.result")
    assert fleet.status(queued) == "cancelled" and made(queued) == []

def test_the_fleet_command_line_queues_lists_wakes_cancels_and_reports_what_is_not_there(
        database: Database, fleet: Fleet,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    from tether.cli import main

    where = ["--agent", AGENT, "--db", database.dbos]
    assert main(["fleet", "enqueue", "record 2 effects", "--session-id", "s1", *where]) == 0
    assert capsys.readouterr().out.split() == ["s1"]
    assert main(["fleet", "status", *where]) == 0
    assert capsys.readouterr().out.split() == ["s1", "queued"]  # no worker runs
    assert main(["fleet", "wake", "s1", *where]) == 1  # it never paused: nothing to wake
    assert "nothing to wake" in capsys.readouterr().err
    assert main(["fleet", "approve", "s1", "apr_nope", "--approver", "ops",
                 "--unauthenticated", *where]) == 1
    assert "no approval request" in capsys.readouterr().err
    assert main(["fleet", "cancel", "s1", *where]) == 0
    assert main(["fleet", "cancel", "s1", *where]) == 1  # nothing left to cancel
    capsys.readouterr()
    assert main(["fleet", "status", *where]) == 0
    assert capsys.readouterr().out.split() == ["s1", "cancelled"]
    assert main(["fleet", "status", "nobody", *where]) == 1
    assert capsys.readouterr().out.split() == ["nobody", "unknown"]
    assert main(["fleet", "wake", "s1", *where]) == 1  # cancelled before it started
    assert "nothing to wake: cancelled" in capsys.readouterr().err
    assert main(["fleet", "enqueue", "record 1 effects", "--priority", "0", *where]) == 2
    assert "priority must be a whole number from 1" in capsys.readouterr().err
    assert main(["fleet", "enqueue", "record 1 effects", "--dedup", "k1", *where]) == 0
    capsys.readouterr()
    assert main(["fleet", "enqueue", "record 1 effects", "--dedup", "k1", *where]) == 1
    assert "dedup='k1' still waits or runs" in capsys.readouterr().err
    assert main(["fleet", "waiting", *where]) == 0
    assert main(["fleet", "recover", "nobody", *where]) == 0
    assert capsys.readouterr().out == ""
    assert main(["fleet", "status", "--agent", "fleet_app:nothing", "--db", database.dbos]) == 2
    assert "cannot be loaded" in capsys.readouterr().err
    assert main(["fleet", "worker", "--help"]) == 0
    assert "--executor-id" in capsys.readouterr().out
    assert main(["fleet", "worker", "--agent", "fleet_app:nothing", "--db", database.dbos]) == 2
    assert "cannot be loaded" in capsys.readouterr().err

def test_priority_runs_first_and_a_dedup_key_refuses_a_second_session_while_one_waits(
        database: Database, fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    from tether.durable import AlreadyQueued

    late = [fleet.enqueue("record 1 effects", priority=9) for _ in range(3)]
    urgent = fleet.enqueue("record 1 effects", priority=1, dedup="invoice-1")
    with pytest.raises(AlreadyQueued, match="invoice-1"):
        fleet.enqueue("record 1 effects", session_id="second", dedup="invoice-1")
    from tether.durable.activation import TASK_KEY

    refused_task = fleet.recipe.journal_store.get_private(  # type: ignore[union-attr]
        "second", TASK_KEY)
    assert refused_task is None  # a refused session keeps no task behind
    workers.start("w1", concurrency=1)  # one at a time: the order is the queue's
    wait_until(lambda: unfinished(fleet) == 0, "the four sessions", 60)
    store = fleet.recipe.journal_store
    assert store is not None
    began = {s: store.read(s)[0].timestamp for s in [*late, urgent]}
    assert began[urgent] < min(began[s] for s in late)
    fleet.enqueue("record 1 effects", dedup="invoice-1")  # the first ended: the key is free


def test_dbos_records_hold_the_session_id_and_its_status_and_no_task(
        fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    """The task waits for its first activation in tether's store (apart from the journal);
    DBOS's rows carry the session id as their input and the status as their output."""
    secret_task = "record 1 effects for account 4242-secret-marker"
    session_id = fleet.enqueue(secret_task)
    (row,) = fleet.client.list_workflows(workflow_id_prefix=[session_id], load_input=True)
    assert row.input is not None and list(row.input["args"]) == [session_id]
    assert "secret-marker" not in repr(row.input)
    workers.start("w1")
    wait_until(lambda: [a.state for a in fleet.activations(session_id)] == ["SUCCESS"],
               "the session's workflow to end", 60)
    (row,) = fleet.client.list_workflows(workflow_id_prefix=[session_id], load_input=True,
                                         load_output=True)
    assert row.output == "finished" and "secret-marker" not in repr(row)
    store = fleet.recipe.journal_store
    assert store is not None and store.read(session_id)[0].data["task"] == secret_task


def forge_task(store: object, session_id: str, task: str) -> None:
    """Rewrite a stored session's task in place, as someone with database access would."""
    from tether.store.sqlite import SQLiteStore

    start = store.read(session_id)[0]  # type: ignore[attr-defined]
    forged = start.json_text.replace(start.data["task"], task)
    if isinstance(store, SQLiteStore):
        store._db.execute("UPDATE events SET data = ? WHERE seq = 1 AND session_key = (SELECT "
                          "key FROM sessions WHERE session_id = ?)", (forged, session_id))
    else:
        with store._connection() as db:  # type: ignore[attr-defined]
            db.execute(store._sql("UPDATE {s}.events SET data = %s WHERE seq = 1 AND "  # type: ignore[attr-defined]
                                  "session_id = %s"), (forged, session_id))


def test_a_session_whose_journal_was_tampered_with_is_reported_refused_and_wake_says_why(
        database: Database, fleet: Fleet, workers: Workers,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    from tether.cli import main

    workers.start("w1")
    session_id = fleet.enqueue("record 3 effects, approve the second")
    wait_until(lambda: fleet.status(session_id) == "needs_approval", "the pause", 60)
    # the journal says "paused" a moment before DBOS records the workflow's end: a worker
    # killed in between leaves it PENDING on w1, which only an executor named w1 recovers
    wait_until(lambda: unfinished(fleet) == 0, "the paused activation to end", 60)
    workers.kill_all()
    [request] = fleet.recipe.approval_store.pending(session_id)
    assert fleet.approve(session_id, request.id, approver="ops") == f"{session_id}#1"
    store = fleet.recipe.journal_store
    assert store is not None
    forge_task(store, session_id, "record 9 effects, approve the second")
    workers.start("w2")  # its activation refuses the journal
    wait_until(lambda: unfinished(fleet) == 0, "the woken activation to end", 60)
    assert fleet.status(session_id) == "refused"
    assert "does not verify" in fleet.describe(session_id).detail
    from tether.durable import SessionRefused

    with pytest.raises(SessionRefused, match="does not verify"):  # before any decision
        fleet.deny(session_id, request.id, approver="ops")
    assert sorted(n for s, n in fleet_app.ledger_rows(database.ledger) if s == session_id) \
        == [0]
    where = ["--agent", AGENT, "--db", database.dbos]
    capsys.readouterr()
    assert main(["fleet", "wake", session_id, *where]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "does not verify" in err and "audit verify" in err
    assert main(["fleet", "status", *where]) == 0
    assert capsys.readouterr().out.split()[:2] == [session_id, "refused"]
    assert main(["fleet", "waiting", *where]) == 0
    assert capsys.readouterr().out.split()[:2] == [session_id, "refused"]


def test_every_status_a_session_can_reach_is_named_and_a_failed_activation_is_not_paused(
        database: Database) -> None:  # noqa: F811
    from tether.durable.status import STATUSES, Attempt, describe

    agent = fleet_app.build()
    session = agent.session("record 3 effects, approve the second")
    assert session.run().stop_reason.value == "needs_approval"
    [request] = agent.approval_store.pending(session.id)
    agent.approval_store.approve(request.id, approver="ops")
    events = agent.journal_store.read(session.id)  # type: ignore[union-attr]
    done = Attempt("SUCCESS")
    status = lambda *attempts: describe(session.id, events, 0, attempts).status  # noqa: E731
    assert status(done) == "paused"  # decided outside the fleet: nobody woke it
    assert status(done, Attempt("ENQUEUED")) == "queued"
    assert status(done, Attempt("PENDING")) == "running"
    assert status(Attempt("CANCELLED")) == "cancelled"
    failed = describe(session.id, events, 0, [done, Attempt("ERROR", "StoreUnavailable: away")])
    assert failed.status == "failed" and "StoreUnavailable: away" in failed.detail
    assert status(done, Attempt("MAX_RECOVERY_ATTEMPTS_EXCEEDED")) == "failed"
    assert status(done, Attempt("ERROR", "RecipeChanged: another recipe")) == "refused"
    assert describe(session.id, events, 1, [done]).status == "needs_approval"
    assert describe("s", [], 0, [done]).status == "unknown"
    assert describe("s", [], 0, []).status == "unknown"
    assert {"queued", "running", "needs_approval", "uncertain_effect", "paused", "cancelled",
            "refused", "failed", "erased", "unknown"} == set(STATUSES)


def test_a_failed_activation_is_reported_with_its_error_and_wake_tries_again(
        database: Database, fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    store = fleet.recipe.journal_store
    assert store is not None
    session_id = fleet.enqueue("record 2 effects")
    store.drop_private(session_id)  # its task lost before any worker ran it: the body raises
    workers.start("w1")
    wait_until(lambda: unfinished(fleet) == 0, "the activation to end", 60)
    report = fleet.describe(session_id)
    assert report.status == "failed" and "no task is queued" in report.detail
    assert fleet.waiting() == {session_id: "failed"}
    fleet.enqueue("record 2 effects", session_id=session_id)  # the task again: DBOS attaches
    assert fleet.status(session_id) == "failed"  # (its workflow ended: nothing ran)
    woken = fleet.wake(session_id)
    assert woken == f"{session_id}#0.1"
    wait_until(lambda: fleet.status(session_id) == "finished", "the woken session", 60)
    assert fleet.wake(session_id) is None
    assert sorted(n for s, n in fleet_app.ledger_rows(database.ledger) if s == session_id) \
        == [0, 1]
