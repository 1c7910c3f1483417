"""PostgreSQL's group commit on the event loop (``store.loop_commit``, ``store.postgres_steps``),
attacked: a session twice in one batch, a stale writer among honest ones, two workers crossing
on the same sessions, the store closed or the loop ended with appends in flight. Each append is
either durable or refused with a reason, never lost, doubled, reordered or left waiting."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest

from tether.journal.chain import Journal, verify_chain
from tether.store.base import ConflictError, StoreError
from tether.store.postgres import PostgresStore

from conftest import PG_URL, postgres_store


@pytest.fixture
def pg() -> Iterator[PostgresStore]:
    store = postgres_store()
    assert isinstance(store, PostgresStore)
    yield store
    with store._pool.connection() as db:
        db.execute(f"DROP SCHEMA {store.schema} CASCADE")
    store.close()


def started(store: PostgresStore, sid: str) -> Journal:
    journal = Journal(sid, store=store)
    journal.append("session.start", {"agent": "a", "subject": {"tenant_id": "t"}})
    journal.flush()
    return journal


def stale_copy(journal: Journal, store: PostgresStore) -> Journal:
    """A second writer that read the session at the same point as ``journal``."""
    return Journal(journal.session_id, store=store, history=store.read(journal.session_id))


def test_a_session_twice_in_one_batch_is_written_in_order_and_the_stale_write_refused(
        pg: PostgresStore) -> None:
    honest = started(pg, "s1")
    stale = stale_copy(honest, pg)
    honest.append("step", {"n": "honest"})
    stale.append("step", {"n": "stale"})
    others = [started(pg, f"o{i}") for i in range(5)]
    for other in others:
        other.append("step", {"n": 1})

    async def together() -> list[BaseException | None]:  # one loop tick: one batch
        return await asyncio.gather(honest.aflush(), stale.aflush(),
                                    *(o.aflush() for o in others), return_exceptions=True)

    outcome = asyncio.run(together())
    assert outcome[0] is None and all(o is None for o in outcome[2:])
    assert isinstance(outcome[1], ConflictError) and "expected seq 3, got 2" in str(outcome[1])
    stored = pg.read("s1")
    assert [e.data for e in stored[1:]] == [{"n": "honest"}]
    assert verify_chain(stored) is None
    for other in others:
        assert len(pg.read(other.session_id)) == 2


def test_a_second_start_in_the_same_batch_is_refused_and_the_first_kept(
        pg: PostgresStore) -> None:
    first, second = Journal("dup", store=pg), Journal("dup", store=pg)
    first.append("session.start", {"agent": "first"})
    second.append("session.start", {"agent": "second"})

    async def together() -> list[BaseException | None]:
        return await asyncio.gather(first.aflush(), second.aflush(), return_exceptions=True)

    outcome = asyncio.run(together())
    assert outcome[0] is None and isinstance(outcome[1], ConflictError)
    assert [e.data["agent"] for e in pg.read("dup")] == ["first"]


def in_two_workers(pg: PostgresStore, sids: list[str],
                   work: Callable[[PostgresStore, list[str], str], Awaitable[None]]) -> None:
    """Run ``work`` in two workers at once — each a thread with its own loop and its own store
    on the same schema — the first over ``sids`` in order ("a"), the second reversed ("b")."""
    other = PostgresStore(PG_URL, schema=pg.schema)
    try:
        threads = [threading.Thread(target=asyncio.run, args=(work(pg, sids, "a"),)),
                   threading.Thread(target=asyncio.run, args=(work(other, sids[::-1], "b"),))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        other.close()


def test_two_workers_starting_the_same_sessions_in_opposite_orders_never_deadlock(
        pg: PostgresStore) -> None:
    sids = [f"n{i:02}" for i in range(40)]
    outcomes: dict[str, list[BaseException | None]] = {}

    async def start_all(store: PostgresStore, order: list[str], tag: str) -> None:
        journals = [Journal(sid, store=store) for sid in order]
        for journal in journals:
            journal.append("session.start", {"agent": tag})
        outcomes[tag] = await asyncio.gather(*(j.aflush() for j in journals),
                                             return_exceptions=True)

    in_two_workers(pg, sids, start_all)
    won = {tag: {sid for sid, result in zip(sids if tag == "a" else sids[::-1], results,
                                            strict=True) if result is None}
           for tag, results in outcomes.items()}
    for results in outcomes.values():
        assert all(r is None or isinstance(r, ConflictError) for r in results), results
    assert won["a"] | won["b"] == set(sids) and not won["a"] & won["b"]
    for sid in sids:
        assert [e.data["agent"] for e in pg.read(sid)] == ["a" if sid in won["a"] else "b"]


def test_two_workers_crossing_on_the_same_sessions_never_deadlock_or_fork(
        pg: PostgresStore) -> None:
    """Two stores (two workers, each with its own loop) append to the same twenty sessions in
    opposite orders; every append is durable or refused as a conflict, and every chain holds."""
    sids = [f"x{i:02}" for i in range(20)]
    for sid in sids:
        started(pg, sid)
    failures: list[BaseException] = []
    written: dict[str, int] = {}
    lock = threading.Lock()

    async def rounds(store: PostgresStore, order: list[str], tag: str) -> None:
        for round_ in range(8):
            journals = [Journal(sid, store=store, history=store.read(sid)) for sid in order]
            for journal in journals:
                journal.append("step", {"by": tag, "round": round_})
            outcome = await asyncio.gather(*(j.aflush() for j in journals),
                                           return_exceptions=True)
            for journal, result in zip(journals, outcome, strict=True):
                if result is None:
                    with lock:
                        written[journal.session_id] = written.get(journal.session_id, 0) + 1
                elif not isinstance(result, ConflictError):
                    failures.append(result)

    in_two_workers(pg, sids, rounds)
    assert failures == []
    for sid in sids:
        stored = pg.read(sid)
        assert verify_chain(stored) is None
        assert len(stored) == 1 + written.get(sid, 0)  # nothing lost, nothing doubled


def test_closing_the_store_before_its_committer_ran_tells_each_caller(
        pg: PostgresStore) -> None:
    journals = [started(pg, f"c{i}") for i in range(5)]
    for journal in journals:
        journal.append("step", {})

    async def close_under_them() -> list[BaseException | None]:
        appends = [asyncio.ensure_future(pg.append_async(j.session_id, j.events()[1:]))
                   for j in journals]
        await asyncio.sleep(0)  # the appends are queued; the committer has not run yet
        assert len(pg._committers._committers) == 1
        pg._committers.close()  # as PostgresStore.close does
        return await asyncio.wait_for(asyncio.gather(*appends, return_exceptions=True), 10)

    outcome = asyncio.run(close_under_them())
    for result in outcome:
        assert isinstance(result, StoreError) and "it was not stored" in str(result)
    assert all(len(pg.read(j.session_id)) == 1 for j in journals)


def test_closing_the_store_mid_commit_tells_the_caller_to_read_back(pg: PostgresStore) -> None:
    journal = started(pg, "mid")
    journal.append("step", {})
    import psycopg

    blocker = psycopg.connect(PG_URL)  # holds the session's row: the commit waits on it
    blocker.execute(f"SELECT 1 FROM {pg.schema}.sessions WHERE session_id = 'mid' FOR UPDATE")
    row = blocker.execute("SELECT pg_current_xact_id()::text").fetchone()
    assert row is not None
    holder = row[0]
    watcher = psycopg.connect(PG_URL, autocommit=True)  # sees each query's own view of the waits

    async def close_mid_commit() -> BaseException | None:
        flush = asyncio.ensure_future(journal.aflush())
        for _ in range(3000):  # until the committer waits for the blocker's row lock
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = "
                "'transactionid' AND transactionid::text = %s", (holder,)).fetchone()
            if waiting and waiting[0]:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the commit never waited for the row")
        pg._committers.close()
        done = await asyncio.wait_for(asyncio.gather(flush, return_exceptions=True), 10)
        return done[0]

    try:
        result = asyncio.run(close_mid_commit())
    finally:
        blocker.rollback()
        blocker.close()
        watcher.close()
    assert isinstance(result, StoreError) and "read the session back" in str(result)
    assert journal.flushed == 1
    with pytest.raises(StoreError, match="closed"):  # nothing is taken after the close
        asyncio.run(journal.aflush())


async def _append_one(journal: Journal) -> None:
    journal.append("step", {})
    await journal.aflush()


def test_the_committers_connection_ends_with_its_loop(pg: PostgresStore) -> None:
    journal = started(pg, "loop")
    for _ in range(3):
        asyncio.run(_append_one(journal))  # each run: a new loop, a new committer
        assert pg._committers._committers == {}
        with pg._pool.connection() as db:
            left = db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name "
                              "= %s", (f"tether-commit-{pg.schema}",)).fetchone()
        assert left == (0,)
    assert len(pg.read("loop")) == 4


def test_a_database_error_fails_its_batch_and_the_committer_goes_on(
        pg: PostgresStore) -> None:
    import psycopg

    journal = started(pg, "dberr")
    journal.append("step", {})

    async def broken_then_fine() -> None:
        with pg._pool.connection() as db:  # the events table is gone for a moment
            db.execute(f"ALTER TABLE {pg.schema}.events RENAME TO events_away")
        try:
            with pytest.raises(psycopg.Error):
                await journal.aflush()
        finally:
            with pg._pool.connection() as db:
                db.execute(f"ALTER TABLE {pg.schema}.events_away RENAME TO events")
        await journal.aflush()  # the same append, retried on the same loop's committer

    asyncio.run(broken_then_fine())
    assert len(pg.read("dberr")) == 2
    assert verify_chain(pg.read("dberr")) is None
