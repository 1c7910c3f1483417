"""The agent a fleet's tests run in worker processes, and the ledger that proves each effect once.

``build()`` is the fleet's agent factory (``fleet_app:build``): its store and its ledger come
from the environment every worker inherits (``FLEET_TEST_STORE``, ``FLEET_TEST_LEDGER``). A
session's task says how many effects it makes (``record 10 effects``); each is one call of the
side-effecting ``record`` tool, which inserts (session, n) into the ledger under a unique
constraint: an effect made twice fails loudly instead of being counted once. A task containing
``approve`` needs a person's approval for effect 1. With ``FLEET_TEST_HANG`` naming a file that
does not exist yet, effect 1 creates it once made and never returns: the process is to be killed
there, between an effect and its journaled result. ``FLEET_TEST_SLOW`` (seconds) makes every
effect's result take that long after the effect is made. With ``FLEET_TEST_GATE`` naming a file,
a task containing ``held`` asks for its third effect only once that file exists (the session
stays running, its model call in flight, until the test opens the gate). With
``FLEET_TEST_PAUSE_GATE`` naming a file, a session's approval request, once stored, writes
``<file>.requested`` and the session goes no further (it has not journaled its pause yet) until
that file exists: the test decides the request in between, as an approver who is quick would.

``python tests/fleet_app.py activate SESSION TASK`` runs one fleet activation of that session.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

from tether import (
    Agent,
    Decision,
    Effect,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import ApprovalRequest, StoredApprovals
from tether.store.opening import open_store

LEDGER_TABLE = "fleet_ledger"


def connect(url: str) -> Any:
    """A connection to the ledger (``sqlite:///path`` or a PostgreSQL URL), autocommitting."""
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db
    import psycopg

    return psycopg.connect(url, autocommit=True)


def create_ledger(url: str) -> None:
    db = connect(url)
    try:
        db.execute(f"CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (session TEXT NOT NULL, "
                   "n INTEGER NOT NULL, worker INTEGER NOT NULL, UNIQUE (session, n))")
    finally:
        db.close()


def ledger_rows(url: str) -> list[tuple[str, int]]:
    db = connect(url)
    try:
        rows = db.execute(f"SELECT session, n FROM {LEDGER_TABLE}").fetchall()
    finally:
        db.close()
    return [(str(s), int(n)) for s, n in rows]


def ledger_workers(url: str) -> dict[str, dict[int, int]]:
    """Each session's effects, counted by the process (pid) that made them."""
    db = connect(url)
    try:
        rows = db.execute(f"SELECT session, worker FROM {LEDGER_TABLE}").fetchall()
    finally:
        db.close()
    made: dict[str, dict[int, int]] = {}
    for session, worker in rows:
        by_pid = made.setdefault(str(session), {})
        by_pid[int(worker)] = by_pid.get(int(worker), 0) + 1
    return made


def effects_wanted(task: str) -> int:
    found = re.search(r"record (\d+) effects", task)
    return int(found.group(1)) if found else 0


def build() -> Agent:
    ledger = os.environ["FLEET_TEST_LEDGER"]
    marker = ("?" if ledger.startswith("sqlite") else "%s")

    @tool(side_effect=True)
    def record(n: int, session_id: str) -> str:
        """Record effect n of this session in the ledger (once: a second time fails)."""
        db = connect(ledger)
        try:
            db.execute(f"INSERT INTO {LEDGER_TABLE} (session, n, worker) VALUES "
                       f"({marker}, {marker}, {marker})", (session_id, n, os.getpid()))
        finally:
            db.close()
        threading.Event().wait(float(os.environ.get("FLEET_TEST_SLOW", "0")))  # slow to answer
        hang = os.environ.get("FLEET_TEST_HANG")
        if hang and n == 1 and not Path(hang).exists():
            Path(hang).write_text(session_id)
            threading.Event().wait()  # killed here: the effect is made, its result never comes
        return f"recorded effect {n}"

    def respond(request: ModelRequest) -> ModelResponse | str:
        task = next(m.content for m in request.messages if m.role == "user")
        done = sum(1 for m in request.messages if m.role == "tool")
        gate = os.environ.get("FLEET_TEST_GATE")
        if gate and done == 2 and "held" in str(task):
            while not Path(gate).exists():  # the test opens the gate: an event, not a delay
                threading.Event().wait(0.02)
        if done < effects_wanted(str(task)):
            return ModelResponse(tool_calls=(ToolCall(f"c{done}", "record", {"n": done}),))
        return f"recorded {done} effects"

    class ApproveWhenAsked:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if "approve" in context.request and action.arguments.get("n") == 1:
                return Decision(Effect.REQUIRE_APPROVAL, "effect 1 needs a person", "fleet")
            return Decision(Effect.ALLOW, "ok", "fleet")

    store = open_store(os.environ["FLEET_TEST_STORE"])
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[record],
                 policy=ApproveWhenAsked(), store=store, approvals=HeldAtTheRequest(store),
                 name="fleet")


class HeldAtTheRequest(StoredApprovals):
    """The store's approvals; with ``FLEET_TEST_PAUSE_GATE`` set, a request once stored holds
    its session (before its pause is journaled) until the gate file exists."""

    def add(self, request: ApprovalRequest) -> None:
        super().add(request)
        gate = os.environ.get("FLEET_TEST_PAUSE_GATE")
        if gate:
            Path(f"{gate}.requested").write_text(request.id)
            while not Path(gate).exists():  # the test opens the gate: an event, not a delay
                threading.Event().wait(0.02)


if __name__ == "__main__":
    from tether.durable.activation import activate

    command, session_id, task = sys.argv[1:4]
    assert command == "activate"
    print(activate(build(), session_id, task), flush=True)
