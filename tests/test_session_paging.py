"""Keyset paging of the session index (tether.store.paging, Store.page_sessions), on every store.

What must hold: each filter (status, stop reason, agent, tenant, user, thread, time, cost) lists
exactly the sessions it names, alone and combined; walking every page by cursor yields the
filtered sessions newest first, each once, none missed, also while newer sessions arrive between
page reads; a tenant never sees another's; a cursor nobody gave is refused; and the index row a
store keeps says what the session's own events say, including a store migrated from schema 8.
The expectations here are computed from what each test wrote, not by the filter under test.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paging_sessions import T0, Made, put, put_record
from tether.errors import InvalidArgument
from tether.store.base import Store, session_info
from tether.store.memory import MemoryStore
from tether.store.paging import ANY_TENANT, SessionFilter, SessionPage, page_sessions


def wanted(made: Made, where: SessionFilter) -> bool:
    """The filter as the brief states it, written out apart from the code under test."""
    checks = [
        where.status is None or made.status == where.status,
        where.stop_reason is None or made.reason == where.stop_reason,
        where.agent is None or made.agent == where.agent,
        where.tenant_id is ANY_TENANT or made.tenant == where.tenant_id,
        where.user_id is None or made.user == where.user_id,
        where.thread_id is None or made.thread == where.thread_id,
        where.since is None or made.created >= where.since,
        where.until is None or made.created < where.until,
        where.min_cost is None or (made.cost is not None and made.cost >= where.min_cost),
        where.max_cost is None or (made.cost is not None and made.cost <= where.max_cost),
    ]
    return all(checks)


def newest_first(made: Sequence[Made]) -> list[str]:
    return [m.sid for m in sorted(made, key=lambda m: (m.created, m.sid), reverse=True)]


def walk(store: Store, where: SessionFilter, limit: int,
         between: Callable[[int], None] = lambda _: None) -> list[str]:
    """Every page by cursor (``between(n)`` runs after page n is read); checks each page."""
    seen: list[str] = []
    page: SessionPage = page_sessions(store, where, limit=limit)
    for number in range(1, 200):  # far more pages than any test writes sessions
        assert len(page.sessions) <= limit
        seen += [info.session_id for info in page.sessions]
        if page.next is None:
            return seen
        assert len(page.sessions) == limit  # a page before the last is full
        between(number)
        page = page_sessions(store, where, limit=limit, after=page.next)
    raise AssertionError("the walk never ended: a cursor did not move past its page")


@pytest.fixture
def made(store: Store) -> list[Made]:
    """A dozen sessions covering every filter's values, some sharing a created_at."""
    return [
        put(store, "s01", T0 + 1, agent="billing", user="u1"),
        put(store, "s02", T0 + 2, agent="billing", user="u2", thread="th-1",
            stops=[("paused", "needs_approval", "0.25")]),
        put(store, "s03", T0 + 3, agent="support", user="u1", thread="th-1",
            stops=[("ended", "finished", "1.50")]),
        put(store, "s04", T0 + 3, agent="support", tenant="globex", user="u1",
            stops=[("ended", "cost_budget", "4.00")], together=True),
        put(store, "s05", T0 + 3, agent="billing", tenant=None, user=None,
            stops=[("paused", "needs_approval", "0.10"), ("resumed", None, None),
                   ("ended", "finished", "0.90")]),
        put(store, "s06", T0 + 6, agent="billing", tenant="globex", user="u3",
            stops=[("paused", "needs_approval", "2.00"), ("resumed", None, None)]),
        put(store, "s07", T0 + 7, agent="research", user="u2", thread="th-2",
            stops=[("ended", "finished", "0")]),
        put_record(store, "s08", T0 + 8),
        put(store, "s09", T0 + 9, agent="billing", user="u1",
            stops=[("ended", "finished", None)]),
    ]


CASES: dict[str, SessionFilter] = {
    "everything": SessionFilter(),
    "status open": SessionFilter(status="open"),
    "status paused": SessionFilter(status="paused"),
    "status ended": SessionFilter(status="ended"),
    "status erasure": SessionFilter(status="erasure"),
    "stop reason": SessionFilter(stop_reason="finished"),
    "stop reason kept after resume": SessionFilter(stop_reason="needs_approval"),
    "agent": SessionFilter(agent="support"),
    "tenant": SessionFilter(tenant_id="globex"),
    "no tenant": SessionFilter(tenant_id=None),
    "user": SessionFilter(user_id="u1"),
    "thread": SessionFilter(thread_id="th-1"),
    "since": SessionFilter(since=T0 + 3),
    "until": SessionFilter(until=T0 + 3),
    "min cost": SessionFilter(min_cost=0.9),
    "max cost": SessionFilter(max_cost=0.25),
    "cost zero": SessionFilter(max_cost=0.0),
    "agent + status + cost": SessionFilter(agent="billing", status="ended", min_cost=0.5),
    "tenant + user + since": SessionFilter(tenant_id="acme", user_id="u1", since=T0 + 2),
    "thread + stop reason": SessionFilter(thread_id="th-1", stop_reason="finished"),
    "time window + max cost": SessionFilter(since=T0 + 2, until=T0 + 7, max_cost=2.0),
    "nothing matches": SessionFilter(agent="billing", tenant_id="globex", status="ended"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_filter_alone_and_combined_lists_exactly_its_sessions(
        store: Store, made: list[Made], case: str) -> None:
    where = CASES[case]
    expected = newest_first([m for m in made if wanted(m, where)])
    assert expected or case == "nothing matches"  # every other case selects something
    if case != "everything":
        assert len(expected) < len(made)  # and filters something out
    for limit in (1, 2, 50):
        assert walk(store, where, limit) == expected


def test_the_index_row_says_what_the_sessions_events_say(store: Store,
                                                        made: list[Made]) -> None:
    listed = {i.session_id: i for i in page_sessions(store, limit=100).sessions}
    for m in made:
        info = listed[m.sid]
        assert (info.agent, info.tenant_id, info.user_id, info.thread_id, info.status,
                info.stop_reason, info.cost) == (m.agent, m.tenant, m.user, m.thread, m.status,
                                                 m.reason, m.cost), m.sid
        assert info == session_info(m.sid, store.read(m.sid))  # as the reference derives it
        assert info.created_at == m.created + 1e-6 or m.status == "erasure"


def test_a_page_names_the_next_only_when_there_is_one(store: Store, made: list[Made]) -> None:
    first = page_sessions(store, limit=len(made) - 1)
    assert first.next is not None
    last = page_sessions(store, limit=len(made) - 1, after=first.next)
    assert len(last.sessions) == 1 and last.next is None
    assert page_sessions(store, limit=len(made)).next is None  # exactly full: no empty page
    assert page_sessions(store, SessionFilter(agent="nobody")) == SessionPage([], None)


def test_a_tenant_never_sees_another_tenants_sessions(store: Store, made: list[Made]) -> None:
    for tenant in ("acme", "globex", None):
        listed = page_sessions(store, SessionFilter(tenant_id=tenant), limit=100).sessions
        assert listed and {i.tenant_id for i in listed} == {tenant}
        assert [i.session_id for i in listed] == newest_first([m for m in made
                                                              if m.tenant == tenant])
    cursor = page_sessions(store, SessionFilter(tenant_id="acme"), limit=1).next
    assert cursor is not None  # a cursor carries no tenant: the filter decides, on every page
    rest = page_sessions(store, SessionFilter(tenant_id="globex"), limit=100, after=cursor)
    assert {i.tenant_id for i in rest.sessions} == {"globex"}


def _encoded(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    "not a cursor!", "", _encoded({"at": 1}), _encoded([1.0]), _encoded([1.0, "s", 3]),
    _encoded(["yesterday", "s01"]), _encoded([1.0, 7]), _encoded(None),
    base64.urlsafe_b64encode(b'[NaN, "s01"]').decode(), base64.urlsafe_b64encode(b"\xff").decode(),
])
def test_a_cursor_no_listing_gave_is_refused_with_what_to_do(store: Store, made: list[Made],
                                                             cursor: str) -> None:
    with pytest.raises(InvalidArgument, match="start from the first page"):
        page_sessions(store, limit=2, after=cursor)


def test_a_limit_below_one_and_an_unknown_status_are_refused(store: Store) -> None:
    with pytest.raises(InvalidArgument, match="limit must be at least 1"):
        page_sessions(store, limit=0)
    with pytest.raises(InvalidArgument, match="status 'lost' is not one of open"):
        SessionFilter(status="lost")


def test_ids_and_excluding_narrow_the_listing(store: Store, made: list[Made]) -> None:
    listed = page_sessions(store, SessionFilter(ids=frozenset({"s01", "s03", "nope"})))
    assert [i.session_id for i in listed.sessions] == ["s03", "s01"]
    assert page_sessions(store, SessionFilter(ids=frozenset())).sessions == []
    rest = page_sessions(store, SessionFilter(status="ended", excluding=frozenset({"s03"})))
    assert [i.session_id for i in rest.sessions] == ["s09", "s07", "s05", "s04"]


# -- the property: every page, in order, while sessions arrive -------------------------------

specs = st.fixed_dictionaries({
    "created": st.integers(0, 4),
    "agent": st.sampled_from(["a", "b"]),
    "user": st.sampled_from(["u1", "u2", None]),
    "thread": st.sampled_from([None, "th"]),
    "stops": st.lists(st.tuples(st.sampled_from(["paused", "ended", "resumed"]),
                                st.sampled_from(["finished", "needs_approval"]),
                                st.sampled_from(["0", "0.5", "1.25"])), max_size=2),
})
filters = st.builds(
    SessionFilter, status=st.sampled_from([None, "open", "paused", "ended"]),
    stop_reason=st.sampled_from([None, "finished"]), agent=st.sampled_from([None, "a"]),
    user_id=st.sampled_from([None, "u1"]), thread_id=st.sampled_from([None, "th"]),
    since=st.sampled_from([None, T0 + 1]), until=st.sampled_from([None, T0 + 4]),
    min_cost=st.sampled_from([None, 0.5]), max_cost=st.sampled_from([None, 0.5]))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sessions=st.lists(specs, max_size=10), where=filters, limit=st.integers(1, 4),
       arrivals=st.lists(st.integers(0, 2), max_size=3),
       ids=st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=16, max_size=16,
                    unique=True))
def test_walking_every_page_yields_the_filtered_sessions_once_each_newest_first(
        store: Store, sessions: list[dict[str, Any]], where: SessionFilter, limit: int,
        arrivals: list[int], ids: list[str]) -> None:
    tenant = f"t-{ids[0]}-{len(store.sessions())}"  # its own tenant: examples share a store
    where = replace(where, tenant_id=tenant)
    made = [put(store, f"{tenant}/{ids[n]}", T0 + spec["created"], agent=spec["agent"],
                tenant=tenant, user=spec["user"], thread=spec["thread"], stops=spec["stops"])
            for n, spec in enumerate(sessions)]
    expected = newest_first([m for m in made if wanted(m, where)])
    later = itertools.count(100)

    def arrive(page: int) -> None:  # newer sessions, matching the filter as far as they can
        for _ in range(arrivals[page - 1] if page <= len(arrivals) else 0):
            put(store, f"{tenant}/new-{next(later)}", T0 + 10, agent=where.agent or "a",
                tenant=tenant, user=where.user_id, thread=where.thread_id)

    assert walk(store, where, limit, arrive) == expected


# -- a store written by schema 8 ----------------------------------------------------------------

NEW_COLUMNS = ("user_id", "thread_id", "stop_reason", "cost")
NEW_INDEXES = ("sessions_newest", "sessions_by_tenant", "sessions_by_user")


LATER_TABLES = ("checkpoints", "quota_use", "halts", "halt_state",  # schemas 10, 11, 12
                "thread_turns", "thread_revisions")  # schemas 13, 14


def _back_to_schema_8(store: Store) -> Store:
    """``store`` as a tether of schema 8 left it (schema 9 is schema 8 plus these columns and
    indexes; the later schemas only add tables), closed and opened again, which migrates it."""
    from tether.store.postgres import PostgresStore
    from tether.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        for index in NEW_INDEXES:
            store._db.execute(f"DROP INDEX {index}")
        for column in NEW_COLUMNS:
            store._db.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
        for table in LATER_TABLES:
            store._db.execute(f"DROP TABLE {table}")
        store._db.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
        return SQLiteStore(store.path)  # the fixture closes the first
    assert isinstance(store, PostgresStore)
    with store._pool.connection() as db:
        for index in NEW_INDEXES:
            db.execute(f"DROP INDEX {store.schema}.{index}")
        for column in NEW_COLUMNS:
            db.execute(f"ALTER TABLE {store.schema}.sessions DROP COLUMN {column}")
        for table in LATER_TABLES:
            db.execute(f"DROP TABLE {store.schema}.{table}")
        db.execute(f"UPDATE {store.schema}.meta SET value = '8' WHERE key = 'schema_version'")
    from conftest import PG_URL

    return PostgresStore(PG_URL, schema=store.schema)  # the fixture closes the first


def test_a_store_of_schema_8_opens_with_its_index_backfilled_from_its_events(
        store: Store, made: list[Made], request: pytest.FixtureRequest) -> None:
    if isinstance(store, MemoryStore):
        pytest.skip("the memory store has no schema: its index is its events")
    before = page_sessions(store, limit=100).sessions
    migrated = _back_to_schema_8(store)
    request.addfinalizer(migrated.close)
    after = page_sessions(migrated, limit=100).sessions
    assert after == before and any(i.cost for i in after) and any(i.thread_id for i in after)
    where = SessionFilter(agent="billing", status="ended", min_cost=0.5)
    assert [i.session_id for i in page_sessions(migrated, where).sessions] == ["s05"]
    more = put(migrated, "s10", T0 + 10, stops=[("ended", "finished", "3")])
    assert page_sessions(migrated, limit=1).sessions[0].cost == more.cost == 3.0
