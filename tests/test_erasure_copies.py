"""Forget me reaches every copy tether made: another user's session that recalled the erased
turns, its model requests and what its model repeated (its chain still verifying, an erasure
record listing what was removed), the SQLite file and its write-ahead log, and PostgreSQL's
relation files — read as bytes, not through SQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import Agent, ModelRequest, ReAct, ScriptedModel
from tether.journal.erasure import vouched
from tether.journal.tamper import diagnose
from tether.knowledge import ConversationStore
from tether.store.base import Store
from tether.store.postgres import PostgresStore
from tether.store.sqlite import SQLiteStore

from conftest import call

ASKED = "My passport is X9417-QZ and I fly to Reykjavik on the 3rd"
ANSWERED = "Noted: passport X9417-QZ, Reykjavik, the 3rd"
SECRETS = ("X9417-QZ", "Reykjavik")


def forms(text: str) -> list[bytes]:
    """How a text may be written in a store: raw, JSON-escaped, and JSON-escaped twice."""
    once = json.dumps(text)[1:-1]
    return [form.encode() for form in {text, once, json.dumps(once)[1:-1]}]


def holds(blob: bytes) -> list[str]:
    return [s for s in SECRETS if any(f in blob for f in forms(s))]


def ada_then_bob(store: Store) -> tuple[str, str]:
    """Ada tells the agent her passport; Bob, of the same tenant, recalls it across users and
    his model quotes her answer. Returns (ada's session, bob's)."""
    memory = ConversationStore(store)
    ada = Agent(model=ScriptedModel([ANSWERED]), reasoning=ReAct(), store=store)
    first = ada.run(ASKED, user_id="ada", tenant_id="acme", thread="trip").session_id

    def repeats(request: ModelRequest) -> Any:
        if request.messages[-1].role == "tool":
            return f"From an earlier conversation: {ANSWERED}"  # quoted whole
        return call("recall_conversations", {"query": "passport"})

    bob = Agent(model=ScriptedModel(repeats), reasoning=ReAct(),
                tools=[memory.recall_tool(scope="tenant")], store=store)
    second = bob.run("who flew where?", user_id="bob", tenant_id="acme", thread="mine")
    assert holds(json.dumps([e.data for e in store.read(second.session_id)]).encode())
    return first, second.session_id


def test_a_recalled_copy_in_another_users_session_is_erased(store: Store) -> None:
    ada, bob = ada_then_bob(store)
    memory = ConversationStore(store)
    erasure = memory.forget(tenant_id="acme", user_id="ada")
    assert erasure.sessions == (ada,) and erasure.copies == (bob,)
    events = store.read(bob)
    assert holds("".join(e.json_text for e in events).encode()) == []
    assert diagnose(bob, events, erased=vouched(events, store.read)) is None
    record = store.read(erasure.erasure_id or "")[0].data
    assert set(record["copies"]) == {bob}  # the record says where passages were removed
    # bob's own words stay, and his thread still continues from them
    assert events[0].data["task"] == "who flew where?"
    assert [t.user for t in memory.turns("mine", tenant_id="acme", user_id="bob")] == [
        "who flew where?"]
    # bob's session still loads, and what recall gives of it quotes nothing of ada's
    agent = Agent(model=ScriptedModel(["-"]), reasoning=ReAct(), store=store)
    assert agent.load(bob, accept_recipe_change=True).replay()  # the events, read back
    bob_turns = memory.search("conversation", tenant_id="acme", user_id="bob")
    assert bob_turns and not holds(json.dumps([r.to_dict() for r in bob_turns]).encode())


def test_copies_of_copies_are_found_and_an_edit_of_one_still_fails_verify(
        store: Store) -> None:
    _, bob = ada_then_bob(store)
    # bob's thread goes on (its start names his turn, which quoted ada's, by reference: it
    # holds no copy) and carol recalls bob's turn: she does not name ada's session, and
    # holds her words
    memory = ConversationStore(store)
    sent: list[str] = []

    def chatting(request: ModelRequest) -> str:
        sent.append(json.dumps([m.content for m in request.messages]))
        return "ok"

    chat = Agent(model=ScriptedModel(chatting), reasoning=ReAct(), store=store)
    later = chat.run("and then?", user_id="bob", tenant_id="acme", thread="mine").session_id
    assert holds(sent[-1].encode())  # shown bob's turn, whole
    assert holds("".join(e.json_text for e in store.read(later)).encode()) == []
    carol = Agent(model=ScriptedModel([call("recall_conversations", {"query": "conversation"}),
                                       "seen"]),
                  reasoning=ReAct(), tools=[memory.recall_tool(scope="tenant")], store=store)
    third = carol.run("anything?", user_id="carol", tenant_id="acme").session_id
    assert holds("".join(e.json_text for e in store.read(third)).encode())
    erasure = memory.forget(tenant_id="acme", user_id="ada")
    assert set(erasure.copies) == {bob, third}
    for sid in (bob, later, third):
        events = store.read(sid)
        assert holds("".join(e.json_text for e in events).encode()) == []
        assert diagnose(sid, events, erased=vouched(events, store.read)) is None
    # bob's thread still continues, and `later` still loads with the history it was shown:
    # bob's turn read from his rewritten journal (its kept text went with the erasure)
    assert chat.load(later).replay()
    chat.run("still there?", user_id="bob", tenant_id="acme", thread="mine")
    assert "who flew where?" in sent[-1] and holds(sent[-1].encode()) == []
    # the erased passage put back in the database: verify fails at that event
    events = store.read(third)
    [quoting] = [e for e in events if "[erased]" in e.json_text and e.type == "tool.result"]
    _put_back(store, third, quoting.seq, quoting.json_text.replace("[erased]", ASKED, 1))
    events = store.read(third)
    broken = diagnose(third, events, erased=vouched(events, store.read))
    assert broken is not None and broken.seq == quoting.seq and "edited since" in broken.detail


def _put_back(store: Store, session_id: str, seq: int, data: str) -> None:
    from test_erasure_seals import edit_stored

    edit_stored(store, session_id, seq, data=data)


def test_the_sqlite_files_hold_no_copy_after_an_erasure(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from tether.store import sqlite_open

    connect = sqlite3.connect

    def build_without_secure_delete(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        made = connect(*args, **kwargs)  # as SQLite builds other than Debian's open
        made.execute("PRAGMA secure_delete=OFF")
        return made

    monkeypatch.setattr(sqlite_open.sqlite3, "connect", build_without_secure_delete)
    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    other = SQLiteStore(path)  # another process's connection, idle: the WAL stays open
    try:
        ada_then_bob(store)
        ConversationStore(store).forget(tenant_id="acme", user_id="ada")
        for name in ("t.db", "t.db-wal"):
            file = tmp_path / name
            assert holds(file.read_bytes() if file.exists() else b"") == [], name
        assert other.sessions()  # the other connection reads on
    finally:
        other.close()
        store.close()


def _relation_bytes(store: PostgresStore, tables: tuple[str, ...]) -> bytes:
    """The files of ``tables`` (and their TOAST tables) as PostgreSQL wrote them to disk."""
    with store._pool.connection() as db:
        db.execute("CHECKPOINT")  # every dirty page written out
        blob = b""
        for table in tables:
            oid = db.execute("SELECT %s::regclass::oid", (f"{store.schema}.{table}",)
                             ).fetchone()[0]
            toast = db.execute("SELECT reltoastrelid FROM pg_class WHERE oid = %s",
                               (oid,)).fetchone()[0]
            for rel in (oid, toast):
                if not rel:
                    continue
                path = db.execute("SELECT pg_relation_filepath(%s)", (rel,)).fetchone()[0]
                segment = 0
                while True:
                    name = path if segment == 0 else f"{path}.{segment}"
                    exists = db.execute("SELECT (pg_stat_file(%s, true)).size", (name,)
                                        ).fetchone()[0]
                    if exists is None:
                        break
                    blob += bytes(db.execute("SELECT pg_read_binary_file(%s)", (name,)
                                             ).fetchone()[0])
                    segment += 1
    return blob


@pytest.fixture
def pg_as_superuser() -> Iterator[PostgresStore]:
    """A PostgreSQL store whose role may read the server's files (the bytes these tests look
    at); skipped (failed under CI) when it may not."""
    from conftest import postgres_store, unavailable

    store = postgres_store()
    assert isinstance(store, PostgresStore)
    try:
        with store._pool.connection() as db:
            if not db.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                              ).fetchone()[0]:
                unavailable("reading PostgreSQL's relation files needs a superuser")
        yield store
    finally:
        with store._pool.connection() as db:
            db.execute(f"DROP SCHEMA {store.schema} CASCADE")
        store.close()


def test_postgres_relation_files_hold_no_copy_after_an_erasure(
        pg_as_superuser: PostgresStore) -> None:
    store = pg_as_superuser
    ada_then_bob(store)
    tables = ("events", "approvals", "private_arguments")
    assert holds(_relation_bytes(store, tables))  # the test can see them
    erasure = ConversationStore(store).forget(tenant_id="acme", user_id="ada")
    blob = _relation_bytes(store, tables)
    if any("tether store purge" in left for left in erasure.left):
        return  # another process's transaction outlived the waits: said, as it must be
    assert holds(blob) == []
    assert any("write-ahead log" in left for left in erasure.left)  # what is not reached


def test_the_forget_command_says_what_it_erases_and_what_it_cannot_reach(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tether.cli import main

    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    ada_then_bob(store)
    store.close()
    who = ["--store", f"sqlite:///{path}", "--tenant", "acme", "--user", "ada"]
    assert main(["memory", "forget", *who]) == 0
    assert "(1 session(s), 1 thread(s)), and their turns where 1 other session(s) quote " \
        "them" in capsys.readouterr().out
    assert main(["memory", "forget", *who, "--yes"]) == 0
    out = capsys.readouterr().out
    assert "erased 4 events of 1 session(s), and their turns quoted in 4 events of 1 other " \
        "session(s)" in out and "not reached" not in out
    assert main(["audit", "verify", "--store", f"sqlite:///{path}"]) == 0


def test_a_postgres_transaction_older_than_the_erasure_is_said_then_purged(
        pg_as_superuser: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from tether.store import postgres_erasure

    from conftest import PG_URL

    store = pg_as_superuser
    real_waits = postgres_erasure.OLDER_WAIT, postgres_erasure.LOCK_WAIT
    monkeypatch.setattr(postgres_erasure, "OLDER_WAIT", 0.2)  # not the 30 s of a real wait
    monkeypatch.setattr(postgres_erasure, "LOCK_WAIT", 0.2)
    ada_then_bob(store)
    with psycopg.connect(PG_URL) as reader:  # a report that began before the erasure
        # a VACUUM that waited for this reader's lock would hang the test; past 30 s idle the
        # server ends the reader instead, and the assertions below say what went wrong
        reader.execute("SET idle_in_transaction_session_timeout = '30s'")
        reader.commit()
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute(f"SELECT count(*) FROM {store.schema}.events").fetchone()
        erasure = ConversationStore(store).forget(tenant_id="acme", user_id="ada")
        [older] = [left for left in erasure.left if "older than the erasure" in left]
        assert str(reader.info.backend_pid) in older and "tether store purge" in older
        # it reads the events table, so VACUUM FULL cannot lock it: said, not waited on
        assert any("VACUUM FULL of events could not take its lock" in left
                   for left in erasure.left)
        assert holds(_relation_bytes(store, ("events",)))  # it may still read them
        reader.rollback()
    # other processes' transactions come and go meanwhile (other tests): the real waits
    monkeypatch.setattr(postgres_erasure, "OLDER_WAIT", real_waits[0])
    monkeypatch.setattr(postgres_erasure, "LOCK_WAIT", real_waits[1])
    left = store.purge_erased()  # what `tether store purge` runs
    assert not any("tether store purge" in one for one in left)
    assert holds(_relation_bytes(store, ("events",))) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, 1000), field=st.sampled_from(["type", "timestamp", "data"]),
       text=st.text(min_size=1, max_size=8))
def test_any_edit_of_a_rewritten_event_fails_verify(which: int, field: str, text: str) -> None:
    from tether.store.memory import MemoryStore
    from tether.types import Event

    store = MemoryStore()
    ada, bob = ada_then_bob(store)
    erasure = ConversationStore(store).forget(tenant_id="acme", user_id="ada")
    rewritten = [(sid, e) for sid in (ada, bob) for e in store.read(sid)
                 if sid == ada or "[erased]" in e.json_text]
    assert len(rewritten) == erasure.events + erasure.copied_events
    sid, e = rewritten[which % len(rewritten)]
    data = e.json_text
    if field == "data":  # a character of the kept data changed, or something slipped in
        at = which % len(data)
        data = data[:at] + text + data[at + 1:] if data[at] != text else data[:-1] + \
            f',"x":{json.dumps(text)}}}'
    kind = e.type + text if field == "type" else e.type
    stamp = e.timestamp + len(text) if field == "timestamp" else e.timestamp
    if (kind, stamp, data) == (e.type, e.timestamp, e.json_text):
        return
    try:
        json.loads(data)
    except ValueError:
        data = json.dumps({**json.loads(e.json_text), "x": text})
    store._events[sid][e.seq - 1] = Event.from_json(e.seq, kind, sid, stamp, data,
                                                    e.prev_hash, e.hash)
    events = store.read(sid)
    assert diagnose(sid, events, erased=vouched(events, store.read)) is not None


def test_a_paused_session_that_quotes_the_user_loses_the_passages_in_its_approvals(
        store: Store) -> None:
    from tether import Budget, Decision, Effect, tool

    @tool(side_effect=True)
    def send_note(text: str) -> str:
        """Send a note."""
        return "sent"

    class AskFirst:
        inline = True

        def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
            if action.tool != "send_note":
                return Decision(Effect.ALLOW, "reads only", "ask")
            return Decision(Effect.REQUIRE_APPROVAL, f"send {action.arguments}?", "ask")

    memory = ConversationStore(store)
    Agent(model=ScriptedModel([ANSWERED]), reasoning=ReAct(), store=store).run(
        ASKED, user_id="ada", tenant_id="acme", thread="trip")

    def forwards(request: ModelRequest) -> Any:
        if request.messages[-1].role == "tool":
            return call("send_note", {"text": f"FYI {ANSWERED}"})
        return call("recall_conversations", {"query": "passport"})

    bob = Agent(model=ScriptedModel(forwards), reasoning=ReAct(), policy=AskFirst(),
                tools=[memory.recall_tool(scope="tenant"), send_note], store=store)
    paused = bob.run("tell the office", user_id="bob", tenant_id="acme",
                     budget=Budget(max_steps=4))
    assert paused.stop_reason.value == "needs_approval"
    assert holds(json.dumps(store.list_approvals(session_id=paused.session_id)).encode())
    erasure = memory.forget(tenant_id="acme", user_id="ada")
    assert erasure.copies == (paused.session_id,)
    [request] = store.list_approvals(session_id=paused.session_id)
    assert holds(json.dumps(request).encode()) == []
    assert request["arguments"] == {"text": "FYI [erased]"}  # bob's own words stay
    bob.load(paused.session_id)  # the paused session still loads: its chain verifies


def test_a_sqlite_reader_during_the_erasure_is_said_then_purged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    from tether.cli import main

    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        ada_then_bob(store)
        store._db.execute("PRAGMA busy_timeout=100")  # not the 30 s a real reader gets
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchone()  # a snapshot, held
        erasure = ConversationStore(store).forget(tenant_id="acme", user_id="ada")
        [left] = erasure.left
        assert "-wal still holds" in left and "tether store purge" in left
        assert holds((tmp_path / "t.db-wal").read_bytes())
        reader.execute("ROLLBACK")
        assert main(["store", "purge", "--store", f"sqlite:///{path}"]) == 0
        assert "not reached" not in capsys.readouterr().out
        wal = tmp_path / "t.db-wal"
        assert holds(wal.read_bytes() if wal.exists() else b"") == []
    finally:
        reader.close()
        store.close()
