"""A DBOS fleet obeys a halt as a native session does: its activation pauses the session
``halted`` (a finished workflow, not an error DBOS retries), no effect is made, and once the halt
is lifted, waking the session runs each effect exactly once.
"""

from __future__ import annotations

from conftest import import_or_unavailable

import_or_unavailable("dbos", "dbos")

import fleet_app  # noqa: E402, I001
from fleet_harness import Database, Workers, wait_until  # noqa: E402
from fleet_harness import database, fleet, workers  # noqa: E402, F401  (fixtures)
from tether.durable import Fleet  # noqa: E402
from tether.journal.chain import verify_chain  # noqa: E402
from tether.runtime import Identity, halt, unhalt  # noqa: E402
from tether.store.halts import HaltScope  # noqa: E402

OPS = Identity("ops", "test")


def test_a_halted_fleet_session_pauses_halted_is_not_retried_and_goes_on_once_after_unhalt(
        database: Database, fleet: Fleet, workers: Workers) -> None:  # noqa: F811
    store = fleet.recipe.journal_store
    made = halt(store, HaltScope(agent="fleet"), reason="incident 7", by=OPS)
    workers.start("w1", concurrency=2)
    halted = fleet.enqueue("record 3 effects")
    other = fleet.enqueue("record 2 effects")
    wait_until(lambda: [a.status for a in fleet.activations(halted)] == ["halted"],
               "the halted activation", 90)
    wait_until(lambda: [a.status for a in fleet.activations(other)] == ["halted"],
               "the other", 90)
    assert [a.state for a in fleet.activations(halted)] == ["SUCCESS"]  # not an ERROR
    assert fleet_app.ledger_rows(database.ledger) == []  # no effect made under the halt
    events = store.read(halted)  # type: ignore[union-attr]
    [record] = [e.data for e in events if e.type == "session.halted"]
    assert record["halt"]["id"] == made.id and record["halt"]["by"] == "ops"
    assert events[-1].type == "session.paused" and events[-1].data["reason"] == "halted"
    # woken while the halt stands: refused again, still no effect, still not a failure
    fleet.wake(halted)
    wait_until(lambda: len(fleet.activations(halted)) == 2
               and fleet.activations(halted)[-1].state == "SUCCESS", "the second activation", 90)
    assert fleet.activations(halted)[-1].status == "halted"
    assert fleet_app.ledger_rows(database.ledger) == []
    unhalt(store, made.id, by=OPS)
    fleet.wake(halted)
    wait_until(lambda: fleet.status(halted) == "finished", "the session after unhalt", 90)
    assert sorted(n for s, n in fleet_app.ledger_rows(database.ledger) if s == halted) == \
        [0, 1, 2]
    assert verify_chain(store.read(halted)) is None  # type: ignore[union-attr]
