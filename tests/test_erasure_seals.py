"""What an erasure keeps is sealed: every field of an erased event and of its erasure record that
a verify or a store reads (the former type, the start's tenant and agent, the timestamp, the
marker's record) fails ``tether audit verify`` when edited in the database, on every store; and
the erasure empties what the session's approval requests and its start said of the user."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether import Agent, Budget, Decision, Effect, ReAct, ScriptedModel, tool
from tether.journal.erasure import is_erased, vouched
from tether.journal.tamper import diagnose
from tether.knowledge import ConversationStore
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.postgres import PostgresStore
from tether.store.sqlite import SQLiteStore
from tether.types import Event

from conftest import call

PASSPORT = "passport X1234567 of Ada Lovelace"


def edit_stored(store: Store, session_id: str, seq: int, *, type: str | None = None,
                ts: float | None = None, data: str | None = None) -> None:
    """Change one stored event's columns in the database, as someone with write access would."""
    before = store.read(session_id)[seq - 1]
    type_, ts_ = type or before.type, before.timestamp if ts is None else ts
    data_ = before.json_text if data is None else data
    if isinstance(store, MemoryStore):
        store._events[session_id][seq - 1] = Event.from_json(
            seq, type_, session_id, ts_, data_, before.prev_hash, before.hash)
    elif isinstance(store, SQLiteStore):
        store._db.execute("UPDATE events SET type = ?, ts = ?, data = ? WHERE seq = ? AND "
                          "session_key = (SELECT key FROM sessions WHERE session_id = ?)",
                          (type_, ts_, data_, seq, session_id))
    else:
        assert isinstance(store, PostgresStore)
        with store._pool.connection() as db:
            db.execute(f"UPDATE {store.schema}.events SET type = %s, ts = %s, data = %s "
                       "WHERE session_id = %s AND seq = %s", (type_, ts_, data_, session_id, seq))


def finding(store: Store, session_id: str) -> Any:
    events = store.read(session_id)
    return diagnose(session_id, events, erased=vouched(events, store.read))


def erased_ada(store: Store) -> tuple[str, str]:
    """One session of ada in acme, erased; its id and the erasure record's."""
    agent = Agent(model=ScriptedModel(lambda r: "noted"), reasoning=ReAct(), store=store)
    sid = agent.run(PASSPORT, user_id="ada", tenant_id="acme", thread="t").session_id
    erasure = ConversationStore(store).forget(tenant_id="acme", user_id="ada")
    assert erasure.erasure_id is not None and finding(store, sid) is None
    return sid, erasure.erasure_id


def _marker(store: Store, session_id: str, seq: int) -> dict[str, Any]:
    return dict(json.loads(store.read(session_id)[seq - 1].json_text))


EDITS = ["former_type", "tenant", "agent", "timestamp", "type_column", "extra_field"]


@pytest.mark.parametrize("edit", EDITS)
def test_every_field_of_an_erased_event_is_covered(store: Store, edit: str) -> None:
    sid, _ = erased_ada(store)
    start = _marker(store, sid, 1)
    last = len(store.read(sid))
    if edit == "former_type":  # a session.end made to look like a pause
        end = _marker(store, sid, last)
        edit_stored(store, sid, last, data=json.dumps({**end, "type": "session.paused"}))
    elif edit == "tenant":  # the erased start moved to another tenant
        edit_stored(store, sid, 1, data=json.dumps(
            {**start, "subject": {"tenant_id": "globex"}}))
    elif edit == "agent":
        edit_stored(store, sid, 1, data=json.dumps({**start, "agent": "someone-else"}))
    elif edit == "timestamp":
        edit_stored(store, sid, 1, ts=store.read(sid)[0].timestamp - 86400.0)
    elif edit == "type_column":  # the marker's event type changed back
        edit_stored(store, sid, 1, type="session.start")
    else:  # something slipped into the marker
        edit_stored(store, sid, 1, data=json.dumps({**start, "note": "planted"}))
    broken = finding(store, sid)
    assert broken is not None, edit
    assert broken.seq == (last if edit == "former_type" else 1)


RECORD_EDITS = ["reason", "user", "timestamp", "listing"]


@pytest.mark.parametrize("edit", RECORD_EDITS)
def test_every_field_of_the_erasure_record_is_covered(store: Store, edit: str) -> None:
    sid, record_id = erased_ada(store)
    record = _marker(store, record_id, 1)
    if edit == "reason":
        edit_stored(store, record_id, 1, data=json.dumps({**record, "reason": "edited"}))
    elif edit == "user":
        edit_stored(store, record_id, 1, data=json.dumps(
            {**record, "subject": {**record["subject"], "user_id": "bob"}}))
    elif edit == "timestamp":
        edit_stored(store, record_id, 1, ts=store.read(record_id)[0].timestamp + 1.0)
    else:  # the record made to vouch for nothing of this session
        edit_stored(store, record_id, 1, data=json.dumps({**record, "sessions": {}}))
    assert finding(store, record_id) is not None or edit == "listing"
    assert finding(store, sid) is not None, edit


def test_a_tenant_moved_in_the_database_fails_the_cli_verify(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tether.cli import main

    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    sid, _ = erased_ada(store)
    url = f"sqlite:///{path}"
    assert main(["audit", "verify", "--store", url]) == 0
    capsys.readouterr()
    start = _marker(store, sid, 1)
    edit_stored(store, sid, 1, data=json.dumps({**start, "subject": {"tenant_id": "globex"}}))
    store.close()
    assert main(["audit", "verify", "--store", url]) != 0
    out = capsys.readouterr().out
    assert f"BROKEN  {sid}  seq 1" in out and "marker" in out


@tool(side_effect=True)
def send_passport(to: str, number: str) -> str:
    """Send a passport number."""
    return f"sent {number} to {to}"


class AskFirst:
    inline = True

    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, f"check {action.arguments}", "ask")


def test_erasure_empties_approval_requests_and_the_starts_user(store: Store) -> None:
    agent = Agent(model=ScriptedModel([call("send_passport", {"to": "embassy",
                                                              "number": "X1234567"}), "sent"]),
                  reasoning=ReAct(), tools=[send_passport], policy=AskFirst(), store=store)
    paused = agent.run(PASSPORT, user_id="ada", tenant_id="acme", roles=["traveller"],
                       budget=Budget(max_steps=4))
    assert paused.stop_reason.value == "needs_approval"
    [request] = store.list_approvals(session_id=paused.session_id)
    assert "X1234567" in json.dumps(request)
    # an approver decides while the erasure runs: the arguments go all the same
    real = store.list_approvals

    def decided_meanwhile(**kwargs: Any) -> list[dict[str, Any]]:
        found = real(**kwargs)
        store.update_approval(request["id"], "pending", {"status": "denied", "approver": "ops",
                                                         "note": "no", "decided_at": 1.0})
        return found

    store.list_approvals = decided_meanwhile  # type: ignore[method-assign]
    try:
        ConversationStore(store).forget(tenant_id="acme", user_id="ada")
    finally:
        store.list_approvals = real  # type: ignore[method-assign]
    [after] = store.list_approvals(session_id=paused.session_id)
    assert after["arguments"] == {} and "X1234567" not in json.dumps(after)
    assert after["status"] == "denied"  # the decision stays, anchored
    start = store.read(paused.session_id)[0]
    assert is_erased(start)
    assert start.data["subject"] == {"tenant_id": "acme"}  # no user id, no roles
    # as JSON strings: a random id's hex may hold the letters ("...5b27c8bada26...")
    assert '"ada"' not in start.json_text and '"traveller"' not in start.json_text
