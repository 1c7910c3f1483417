"""Forget me: a user's content is erased from every journal, the chains still verify, and any
other edit — before or after the erasure, of a session or of the erasure record — still fails."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import Agent, ReAct, ScriptedModel, tool
from tether.journal.chain import verify_chain
from tether.journal.erasure import ErasureRefused, erase_sessions, is_erased, vouched
from tether.journal.tamper import diagnose
from tether.knowledge import ConversationStore
from tether.store.anchor_chain import ERASED_TYPE
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.types import Event

from conftest import call

SECRET_WORDS = "my passport number is X1234567"


@tool
def save_note(text: str) -> str:
    """Save a note."""
    return f"saved {text}"


def populate(store: Store) -> dict[str, list[str]]:
    """Sessions of u1 (two on a thread, one not), u2 of the same tenant, and u1 of another."""
    agent = Agent(model=ScriptedModel([call("save_note", {"text": SECRET_WORDS}), "noted"]),
                  reasoning=ReAct(), tools=[save_note], store=store)
    chat = Agent(model=ScriptedModel(lambda r: "I remember"), reasoning=ReAct(), store=store)
    ids: dict[str, list[str]] = {"u1": [], "u2": [], "other": []}
    ids["u1"].append(agent.run(SECRET_WORDS, user_id="u1", tenant_id="acme",
                               thread="t").session_id)
    ids["u1"].append(chat.run("do you remember?", user_id="u1", tenant_id="acme",
                              thread="t").session_id)
    ids["u1"].append(chat.run(f"off-thread: {SECRET_WORDS}", user_id="u1",
                              tenant_id="acme").session_id)
    ids["u2"].append(chat.run(f"u2 says {SECRET_WORDS}", user_id="u2", tenant_id="acme",
                              thread="t").session_id)
    ids["other"].append(chat.run(f"other says {SECRET_WORDS}", user_id="u1",
                                 tenant_id="globex", thread="t").session_id)
    return ids


def findings(store: Store, session_id: str) -> object:
    events = store.read(session_id)
    return diagnose(session_id, events, erased=vouched(events, store.read))


def test_forget_erases_the_users_content_and_every_chain_still_verifies(store: Store) -> None:
    ids = populate(store)
    memory = ConversationStore(store)
    erasure = memory.forget(tenant_id="acme", user_id="u1")
    assert set(erasure.sessions) == set(ids["u1"]) and erasure.erasure_id is not None
    for sid in ids["u1"]:
        events = store.read(sid)
        assert events and all(is_erased(e) for e in events)
        assert SECRET_WORDS not in json.dumps([e.data for e in events])
        assert findings(store, sid) is None  # verify passes after the erasure
    for sid in ids["u2"] + ids["other"]:  # another user, another tenant: untouched
        assert SECRET_WORDS in store.read(sid)[0].data["task"]
        assert findings(store, sid) is None
    record = store.read(erasure.erasure_id)
    assert verify_chain(record) is None and record[0].data["subject"] == {
        "tenant_id": "acme", "user_id": "u1"}
    assert SECRET_WORDS not in record[0].json_text  # the record says what, never the content
    assert memory.threads(tenant_id="acme", user_id="u1") == []
    assert [t.user for t in memory.turns("t", tenant_id="acme", user_id="u2")] == [
        f"u2 says {SECRET_WORDS}"]
    # the erased session cannot be loaded, and a new thread of u1 starts afresh
    agent = Agent(model=ScriptedModel(lambda r: str(len(r.messages))), reasoning=ReAct(),
                  store=store)
    with pytest.raises(LookupError, match="erased"):
        agent.load(ids["u1"][0])
    assert agent.run("hello", user_id="u1", tenant_id="acme", thread="t").answer == "2"
    assert memory.forget(tenant_id="acme", user_id="nobody").sessions == ()


def _rewrite(store: MemoryStore, session_id: str, seq: int,
             change: Callable[[Event], Event]) -> None:
    events = store._events[session_id]
    events[seq - 1] = change(events[seq - 1])


def _event(e: Event, *, type: str | None = None, data: str | None = None,
           digest: str | None = None) -> Event:
    return Event.from_json(e.seq, type or e.type, e.session_id, e.timestamp,
                           e.json_text if data is None else data, e.prev_hash,
                           e.hash if digest is None else digest)


EDITS = ["content", "fake_erased", "fake_record", "record_listing", "record_deleted",
         "erased_hash", "erased_again_other_event"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit=st.sampled_from(EDITS), which=st.integers(0, 100))
def test_after_an_erasure_any_other_edit_still_fails_verify(edit: str, which: int) -> None:
    store = MemoryStore()
    ids = populate(store)
    erasure = ConversationStore(store).forget(tenant_id="acme", user_id="u1")
    assert erasure.erasure_id is not None
    kept = ids["u2"][0]
    erased = ids["u1"][which % len(ids["u1"])]
    kept_seq = 1 + which % len(store.read(kept))
    erased_seq = 1 + which % len(store.read(erased))
    target = kept
    if edit == "content":  # an event left alone by the erasure, edited
        _rewrite(store, kept, kept_seq, lambda e: _event(
            e, data=e.json_text.replace("u", "v", 1) if "u" in e.json_text else '{"x":1}'))
    elif edit == "fake_erased":  # content removed outside tether, citing the real record
        _rewrite(store, kept, kept_seq, lambda e: _event(
            e, type=ERASED_TYPE, data=json.dumps({"erasure": erasure.erasure_id,
                                                  "type": e.type})))
    elif edit == "fake_record":  # ... citing a record that does not exist
        _rewrite(store, kept, kept_seq, lambda e: _event(
            e, type=ERASED_TYPE, data=json.dumps({"erasure": "erasure-forged", "type": e.type})))
    elif edit == "record_listing":  # the record edited to vouch for more
        target = erased
        _rewrite(store, erasure.erasure_id, 1, lambda e: _event(
            e, data=e.json_text.replace('"reason":"', '"reason":"(edited) ')))
    elif edit == "record_deleted":
        target = erased
        del store._events[erasure.erasure_id]
    elif edit == "erased_hash":  # an erased event's kept hash changed
        target = erased
        _rewrite(store, erased, erased_seq, lambda e: _event(e, digest="0" * 64))
    else:  # an erased event's marker pointed at nothing
        target = erased
        _rewrite(store, erased, erased_seq, lambda e: _event(
            e, data=json.dumps({"erasure": "erasure-other", "type": "x"})))
    assert findings(store, target) is not None, edit


def test_a_running_or_tampered_session_is_not_erased(store: Store) -> None:
    ids = populate(store)
    busy = ids["u1"][1]
    store.acquire(busy, "another-worker:4242@elsewhere", 60.0)
    memory = ConversationStore(store)
    with pytest.raises(ErasureRefused, match="nothing was erased"):
        memory.forget(tenant_id="acme", user_id="u1")
    assert not any(is_erased(e) for sid in ids["u1"] for e in store.read(sid))
    if isinstance(store, MemoryStore):  # an edited journal: erasing it would hide the edit
        _rewrite(store, ids["u2"][0], 1, lambda e: _event(
            e, data=e.json_text.replace("u2 says", "u2 said")))
        with pytest.raises(ErasureRefused, match="does not verify"):
            erase_sessions(store, ids["u2"], subject={"tenant_id": "acme"}, reason="test")
        assert not any(is_erased(e) for e in store.read(ids["u2"][0]))


def test_an_erasure_cut_short_is_finished_by_running_it_again() -> None:
    store = MemoryStore()
    ids = populate(store)
    real = store.erase
    calls = []

    def dies_on_the_second(session_id: str, erased: object, **options: bool) -> None:
        calls.append(session_id)
        if len(calls) == 2:
            raise RuntimeError("killed")
        real(session_id, erased, **options)  # type: ignore[arg-type]

    store.erase = dies_on_the_second  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="killed"):
        ConversationStore(store).forget(tenant_id="acme", user_id="u1")
    for sid in ids["u1"]:  # half done: every chain verifies (the record vouches for what went)
        assert findings(store, sid) is None
    store.erase = real  # type: ignore[method-assign]
    again = ConversationStore(store).forget(tenant_id="acme", user_id="u1")
    assert again.erasure_id is not None and len(again.sessions) == 2
    for sid in ids["u1"]:
        assert all(is_erased(e) for e in store.read(sid)) and findings(store, sid) is None


def test_audit_verify_passes_after_an_erasure_and_fails_after_an_edit(tmp_path,
                                                                      capsys) -> None:  # type: ignore[no-untyped-def]
    from tether.cli import main
    from tether.store.sqlite import SQLiteStore

    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    ids = populate(store)
    ConversationStore(store).forget(tenant_id="acme", user_id="u1")
    store.close()
    url = f"sqlite:///{path}"
    assert main(["audit", "verify", "--store", url]) == 0, capsys.readouterr().out
    raw = SQLiteStore(path)
    raw._db.execute("UPDATE events SET data = replace(data, 'u2 says', 'u2 said')")
    raw._db.commit()
    raw.close()
    assert main(["audit", "verify", "--store", url]) != 0
    out = capsys.readouterr().out
    assert ids["u2"][0] in out and "BROKEN" in out


def test_the_memory_commands_list_search_and_forget(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tether.cli import main
    from tether.store.sqlite import SQLiteStore

    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    populate(store)
    store.close()
    url = ["--store", f"sqlite:///{path}", "--tenant", "acme", "--user", "u1"]
    assert main(["memory", "threads", *url]) == 0
    out = capsys.readouterr().out
    assert "thread t: 2 session(s)" in out and "passport" in out
    assert main(["memory", "search", "passport", *url]) == 0
    assert "thread t turn 1" in capsys.readouterr().out
    assert main(["memory", "forget", *url]) == 0  # without --yes: says what would go
    assert "would erase" in capsys.readouterr().out
    assert main(["memory", "threads", *url]) == 0
    capsys.readouterr()
    assert main(["memory", "forget", *url, "--yes"]) == 0
    assert "erasure record erasure-" in capsys.readouterr().out
    assert main(["memory", "threads", *url]) == 1
    assert main(["memory", "search", "passport", *url]) == 1
    assert main(["audit", "verify", "--store", f"sqlite:///{path}"]) == 0
    other = ["--store", f"sqlite:///{path}", "--tenant", "acme", "--user", "u2"]
    capsys.readouterr()
    assert main(["memory", "threads", *other]) == 0 and "u2 says" in capsys.readouterr().out
