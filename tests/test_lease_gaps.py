"""A session's lease holds while its run outlives the ttl, and is free the moment it pauses.

Found untested by a mutation check: with lease renewal switched off, or a pause that kept the
lease, the suite still passed. Time here is the stores' wall clock (by which a lease expires),
replaced by a clock the test moves by hand; the test then waits on the renewals themselves
(events), never on a sleep, so a loaded machine changes nothing. Memory, SQLite, PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from test_guarantee_mechanisms import NeedsApproval
from tether import Agent, ReAct, Result, ScriptedModel, StopReason, tool
from tether.store.base import Lease, SessionBusy, Store, StoreError

from conftest import call

TTL = 0.3  # seconds of real time between renewals: TTL / 3; expiry is on the test's clock
RIVAL = "elsewhere:2:rival"


class HandMovedClock:
    """The stores' ``time`` module, except that ``time()`` is a wall clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> HandMovedClock:
    """Every store's lease expiry (set, checked, reported) on one hand-moved clock."""
    import tether.store.base
    import tether.store.memory
    import tether.store.postgres
    import tether.store.postgres_leases
    import tether.store.sqlite

    moved = HandMovedClock()
    for module in (tether.store.base, tether.store.memory, tether.store.sqlite,
                   tether.store.postgres, tether.store.postgres_leases):
        monkeypatch.setattr(module, "time", moved)
    return moved


def _renewals(store: Store, monkeypatch: pytest.MonkeyPatch,
              failures: list[StoreError]) -> threading.Event:
    """An event set by every renewal the store makes; the first ``len(failures)`` renewals
    raise those errors instead (the store unreachable for a moment)."""
    renewed = threading.Event()
    renew = store.renew

    def renewing(session_id: str, lease: Lease) -> None:
        if failures:
            raise failures.pop()
        renew(session_id, lease)
        renewed.set()

    monkeypatch.setattr(store, "renew", renewing)
    return renewed


def _rival_takes(store: Store, session_id: str) -> str:
    try:
        store.acquire(session_id, RIVAL, 60.0)
    except SessionBusy:
        return "refused"
    return "taken"


def _outlive_the_ttl(store: Store, clock: HandMovedClock, renewed: threading.Event,
                     rounds: int, also: Callable[[Agent, str], str] | None = None
                     ) -> tuple[Result, list[str], str]:
    """Run a session whose one tool moves the clock 2/3 of the ttl ``rounds`` times, waiting
    after each move for a renewal, then asking whether a rival could take the lease (and then
    ``also``, if given). Returns the result, what the rival got each round, and the session."""
    seen: list[str] = []
    session_id: list[str] = []

    @tool(side_effect=True)
    def long_job() -> str:
        """A job that outlives the lease's ttl."""
        for _ in range(rounds):
            renewed.clear()
            clock.now += TTL * 2 / 3  # without a renewal since, the lease lapses at the next move
            assert renewed.wait(20), "the lease was not renewed while the run went on"
            seen.append(_rival_takes(store, session_id[0]))
        if also is not None:
            seen.append(also(agent, session_id[0]))
        return "done"

    agent = Agent(model=ScriptedModel([call("long_job", {}), "finished"]), reasoning=ReAct(),
                  tools=[long_job], store=store, lease_ttl=TTL)
    session = agent.session("run the long job")
    session_id.append(session.id)
    result = session.run()
    assert result.trajectory.steps[0].results[0].content == "done", result
    return result, seen, session.id


def _resume(agent: Agent, session_id: str) -> str:
    try:
        agent.load(session_id).resume()
    except SessionBusy:
        return "resume refused"
    return "resumed"


def test_a_run_longer_than_its_lease_ttl_keeps_its_lease_and_a_rival_is_refused(
        store: Store, clock: HandMovedClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Breaks it: no renewal timer in ``leased`` (or one that renews once only)."""
    renewed = _renewals(store, monkeypatch, [])
    result, seen, session_id = _outlive_the_ttl(store, clock, renewed, 4, also=_resume)
    assert result.stop_reason is StopReason.FINISHED, result.stop_detail
    # 2.7 ttls of the clock went by: only renewals explain it
    assert seen == ["refused"] * 4 + ["resume refused"]
    assert _rival_takes(store, session_id) == "taken"  # its end let the lease go


def test_a_renewal_that_fails_once_is_retried_and_the_lease_kept(
        store: Store, clock: HandMovedClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store is unreachable for one renewal (a restart, a failover): the next one still
    comes, and the lease outlives several ttls. Breaks it: renewals stopping at the first
    StoreError, as they did (the run then lost its session to whoever asked after one ttl)."""
    failures = [StoreError("the database is restarting")]
    renewed = _renewals(store, monkeypatch, failures)
    result, seen, _ = _outlive_the_ttl(store, clock, renewed, 3)
    assert result.stop_reason is StopReason.FINISHED, result.stop_detail
    assert failures == [] and seen == ["refused"] * 3


def test_a_renewal_is_never_made_on_the_event_loop(
        store: Store, clock: HandMovedClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's own committer (PostgreSQL) may hold the session's row between writing it and
    committing; a renewal blocking the loop on that row's lock waits for a commit only the loop
    can make. Found as a hang in a full run under load. Breaks it: ``store.renew`` called from
    the loop's timer, as it was."""
    renewed = _renewals(store, monkeypatch, [])
    on_loop: list[bool] = []
    renew = store.renew

    def where(session_id: str, lease: Lease) -> None:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        renew(session_id, lease)

    monkeypatch.setattr(store, "renew", where)
    result, seen, _ = _outlive_the_ttl(store, clock, renewed, 2)
    assert result.stop_reason is StopReason.FINISHED, result.stop_detail
    assert seen == ["refused"] * 2 and on_loop and not any(on_loop)


def _paying_worker(store: Store, paid: list[str]) -> Callable[[], Agent]:
    """Workers of one recipe: the model pays once (a call that needs approval), then answers."""

    @tool(side_effect=True)
    def pay() -> str:
        """Pay."""
        paid.append("A")
        return "paid"

    def worker() -> Agent:
        return Agent(model=ScriptedModel([call("pay", {}), "paid"]), reasoning=ReAct(),
                     tools=[pay], store=store, policy=NeedsApproval(), lease_ttl=600.0)

    return worker


def test_a_paused_sessions_lease_is_free_at_once(store: Store, clock: HandMovedClock) -> None:
    """Breaks it: the pause's write keeps the lease's expiry (``flush(last=True)``)."""
    paid: list[str] = []
    worker = _paying_worker(store, paid)

    first = worker()
    session = first.session("pay")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    lease = store.acquire(session.id, RIVAL, 60.0)  # no time went by: only a release explains it
    assert lease.token == 2
    store.release(session.id, lease)
    (request,) = first.approval_store.pending(session.id)
    first.approval_store.approve(request.id, approver="maria")
    assert worker().resume(session.id).stop_reason is StopReason.FINISHED  # another worker
    assert paid == ["A"]


def test_a_session_loaded_before_another_worker_wrote_it_is_refused_not_forked(
        store: Store) -> None:
    """Loading a session and acquiring its lease are two steps: another worker may write the
    session between them and let its lease lapse (a pause, an end). The stale copy must not run
    on from what it loaded — its first append would conflict at best, and the fleet's
    activation would fail — it is refused at the acquire, and a fresh load sees the truth."""
    from tether.store.base import SessionMoved

    paid: list[str] = []
    worker = _paying_worker(store, paid)

    first = worker()
    session = first.session("pay")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    stale = worker().load(session.id)  # loaded while paused...
    (request,) = first.approval_store.pending(session.id)
    first.approval_store.approve(request.id, approver="maria")
    assert first.resume(session.id).stop_reason is StopReason.FINISHED  # ...then run elsewhere
    written = store.read(session.id)
    with pytest.raises(SessionMoved, match="load it again"):
        stale.resume()
    assert store.read(session.id) == written and paid == ["A"]
    lease = store.acquire(session.id, RIVAL, 60.0)  # the refused resume kept no lease
    store.release(session.id, lease)
