"""A fleet's approvals, whatever the interleaving: an approval given before, while or after the
session journals its pause never strands the session (SQLite and PostgreSQL).

The sessions are held at a gate (``FLEET_TEST_PAUSE_GATE``, see ``fleet_app``) between their
approval request's row and their ``session.paused`` event: the window in which a quick
approver's ``Fleet.approve`` finds no pause to wake.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from conftest import import_or_unavailable

import_or_unavailable("dbos", "dbos")

import fleet_app  # noqa: E402, I001
from fleet_harness import (  # noqa: E402  (and its fixtures)
    Database,
    Workers,
    unfinished,
    wait_until,
)
from fleet_harness import database, fleet, workers  # noqa: E402, F401  (fixtures)
from tether.durable import Fleet  # noqa: E402
from tether.durable.activation import activate  # noqa: E402
from tether.journal.chain import verify_chain  # noqa: E402


def made(where: Database, session_id: str) -> list[int]:
    return sorted(n for s, n in fleet_app.ledger_rows(where.ledger) if s == session_id)


def test_a_body_whose_approval_was_decided_before_its_pause_goes_on_by_itself(
        database: Database, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setenv("FLEET_TEST_PAUSE_GATE", str(gate))
    agent = fleet_app.build()
    store = agent.journal_store
    assert store is not None
    session_id, outcome = uuid.uuid4().hex, list[str]()
    body = threading.Thread(target=lambda: outcome.append(
        activate(agent, session_id, "record 3 effects, approve the second")))
    body.start()
    try:
        wait_until(Path(f"{gate}.requested").exists, "the approval request's row", 60)
        assert store.read(session_id)[-1].type != "session.paused"  # not journaled yet
        approver = fleet_app.build()  # another process's recipe: the approver's
        [request] = approver.approval_store.pending(session_id)
        approver.approval_store.approve(request.id, approver="ops", note="quick")
    finally:
        gate.touch()
        body.join(60)
    assert outcome == ["finished"]  # not "needs_approval" with nothing left to approve
    assert made(database, session_id) == [0, 1, 2]
    assert verify_chain(store.read(session_id)) is None


def test_an_approval_given_before_the_pause_is_journaled_never_strands_the_fleet_session(
        database: Database, fleet: Fleet, workers: Workers, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setenv("FLEET_TEST_PAUSE_GATE", str(gate))  # the workers inherit it
    workers.start("w1")
    session_id = fleet.enqueue("record 3 effects, approve the second")
    requested = Path(f"{gate}.requested")
    wait_until(requested.exists, "the approval request's row", 60)
    store = fleet.recipe.journal_store
    assert store is not None
    assert store.read(session_id)[-1].type != "session.paused"
    try:
        fleet.approve(session_id, requested.read_text(), approver="ops", note="at once")
    finally:
        gate.touch()
    wait_until(lambda: unfinished(fleet) == 0 and store.read(session_id)[-1].type in (
        "session.paused", "session.end"), "the session's activations to end", 60)
    assert fleet.status(session_id) == "finished"
    assert fleet.waiting() == {}
    assert made(database, session_id) == [0, 1, 2]
    assert [e.data["approver"] for e in store.read(session_id)
            if e.type == "approval.granted"] == ["ops"]


def test_approvals_given_the_moment_they_are_requested_strand_none_of_many_sessions(
        database: Database, fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    """The race as a user meets it, no gate: an approver thread approves each request the
    moment it appears, while its session may or may not have journaled its pause."""
    workers.start("w1")
    workers.start("w2")
    ids = [fleet.enqueue("record 3 effects, approve the second") for _ in range(12)]
    store = fleet.recipe.journal_store
    assert store is not None
    done, approved = threading.Event(), list[str]()

    def approver() -> None:
        with Fleet(fleet.agent, database.dbos) as own:  # an approver's own process, as it were
            approvals = own.recipe.approval_store
            while not done.is_set():
                for request in approvals.pending():  # decided at once, then woken: what
                    approvals.approve(request.id, approver="ops")  # Fleet.approve does, with
                    own.wake(request.session_id)  # no look at the session in between
                    approved.append(request.session_id)  # (its wake, if any, is enqueued)

    quick = threading.Thread(target=approver)
    quick.start()
    try:
        wait_until(lambda: len(approved) == len(ids) and unfinished(fleet) == 0 and all(
            store.read(s) and store.read(s)[-1].type in ("session.paused", "session.end")
            for s in ids), "every session's activations to end", 120)
    finally:
        done.set()
        quick.join(60)
    assert {s: fleet.status(s) for s in ids} == dict.fromkeys(ids, "finished")
    for session_id in ids:
        assert made(database, session_id) == [0, 1, 2]
        assert verify_chain(store.read(session_id)) is None
