"""What goes in comes back, on every store: the bytes hashed are the bytes stored and read back.

Random JSON values — awkward floats, integers beyond 64 bits, NUL characters, lone surrogates,
long strings, nesting — are journaled, read back equal (as the same JSON text, so an integer can
never come back as a float or the reverse) and verify clean on memory, SQLite and PostgreSQL.
Values that JSON text cannot carry faithfully are refused at append, the same on every store."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.journal.chain import (
    MAX_NESTING,
    Journal,
    JournalValueError,
    canonical_text,
    verify_chain,
)
from tether.store.base import Store

AWKWARD_FLOATS = [1e20, 1e-7, -0.0, 5e-324, 1.7976931348623157e308, 0.1 + 0.2, 2.0**53 + 1]
BIG_INTS = [2**63, -(2**63) - 1, 2**64 + 1, 10**40, -(10**40)]
AWKWARD_TEXT = ["\x00", "a\x00b", "\ud800", "x\udfffy", "\u2028\u2029", "\U0001f600", "\\u0000",
                '"quoted"', "\x7f\x1b[0m", "ünïcode"]

leaves = (st.none() | st.booleans() | st.integers() | st.sampled_from(BIG_INTS)
          | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(AWKWARD_FLOATS)
          | st.text(max_size=40) | st.sampled_from(AWKWARD_TEXT))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8) | st.sampled_from(AWKWARD_TEXT),
                                        inner, max_size=4), max_leaves=25)


def _round_trip(store: Store, value: Any) -> None:
    sid = uuid.uuid4().hex
    journal = Journal(sid, store=store)
    journal.append("session.start", {"task": "t", "agent": "a",
                                     "subject": {"tenant_id": None, "user_id": None,
                                                 "roles": []}})
    journal.flush()  # the value goes in a later step: both of a store's write paths are used
    journal.append("value", {"v": value})
    journal.flush()
    stored = store.read(sid)
    assert verify_chain(stored) is None
    assert [e.hash for e in stored] == [e.hash for e in journal.events()]
    # the same JSON text: 1e20 must not come back as 100000000000000000000, -0.0 not as 0
    assert canonical_text(stored[1].data) == canonical_text({"v": value})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_any_json_value_round_trips_and_verifies(store: Store, value: Any) -> None:
    _round_trip(store, value)


@pytest.mark.parametrize("value", [*AWKWARD_FLOATS, *BIG_INTS, *AWKWARD_TEXT])
def test_each_awkward_value_round_trips(store: Store, value: Any) -> None:
    _round_trip(store, value)


def test_a_ten_megabyte_string_round_trips(store: Store) -> None:
    _round_trip(store, "é" + "x" * 10_000_000 + "\x00")


def test_nesting_up_to_the_limit_is_kept_and_beyond_it_refused(store: Store) -> None:
    deep: Any = "bottom"
    for _ in range(MAX_NESTING - 2):  # the event's own {"v": ...} adds a level
        deep = [deep]
    _round_trip(store, deep)
    too_deep: Any = "bottom"
    for _ in range(1000):
        too_deep = {"k": too_deep}
    journal = Journal(uuid.uuid4().hex, store=store)
    with pytest.raises(JournalValueError, match="nested more than"):
        journal.append("value", {"v": too_deep})
    assert len(journal) == 0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"x": [math.nan]},
                                 "\ud83d\ude00"])
def test_values_json_cannot_carry_are_refused_the_same_everywhere(store: Store,
                                                                  bad: Any) -> None:
    sid = uuid.uuid4().hex
    journal = Journal(sid, store=store)
    with pytest.raises(JournalValueError) as refused:
        journal.append("value", {"v": bad})
    assert "journal" in str(refused.value) or "join it" in str(refused.value)
    journal.flush()
    assert store.read(sid) == []


def test_jsonb_rows_from_before_schema_3_are_unverifiable_not_tampered(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A schema-2 PostgreSQL store kept event data as JSONB, which rewrote 1e20 as an integer:
    after the upgrade such a row is reported as one that cannot be re-hashed, apart from
    tampering; rows JSONB did not change still verify, and new rows are exact."""
    import psycopg

    from tether.cli import main
    from tether.journal.chain import GENESIS, seal
    from tether.journal.tamper import diagnose
    from tether.store.postgres import MIGRATIONS, PostgresStore

    from conftest import PG_URL, unavailable

    schema = f"t_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(PG_URL, autocommit=True)
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL is not reachable ({exc}); TETHER_TEST_PG names the server")
    with admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"CREATE TABLE {schema}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        for number in (1, 2):
            for statement in MIGRATIONS[number]:
                admin.execute(statement.replace("{s}", schema))
        admin.execute(f"INSERT INTO {schema}.meta VALUES ('schema_version', '2')")
        for sid, value in (("floaty", 1e20), ("plain", 7)):
            prev, events = GENESIS, []
            for seq, data in enumerate([{"task": "t", "agent": "a", "subject": {}},
                                        {"v": value}, {"n": 1}], start=1):
                event = seal(prev, sid, (seq, "session.start" if seq == 1 else "x",
                                         1000.0 + seq, data))
                events.append(event)
                prev = event.hash
            for e in events:
                admin.execute(f"INSERT INTO {schema}.events VALUES (%s, %s, %s, %s, %s::jsonb, "
                              "%s, %s)", (sid, e.seq, e.type, e.timestamp, e.json_text,
                                          e.prev_hash, e.hash))
            admin.execute(f"INSERT INTO {schema}.sessions VALUES (%s, NULL, 'a', 1001, 1003, 3,"
                          " 'x')", (sid,))
    store = PostgresStore(PG_URL, schema=schema)
    try:
        floaty, plain = store.read("floaty"), store.read("plain")
        assert store.unverifiable("floaty") == frozenset({1, 2, 3})
        found = diagnose("floaty", floaty, recorded=3, unverifiable=store.unverifiable("floaty"))
        assert found is not None and found.kind == "unverifiable" and found.seq == 2
        assert "not evidence of tampering" in found.detail
        assert diagnose("plain", plain, recorded=3,
                        unverifiable=store.unverifiable("plain")) is None
        journal = Journal("floaty", store=store, history=floaty)
        journal.append("y", {"v": 1e20})
        journal.flush()
        assert store.unverifiable("floaty") == frozenset({1, 2, 3})  # the new row is exact
        assert main(["audit", "verify", "--store", f"{PG_URL}?schema={schema}"]) == 1
        out = capsys.readouterr().out
        assert "UNVERIFIABLE  floaty  seq 2" in out and "ok      plain" in out
        assert "0 broken, 1 unverifiable" in out
    finally:
        with store._pool.connection() as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
        store.close()
