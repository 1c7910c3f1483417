"""One contract, three stores: memory, SQLite and PostgreSQL behave the same."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

from tether.journal.chain import GENESIS, Journal, verify_chain
from tether.store.base import ConflictError, SchemaError, Store, StoreError
from tether.store.memory import MemoryStore
from tether.store.opening import open_store
from tether.store.sqlite import SQLiteStore

from conftest import PG_URL, postgres_store


def journal_of(session_id: str, n: int, store: Store | None = None,
               tenant: str = "acme") -> Journal:
    journal = Journal(session_id, store=store)
    journal.append("session.start", {"task": "t", "agent": "a",
                                     "subject": {"tenant_id": tenant, "user_id": "u",
                                                 "roles": []}})
    for i in range(n):
        journal.append("step", {"i": i, "text": f"event {i} ünïcode"})
    return journal


def test_append_read_round_trip_keeps_the_chain(store: Store) -> None:
    journal = journal_of("s1", 5, store)
    journal.flush()
    stored = store.read("s1")
    assert stored == journal.events()
    assert verify_chain(stored) is None
    assert stored[0].prev_hash == GENESIS
    assert store.read("s1", after_seq=4) == stored[4:]
    assert store.read("nope") == []


def test_a_long_unflushed_stretch_is_appended_whole(store: Store) -> None:
    journal = journal_of("long", 1200, store)  # more events than one SQL statement takes
    journal.flush()
    stored = store.read("long")
    assert stored == journal.events() and verify_chain(stored) is None
    assert [i.events for i in store.sessions()] == [1201]


def test_appends_are_per_step_and_must_follow(store: Store) -> None:
    journal = journal_of("s1", 2, store)
    journal.flush()
    journal.append("step", {"i": 99})
    journal.flush()
    assert [e.seq for e in store.read("s1")] == [1, 2, 3, 4]
    # a second writer that has not seen seq 4 cannot append its own seq 4
    rival = Journal("s1", store=store, history=store.read("s1")[:3])
    rival.append("step", {"rival": True})
    with pytest.raises(ConflictError, match="expected seq 5"):
        rival.flush()
    assert [e.data for e in store.read("s1")][-1] == {"i": 99}


def test_a_second_start_and_a_gap_are_refused(store: Store) -> None:
    journal_of("s1", 2, store).flush()
    again = Journal("s1", store=store)  # a writer that believes the session is new
    again.append("session.start", {"agent": "b"})
    with pytest.raises(ConflictError, match="expected seq 4, got 1"):
        again.flush()
    ahead = Journal("s1", store=store, history=store.read("s1"))
    ahead.append("step", {"i": 1})
    events = ahead.events()
    with pytest.raises(ConflictError, match="expected seq 4, got 5"):
        store.append("s1", [dataclasses.replace(events[-1], seq=5)])
    assert [e.seq for e in store.read("s1")] == [1, 2, 3]


def test_private_arguments_are_kept_apart_and_go_with_their_session(store: Store) -> None:
    journal_of("s1", 1, store).flush()
    assert store.get_private("s1", "c1") is None
    store.put_private("s1", "c1", {"account": "ACCT-1", "amount": 250})
    store.put_private("s1", "c1", {"account": "ACCT-2", "amount": 250})  # decided again
    store.put_private("s1", "c2", {"card": "4111"})
    assert store.get_private("s1", "c1") == {"account": "ACCT-2", "amount": 250}
    assert not any("ACCT" in json.dumps(e.data) for e in store.read("s1"))  # not the journal
    store.drop_private("s1")
    assert store.get_private("s1", "c1") is None and store.get_private("s1", "c2") is None
    store.put_private("s1", "c3", {"card": "4111"})
    assert store.prune(before=time.time() + 1) == 1
    assert store.get_private("s1", "c3") is None


def test_concurrent_writers_never_fork_a_session(store: Store) -> None:
    base = journal_of("race", 1, store)
    base.flush()
    history = store.read("race")
    outcomes: list[str] = []

    def writer(n: int) -> None:
        journal = Journal("race", store=store, history=history)
        journal.append("step", {"writer": n})
        try:
            journal.flush()
            outcomes.append("won")
        except ConflictError:
            outcomes.append("lost")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    assert verify_chain(store.read("race")) is None and len(store.read("race")) == 3


def test_sessions_listing_and_prune_remove_whole_sessions(store: Store) -> None:
    journal_of("old", 2, store, tenant="a").flush()
    time.sleep(0.02)
    cut = time.time()
    time.sleep(0.02)
    journal_of("new", 3, store, tenant="b").flush()
    infos = {i.session_id: i for i in store.sessions()}
    assert set(infos) == {"old", "new"}
    assert infos["new"].events == 4 and infos["new"].tenant_id == "b"
    assert infos["new"].agent == "a" and infos["new"].status == "open"
    assert [i.session_id for i in store.sessions(since=cut)] == ["new"]
    assert store.prune(before=cut) == 1
    assert store.read("old") == [] and verify_chain(store.read("new")) is None
    assert [i.session_id for i in store.sessions()] == ["new"]


def test_approvals_compare_and_set(store: Store) -> None:
    record = {"id": "apr_1", "session_id": "s1", "status": "pending", "tool": "pay"}
    store.put_approval(record)
    with pytest.raises(ConflictError):
        store.put_approval(record)
    assert store.get_approval("apr_1") == record
    assert [r["id"] for r in store.list_approvals(status="pending")] == ["apr_1"]
    assert store.list_approvals(status="pending", session_id="other") == []
    assert store.update_approval("apr_1", "pending", {"status": "approved", "approver": "al"})
    assert not store.update_approval("apr_1", "pending", {"status": "denied"})
    assert store.get_approval("apr_1") == {**record, "status": "approved", "approver": "al"}
    assert store.get_approval("missing") is None


def test_open_store_by_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    sqlite = open_store(f"sqlite:///{tmp_path}/x.db")
    assert isinstance(sqlite, SQLiteStore) and sqlite.path == f"{tmp_path}/x.db"
    monkeypatch.setenv("TETHER_STORE", f"sqlite:///{tmp_path}/env.db")
    assert isinstance(open_store(), SQLiteStore)
    with pytest.raises(StoreError, match="unknown store URL"):
        open_store("mongodb://nope")


def test_a_newer_sqlite_schema_is_refused(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.db").close()
    import sqlite3

    db = sqlite3.connect(tmp_path / "s.db")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(SchemaError, match="newer than this tether"):
        SQLiteStore(tmp_path / "s.db")


def test_a_version_1_sqlite_file_is_migrated_with_its_sessions_intact(tmp_path: Path) -> None:
    import sqlite3

    from tether.store.sqlite import MIGRATIONS, SCHEMA_VERSION

    path = tmp_path / "v1.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.executescript(MIGRATIONS[1])
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    events = journal_of("old", 3, tenant="t1").events()
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(e.session_id, e.seq, e.type, e.timestamp, json.dumps(e.data), e.prev_hash,
                     e.hash) for e in events])
    db.execute("INSERT INTO sessions VALUES ('old', 't1', 'a', ?, ?, 4, 'step')",
               (events[0].timestamp, events[-1].timestamp))
    orphan = journal_of("orphan", 1).events()  # events whose sessions row went missing
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(e.session_id, e.seq, e.type, e.timestamp, json.dumps(e.data), e.prev_hash,
                     e.hash) for e in orphan])
    db.close()

    store = SQLiteStore(path)
    try:
        assert store.read("old") == events and verify_chain(store.read("old")) is None
        assert [(i.session_id, i.events, i.tenant_id) for i in store.sessions()] == [
            ("old", 4, "t1"), ("orphan", 2, None)]
        assert store.read("orphan") == orphan  # kept: a migration loses nothing
        more = Journal("old", store=store, history=store.read("old"))
        more.append("step", {"i": "after the upgrade"})
        more.flush()
        assert verify_chain(store.read("old")) is None and len(store.read("old")) == 5
        rival = Journal("old", store=store, history=events)
        rival.append("step", {"rival": True})
        with pytest.raises(ConflictError, match="expected seq 6"):
            rival.flush()
        version = store._db.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_a_session_pruned_and_begun_anew_elsewhere_is_appended_to_where_it_now_is(
        tmp_path: Path) -> None:
    """A SQLite store remembers each session's key; when another process has pruned the session
    and started it afresh, the remembered key is stale: the append goes to the session as it is
    now (or is refused as a conflict if it moved on), never to the key remembered."""
    path = tmp_path / "s.db"
    mine, theirs = SQLiteStore(path), SQLiteStore(path)
    try:
        journal_of("s", 1, mine).flush()
        assert theirs.prune(before=time.time() + 1) == 1
        again = journal_of("s", 1, theirs)
        again.flush()
        more = Journal("s", store=mine, history=again.events())
        more.append("step", {"i": "after the restart"})
        more.flush()
        assert [e.seq for e in theirs.read("s")] == [1, 2, 3]
        assert verify_chain(theirs.read("s")) is None
        late = Journal("s", store=mine, history=again.events())
        late.append("step", {"i": "a rival"})
        with pytest.raises(ConflictError, match="expected seq 4, got 3"):
            late.flush()
    finally:
        mine.close()
        theirs.close()


def test_an_older_tether_still_writing_to_an_upgraded_file_is_refused(tmp_path: Path) -> None:
    """A process started before the upgrade appends the way schema 3 did (session id first):
    the row is refused, not filed under no session."""
    import sqlite3

    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    old = journal_of("s", 1).events()
    db = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (old[0].session_id, 1, old[0].type, old[0].timestamp,
                    json.dumps(old[0].data), old[0].prev_hash, old[0].hash))
    db.close()


def test_a_newer_postgres_schema_is_refused() -> None:
    store = postgres_store()
    from tether.store.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    try:
        with store._pool.connection() as db:
            db.execute(f"UPDATE {store.schema}.meta SET value = '99'")
        with pytest.raises(SchemaError, match="newer than this tether"):
            PostgresStore(PG_URL, schema=store.schema)
    finally:
        with store._pool.connection() as db:
            db.execute(f"DROP SCHEMA {store.schema} CASCADE")
        store.close()


# -- leases: one worker writes a running session ------------------------------------------------

def test_a_lease_is_taken_by_the_first_append_and_fences_every_later_one(store: Store) -> None:
    from tether.store.base import Lease, SessionBusy

    mine = Lease("elsewhere:1:a", 1, 60.0)
    journal = journal_of("leased", 2, store)
    journal.lease = mine
    journal.flush()
    with pytest.raises(SessionBusy, match="is running in elsewhere:1:a") as busy:
        store.acquire("leased", "elsewhere:2:b", 60.0)
    assert busy.value.holder == "elsewhere:1:a" and busy.value.expires_at > time.time() + 50
    store.release("leased", mine)
    theirs = store.acquire("leased", "elsewhere:2:b", 60.0)
    assert theirs.token == 2
    journal.append("step", {"late": True})  # the first worker, unaware it lost the session
    with pytest.raises(SessionBusy, match="taken over by elsewhere:2:b"):
        journal.flush()
    with pytest.raises(SessionBusy):
        store.renew("leased", mine)
    store.renew("leased", theirs)
    rival = Journal("leased", store=store, history=store.read("leased"))
    rival.lease = theirs
    rival.append("step", {"new holder": True})
    rival.flush()
    assert [e.data.get("new holder") for e in store.read("leased")][-1] is True
    with pytest.raises(LookupError):
        store.acquire("no-such-session", "elsewhere:2:b", 60.0)


def test_an_expired_lease_or_a_dead_local_holder_can_be_taken_over(store: Store) -> None:
    import os
    import socket
    import subprocess
    import sys

    from tether.store.base import Lease, SessionBusy

    journal = journal_of("lapsing", 1, store)
    journal.lease = Lease("elsewhere:1:a", 1, 0.3)
    journal.flush()
    with pytest.raises(SessionBusy):
        store.acquire("lapsing", "elsewhere:2:b", 60.0)
    time.sleep(0.4)
    assert store.acquire("lapsing", "elsewhere:2:b", 60.0).token == 2  # it lapsed
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    gone = journal_of("orphaned", 1, store)
    gone.lease = Lease(f"{socket.gethostname()}:{dead}:zz", 1, 600.0)
    gone.flush()
    assert store.acquire("orphaned", "me:1:c", 60.0).token == 2  # its process is gone
    alive = journal_of("alive", 1, store)
    alive.lease = Lease(f"{socket.gethostname()}:{os.getpid()}:yy", 1, 600.0)
    alive.flush()
    with pytest.raises(SessionBusy):
        store.acquire("alive", "me:1:c", 60.0)
