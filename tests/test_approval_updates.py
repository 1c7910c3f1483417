"""An approval's update is a compare-and-set, also when it is tried again: a decision reports
failure when someone else changed the approval meanwhile, and success only when its own try
went through (memory, SQLite, PostgreSQL; on PostgreSQL, whose store tries a write again after
a lost connection, with the connection lost before the commit and after it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tether.store.base import Store

from conftest import PG_URL

OURS = {"status": "approved", "approver": "ops", "note": "checked", "decided_at": 2.0}
RIVALS = {  # what someone else did to the approval while ours was in flight
    "another approver approved": ("pending", {"status": "approved", "approver": "mallory",
                                              "note": "", "decided_at": 1.0}),
    "another approver denied": ("pending", {"status": "denied", "approver": "ops",
                                            "note": "checked", "decided_at": 2.0}),
    "it expired": ("pending", {"expires_at": 0.0, "note": "the session ended"}),
}


def pending(store: Store, approval_id: str = "apr_1") -> None:
    store.put_approval({"id": approval_id, "session_id": "s1", "status": "pending",
                        "tool": "pay", "note": ""})


@pytest.mark.parametrize("rival", sorted(RIVALS))
def test_a_decision_on_an_approval_someone_else_changed_reports_failure(
        store: Store, rival: str) -> None:
    pending(store)
    expected, changes = RIVALS[rival]
    assert store.update_approval("apr_1", expected, changes)
    before = store.get_approval("apr_1")
    if changes.get("status", "pending") == "pending":  # still pending: ours may go through
        assert store.update_approval("apr_1", "pending", OURS)
        return
    assert not store.update_approval("apr_1", "pending", OURS)
    assert store.get_approval("apr_1") == before


ON_POSTGRES = pytest.mark.parametrize("store", ["postgres"], indirect=True)  # conftest's


def losing_the_first_try(pg: Any, when: str, meanwhile: Any) -> None:
    """Make the store's next operation lose its connection on its first try, ``when`` "before
    commit" or "after commit" (the reply lost), calling ``meanwhile()`` before the retry."""
    import psycopg

    real = pg._connection
    armed = [True]

    @contextlib.contextmanager
    def connection() -> Iterator[Any]:
        first = armed[0] and not pg._ride.retrying()
        armed[0] = armed[0] and not first
        if first and when == "before commit":
            meanwhile()
            raise psycopg.OperationalError("connection refused")
        with real() as db:
            yield db
        if first:  # the commit reached the server; its reply did not
            meanwhile()
            raise psycopg.OperationalError("server closed the connection unexpectedly")

    pg._connection = connection


@ON_POSTGRES
@pytest.mark.parametrize("rival", sorted(RIVALS))
def test_a_retried_decision_reports_failure_when_someone_else_changed_it_before_the_retry(
        store: Any, rival: str) -> None:
    pg = store
    from tether.store.postgres import PostgresStore

    pending(pg)
    other = PostgresStore(PG_URL, schema=pg.schema)  # another process on the same store
    expected, changes = RIVALS[rival]
    try:
        losing_the_first_try(pg, "before commit",
                             lambda: other.update_approval("apr_1", expected, changes))
        won = pg.update_approval("apr_1", "pending", OURS)
        stored = other.get_approval("apr_1")
    finally:
        other.close()
    assert stored is not None
    if changes.get("status", "pending") == "pending":  # still pending: ours went through
        assert won and stored["approver"] == "ops"
    else:  # the retry must not take the rival's decision for its own
        assert not won, f"{rival}: the retry reported success"
        assert {k: stored[k] for k in changes} == changes


@ON_POSTGRES
def test_a_retried_decision_whose_first_try_was_committed_reports_success(store: Any) -> None:
    pg = store
    pending(pg)
    losing_the_first_try(pg, "after commit", lambda: None)
    assert pg.update_approval("apr_1", "pending", OURS)
    stored = pg.get_approval("apr_1")
    assert stored is not None and {k: stored[k] for k in OURS} == OURS


@ON_POSTGRES
def test_a_retried_decision_committed_then_used_before_the_retry_reports_success(
        store: Any) -> None:
    """The approval went through, its reply was lost, and the session used the approval before
    the approver's store tried again: the decision was the approver's, not someone else's."""
    pg = store
    pending(pg)
    used = {"status": "used", "used_by": "s1/c1"}
    losing_the_first_try(pg, "after commit",
                         lambda: pg.update_approval("apr_1", "approved", used))
    assert pg.update_approval("apr_1", "pending", OURS)
    stored = pg.get_approval("apr_1")
    assert stored is not None and stored["status"] == "used" and stored["approver"] == "ops"
