"""A PostgreSQL restart under running sessions (what a managed database's maintenance or
failover does), on a private server (``tests/pg_private.py``). Within the store's ride-through
bound the sessions ride it out: all finish, no effect doubled, every chain verifies. Past the
bound they stop with StoreUnavailable — naming the cause, the session and how to resume it, never
psycopg's exception — and resumed once the server is back, they finish."""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pg_private import PrivateServer, pg_server  # noqa: F401 - the fixture
from tether import Agent, ModelResponse, ReAct, ScriptedModel, StopReason, ToolCall, tool
from tether.journal.chain import Journal, verify_chain
from tether.store.base import StoreUnavailable
from tether.store.postgres import PostgresStore
from tether.types import Message

from conftest import postgres_store

SESSIONS, STEPS = 20, 6


class Fleet:
    """SESSIONS sessions of one agent, each calling ``work`` STEPS times; ``during`` runs (on a
    thread) when the OUTAGE_AT-th effect of the fleet happens, inside that tool call."""

    def __init__(self, store: PostgresStore, during: object, at: int) -> None:
        self.effects: collections.Counter[tuple[str, int]] = collections.Counter()
        self.store, self.during, self.at = store, during, at

        @tool(side_effect=True, idempotent=True)
        async def work(job: str, step: int) -> str:
            """Do one step of a job."""
            self.effects[(job, step)] += 1
            if sum(self.effects.values()) == self.at:
                await asyncio.to_thread(self.during)  # type: ignore[arg-type]
            return f"{job} step {step} done"

        def responder(request: object) -> ModelResponse | str:
            messages: list[Message] = request.messages  # type: ignore[attr-defined]
            job = next(m.content for m in messages if m.role == "user")
            turn = sum(1 for m in messages if m.role == "assistant")
            if turn < STEPS:
                return ModelResponse(tool_calls=(ToolCall("", "work", {"job": job,
                                                                       "step": turn}),))
            return f"{job} finished"

        self.agent = Agent(model=ScriptedModel(responder), reasoning=ReAct(), tools=[work],
                           store=store)

    async def run(self) -> list[object]:
        sessions = [self.agent.session(f"job-{i}") for i in range(SESSIONS)]
        self.ids = [s.id for s in sessions]
        return await asyncio.gather(*(s.arun() for s in sessions), return_exceptions=True)

    def check_journals(self) -> None:
        """Every session ended, its chain verifies, each step's result journaled once, and no
        effect ran twice unless it was in flight when the store went away (idempotent tools
        run again on resume)."""
        for sid in self.ids:
            events = self.store.read(sid)
            assert verify_chain(events) is None
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            assert events[-1].type == "session.end"
            assert events[-1].data["reason"] == "finished"
            results = [e.data["call_id"] for e in events if e.type == "tool.result"]
            assert len(results) == len(set(results)) == STEPS
        assert set(self.effects) == {(f"job-{i}", s) for i in range(SESSIONS)
                                     for s in range(STEPS)}


@pytest.fixture
def private_store(pg_server: PrivateServer) -> Iterator[PostgresStore]:  # noqa: F811
    store = PostgresStore(f"{pg_server.url}?ride_through=120")
    yield store
    store.close()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_sessions_ride_through_a_database_restart_within_the_bound(
        pg_server: PrivateServer, private_store: PostgresStore,  # noqa: F811
        mode: str) -> None:
    fleet = Fleet(private_store, lambda: pg_server.restart(mode), at=SESSIONS * STEPS // 3)
    outcomes = asyncio.run(fleet.run())
    assert [type(o).__name__ for o in outcomes if not hasattr(o, "stop_reason")] == []
    assert all(o.stop_reason is StopReason.FINISHED for o in outcomes)  # type: ignore[attr-defined]
    fleet.check_journals()
    assert sum(fleet.effects.values()) == SESSIONS * STEPS  # none doubled, none lost


def test_an_outage_past_the_bound_stops_sessions_resumably_and_resume_finishes_them(
        pg_server: PrivateServer) -> None:  # noqa: F811
    store = PostgresStore(pg_server.url, ride_through=0.5)
    try:
        fleet = Fleet(store, pg_server.stop, at=SESSIONS * STEPS // 3)
        outcomes = asyncio.run(fleet.run())
        for sid, outcome in zip(fleet.ids, outcomes, strict=True):
            assert isinstance(outcome, StoreUnavailable), outcome
            assert not isinstance(outcome, psycopg.Error)
            text = str(outcome)
            assert sid in text and "resum" in text and f"tether resume {sid}" in text
            assert "PostgreSQL could not be reached" in text
            assert "bound of 0.5s" in text or "already unreachable" in text
        pg_server.start()
        _reachable(store)  # its pool reconnects; on a loaded machine that may outlast 0.5 s
        in_flight = set().union(*(_in_flight(store, sid) for sid in fleet.ids))
        assert in_flight  # the stop came mid-call: some effects' results never got stored
        done = [fleet.agent.resume(sid) for sid in fleet.ids]
        assert all(r.stop_reason is StopReason.FINISHED for r in done)
        fleet.check_journals()
        doubled = {step for step, count in fleet.effects.items() if count > 1}
        assert doubled <= in_flight and max(fleet.effects.values()) <= 2
    finally:
        store.close()


def _reachable(store: PostgresStore, tries: int = 240) -> None:
    """Wait until the store answers again: each try is one read, which itself waits out the
    store's bound; the number of tries only caps a server that never comes back."""
    for _ in range(tries):
        try:
            store.sessions()
            return
        except StoreUnavailable:
            continue
    raise AssertionError("the restarted server never answered")


def _in_flight(store: PostgresStore, sid: str) -> set[tuple[str, int]]:
    """Steps whose call started but whose result the store never got."""
    events = store.read(sid)
    started = {e.data["call_id"] for e in events if e.type == "tool.started"}
    finished = {e.data["call_id"] for e in events if e.type == "tool.result"}
    decided = {e.data["call_id"]: (e.data["arguments"]["job"], e.data["arguments"]["step"])
               for e in events if e.type == "tool.decision"}
    return {decided[c] for c in started - finished}


def test_an_append_retried_after_its_commit_is_not_written_twice(
        private_store: PostgresStore) -> None:
    """The commit reached the server, its reply did not: the retry finds the events stored as
    they are, by hash, and counts the append done — no second copy, no fork, no conflict."""
    journal = Journal("s", store=private_store)
    journal.append("session.start", {"agent": "a", "subject": {}})
    journal.flush()
    journal.append("step", {"n": 1})
    events = journal.events()
    private_store.append("s", events[1:])  # the try that committed
    retry = private_store._statements.write(
        [private_store._as_append("s", events[1:], None, None)], retried=True)
    with private_store._connection() as db:
        from tether.store.postgres_steps import run
        assert run(db, retry) == [None]
    stored = private_store.read("s")
    assert [e.seq for e in stored] == [1, 2] and verify_chain(stored) is None
    rival = Journal("s", store=private_store, history=stored[:1])
    rival.append("step", {"n": "rival"})
    forked = private_store._statements.write(
        [private_store._as_append("s", rival.events()[1:], None, None)], retried=True)
    with private_store._connection() as db:
        assert "expected seq 3" in str(run(db, forked)[0])  # a retry does not excuse a fork


def test_every_kind_of_store_call_rides_through_a_restart(
        pg_server: PrivateServer, private_store: PostgresStore) -> None:  # noqa: F811
    """The threaded path (the pool): each call below finds every pooled connection dead."""
    journal = Journal("s", store=private_store)
    journal.append("session.start", {"agent": "a", "subject": {}})
    journal.flush()
    private_store.put_approval({"id": "a1", "session_id": "s", "status": "pending"})

    def append_step() -> None:
        journal.append("step", {"n": 1})
        journal.flush()

    calls = [
        append_step,
        lambda: private_store.read("s"),
        lambda: private_store.sessions(),
        lambda: private_store.update_approval("a1", "pending", {"status": "approved",
                                                                "approver": "ops"}),
        lambda: private_store.put_private("s", "c1", {"card": "4111"}),
        lambda: private_store.anchors(),
    ]
    for call in calls:
        with private_store._connection():  # at least one pooled connection, about to die
            pass
        pg_server.restart()
        call()
    stored = private_store.read("s")
    assert [e.seq for e in stored] == [1, 2] and verify_chain(stored) is None
    assert private_store.get_approval("a1")["status"] == "approved"  # type: ignore[index]
    assert private_store.get_private("s", "c1") == {"card": "4111"}


def test_the_bound_is_read_from_the_url_or_given_once() -> None:
    from tether.store.base import StoreError
    from tether.store.postgres_outage import DEFAULT_RIDE_THROUGH
    from tether.store.postgres_url import ride_through_in_url

    assert ride_through_in_url("postgresql://h/db", None) == ("postgresql://h/db",
                                                              DEFAULT_RIDE_THROUGH)
    assert ride_through_in_url("postgresql://h/db?ride_through=90&sslmode=require", None) == (
        "postgresql://h/db?sslmode=require", 90.0)
    assert ride_through_in_url("postgresql://h/db?ride_through=5s", 5.0)[1] == 5.0
    with pytest.raises(StoreError, match="must be a number of seconds"):
        ride_through_in_url("postgresql://h/db?ride_through=soon", None)
    with pytest.raises(StoreError, match="set it once"):
        ride_through_in_url("postgresql://h/db?ride_through=5", 6.0)
    with pytest.raises(StoreError, match="finite number of seconds"):
        PostgresStore("postgresql://h/db?ride_through=-1")


def test_a_failover_onto_a_read_only_server_is_waited_out_then_writes_go_to_the_primary(
        pg_server: PrivateServer) -> None:  # noqa: F811
    """After a failover a pooled connection may reach a server that takes no writes (a
    standby): that is an outage too, not an error of the append, and such connections are
    dropped, so once a writable server answers, writes go there."""
    def read_only(on: bool) -> None:
        with psycopg.connect(pg_server.url, autocommit=True) as admin:
            admin.execute("SET default_transaction_read_only = off")
            admin.execute(f"ALTER DATABASE postgres SET default_transaction_read_only = "
                          f"{'on' if on else 'off'}")

    store = PostgresStore(pg_server.url, ride_through=0.3)
    try:
        journal = Journal("s", store=store)
        journal.append("session.start", {"agent": "a", "subject": {}})
        journal.flush()
        read_only(True)
        store._recover(down=True)  # every pooled connection is now one to the "standby"
        journal.append("step", {"n": 1})
        with pytest.raises(StoreUnavailable, match="read-only transaction") as stopped:
            journal.flush()
        assert not isinstance(stopped.value, psycopg.Error)
        assert "session s stopped at its last stored step and is resumable" in str(stopped.value)
        read_only(False)  # the primary is back
        journal.flush()
        stored = store.read("s")
        assert [e.seq for e in stored] == [1, 2] and verify_chain(stored) is None
    finally:
        store.close()


class ReplyLost:
    """Wraps a commit: the first one is made, then its reply is 'lost' (the driver's error for a
    dropped connection), as when the server restarts between committing and answering."""

    def __init__(self) -> None:
        self.lost = 0

    def after(self, done: object) -> None:
        if not self.lost:
            self.lost += 1
            raise psycopg.OperationalError("server closed the connection unexpectedly")


def test_a_group_commit_whose_reply_was_lost_is_not_written_twice(
        private_store: PostgresStore) -> None:
    reply = ReplyLost()
    connect = private_store._connect

    async def connect_losing_a_reply() -> object:
        db = await connect()
        commit = db.commit

        async def commit_then_lose() -> None:
            reply.after(await commit())
        db.commit = commit_then_lose
        return db

    private_store._committers._connect = connect_losing_a_reply
    journals = [Journal(f"s{i}", store=private_store) for i in range(5)]
    for journal in journals:
        journal.append("session.start", {"agent": "a", "subject": {}})
        journal.append("step", {"n": 1})

    async def together() -> list[object]:
        return await asyncio.gather(*(j.aflush() for j in journals), return_exceptions=True)

    assert asyncio.run(together()) == [None] * 5 and reply.lost == 1
    for journal in journals:
        stored = private_store.read(journal.session_id)
        assert [e.seq for e in stored] == [1, 2] and verify_chain(stored) is None
    heads = [a.session_id for a in private_store.anchors()]
    assert sorted(heads) == [f"s{i}" for i in range(5)]  # anchored once each, not twice


def test_a_threaded_append_whose_reply_was_lost_is_not_written_twice(
        private_store: PostgresStore) -> None:
    reply = ReplyLost()
    append = private_store._append

    def append_losing_a_reply(*args: object) -> None:
        reply.after(append(*args))  # type: ignore[arg-type]

    private_store._append = append_losing_a_reply  # type: ignore[method-assign]
    journal = Journal("s", store=private_store)
    journal.append("session.start", {"agent": "a", "subject": {}})
    journal.flush()
    journal.append("step", {"n": 1})
    journal.flush()
    assert reply.lost == 1
    stored = private_store.read("s")
    assert [e.seq for e in stored] == [1, 2] and verify_chain(stored) is None


class Outcome(Exception):
    """A driver-like error with a SQLSTATE, for the classification below."""

    def __init__(self, sqlstate: str | None) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


def test_what_is_waited_out_and_what_is_not() -> None:
    from tether.store.base import StoreFull
    from tether.store.postgres_outage import RideThrough

    ride = RideThrough(0.2, "postgresql://db/x", "postgresql://db/x")
    tries: list[str] = []

    def failing(error: BaseException) -> object:
        def attempt() -> object:
            tries.append(type(error).__name__)
            raise error
        return attempt

    with pytest.raises(StoreFull, match=r"disk is full .*53100"):  # not waited out
        ride.call(failing(Outcome("53100")), "s1")
    assert len(tries) == 1
    with pytest.raises(Outcome):  # a constraint, a bug: never retried, never disguised
        ride.call(failing(Outcome("23505")))
    assert len(tries) == 2
    with pytest.raises(StoreUnavailable, match=r"ride-through bound of 0\.2s") as gone:
        ride.call(failing(Outcome("57P01")), "s1")  # admin shutdown: waited out, then stopped
    assert len(tries) > 3 and "session s1 stopped" in str(gone.value)
    with pytest.raises(StoreUnavailable, match="already unreachable"):  # given up: no new wait
        ride.call(failing(psycopg.OperationalError("connection refused")))
    assert ride.call(lambda: "back") == "back"
    with pytest.raises(StoreUnavailable, match=r"bound of 0\.2s"):  # back: the full bound again
        ride.call(failing(Outcome("08006")))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(faults=st.lists(st.sampled_from(["none", "before commit", "reply lost"]),
                       min_size=1, max_size=8))
def test_appends_under_any_pattern_of_dropped_connections_store_the_chain_exactly(
        faults: list[str], shared_pg: PostgresStore) -> None:
    """Whichever appends lose their connection, before their commit or after it, the store
    ends with exactly the journal's events: none lost, none doubled, the chain intact."""
    pending = list(faults)
    append = shared_pg._append

    def faulty(*args: object) -> None:
        fault = pending.pop(0) if pending and not shared_pg._ride.retrying() else "none"
        if fault == "before commit":
            raise psycopg.OperationalError("connection refused")
        append(*args)  # type: ignore[arg-type]
        if fault == "reply lost":
            raise psycopg.OperationalError("server closed the connection unexpectedly")

    shared_pg._append = faulty  # type: ignore[method-assign]
    try:
        journal = Journal(uuid.uuid4().hex, store=shared_pg)
        journal.append("session.start", {"agent": "a", "subject": {}})
        journal.flush()
        for n in range(1, len(faults)):
            journal.append("step", {"n": n})
            journal.flush()
    finally:
        shared_pg._append = append  # type: ignore[method-assign]
    stored = shared_pg.read(journal.session_id)
    assert [(e.seq, e.hash) for e in stored] == [(e.seq, e.hash) for e in journal.events()]
    assert verify_chain(stored) is None


@pytest.fixture
def shared_pg() -> Iterator[PostgresStore]:
    """A schema of its own on the shared server (nothing restarts it)."""
    store = postgres_store()
    assert isinstance(store, PostgresStore)
    yield store
    with store._connection() as db:
        db.execute(f"DROP SCHEMA {store.schema} CASCADE")
    store.close()
