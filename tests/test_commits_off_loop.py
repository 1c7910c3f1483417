"""A store that commits over a network never holds the event loop: the commits of different
sessions overlap, while every ordering guarantee stays — the flush before a side effect completes
before the effect starts, and a session's appends stay in order."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.store.memory import MemoryStore
from tether.types import Event

COMMIT = 0.05  # seconds each commit takes, as a network round trip would


class SlowCommits(MemoryStore):
    """The memory store, with a commit that blocks its thread the way a remote one does, and
    appends awaited by the async runtime (``append_async``) as PostgreSQL's are."""

    async def append_async(self, *args: Any) -> None:
        await asyncio.to_thread(self.append, *args)

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, int, str, float, float]] = []  # sid, first seq, types...
        self.in_flight = 0
        self.most_in_flight = 0
        self._count = threading.Lock()

    def append(self, session_id: str, events: Sequence[Event], *args: Any,
               **kwargs: Any) -> None:
        with self._count:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        started = time.monotonic()
        time.sleep(COMMIT)
        try:
            super().append(session_id, events, *args, **kwargs)
        finally:
            with self._count:
                self.in_flight -= 1
        kinds = ",".join(e.type for e in events)
        self.log.append((session_id, events[0].seq, kinds, started, time.monotonic()))


async def test_commits_of_different_sessions_overlap_and_each_session_keeps_its_order() -> None:
    effects: list[tuple[str, float]] = []

    @tool(side_effect=True)
    async def pay(session_id: str, n: int) -> str:
        """Pay."""
        effects.append((session_id, time.monotonic()))
        return "paid"

    script = [ModelResponse(tool_calls=(ToolCall(f"c{i}", "pay", {"n": i}),)) for i in range(3)]
    store = SlowCommits()
    agent = Agent(model=ScriptedModel([*script, "done"]), reasoning=ReAct(), tools=[pay],
                  store=store)
    sessions = [agent.session("pay three times") for _ in range(8)]
    started = time.monotonic()
    results = await asyncio.gather(*(s.arun() for s in sessions))
    elapsed = time.monotonic() - started
    assert all(r.stop_reason == "finished" for r in results)
    commits_per_session = len(store.log) // len(sessions)
    serial = commits_per_session * len(sessions) * COMMIT
    assert store.most_in_flight > 1  # commits of different sessions overlapped...
    assert elapsed < serial / 2, (elapsed, serial)  # ...so the run took far less than in turn
    for session in sessions:
        mine = [entry for entry in store.log if entry[0] == session.id]
        seqs = [first for _, first, _, _, _ in mine]
        assert seqs == sorted(seqs)  # a session's appends in order
        assert [e.seq for e in store.read(session.id)] == list(
            range(1, len(store.read(session.id)) + 1))
        started_done = [end for _, _, kinds, _, end in mine if "tool.started" in kinds]
        paid = [at for sid, at in effects if sid == session.id]
        assert len(started_done) == len(paid) == 3
        for durable, effect in zip(started_done, paid, strict=True):
            assert durable <= effect  # the start was durable before the effect happened


async def test_a_cancel_during_the_end_write_leaves_the_session_ended_not_paused() -> None:
    """The end's write is awaited, so a cancel (SIGINT, a worker told to stop) can land while it
    is in flight: the write completes all the same, the session is ended — no pause after its
    end, its undecided approvals expire — and the canceller still gets its cancellation."""
    from tether.runtime.approvals.requests import new_request

    writing_end, let_it_land = asyncio.Event(), asyncio.Event()

    class GatedEnd(MemoryStore):
        async def append_async(self, session_id: str, events: Sequence[Event],
                               *args: Any) -> None:
            if any(e.type == "session.end" for e in events):
                writing_end.set()
                await let_it_land.wait()
            self.append(session_id, events, *args)

    store = GatedEnd()
    agent = Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), store=store)
    session = agent.session("answer")
    task = asyncio.ensure_future(session.arun())
    await writing_end.wait()
    left = new_request(session_id=session.id, bound_to=session.id, call_id="c9", tool="pay",
                       shown={}, arguments={}, reason="big", policy_id="p", ttl=3600)
    agent.approvals.add(left)
    session._state.may_have_approvals = True  # as if the session had asked for it
    task.cancel()
    let_it_land.set()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the canceller's cancellation was swallowed")
    types = [e.type for e in store.read(session.id)]
    assert types[-1] == "session.end" and "session.paused" not in types
    assert session.verify() is None
    (request,) = agent.approvals.every(session.id)
    assert request.expired()
