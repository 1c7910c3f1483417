"""Threads whose sessions overlap keep every turn: a continuation sees every turn that had
ended when it started (question and answer), in the thread's order, whatever overlapped; a turn
still running is not shown to it; and a session resumed after a pause still sees the history it
started with. Overlaps are made with events, never with timing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, StopReason
from tether.knowledge import ConversationStore
from tether.runtime.lifecycle.thread import History
from tether.store.base import Store, StoreUnavailable
from tether.store.memory import MemoryStore
from thread_payments import PaymentsNeedApproval, pay

from conftest import PG_URL, call

WAIT = 60  # seconds: only a guard against a hang, never a timing margin


class Gated:
    """A model that answers "answer to <task>", and holds the session whose task is gated until
    the test releases it (after telling the test that session has joined its thread and asked).
    Keeps, per task, the conversation it was sent first (the history the session started from)."""

    def __init__(self) -> None:
        self.asked: dict[str, threading.Event] = {}
        self.release: dict[str, threading.Event] = {}
        self.seen: dict[str, list[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    def gate(self, task: str) -> None:
        self.asked[task], self.release[task] = threading.Event(), threading.Event()

    def __call__(self, request: ModelRequest) -> ModelResponse:
        task = request.messages[-1].content
        with self._lock:
            self.seen.setdefault(task, [(m.role, m.content) for m in request.messages
                                        if m.role != "system"][:-1])
        if task in self.asked:
            self.asked[task].set()
            assert self.release[task].wait(WAIT), f"{task} was never released"
        return ModelResponse(text=f"answer to {task}")


def qa(*tasks: str) -> list[tuple[str, str]]:
    """The history a session is shown after the turns of ``tasks``, in that order."""
    return [m for t in tasks for m in (("user", t), ("assistant", f"answer to {t}"))]


@contextmanager
def running(agent: Agent, model: Gated, task: str, **who: Any) -> Iterator[threading.Event]:
    """Run ``task`` in a thread, held by the model once it has joined the thread and asked;
    the test sets the yielded event to let it end, and the session has ended on exit."""
    model.gate(task)
    worker = threading.Thread(target=agent.run, args=(task,), kwargs=who)
    worker.start()
    try:
        assert model.asked[task].wait(WAIT)
        yield model.release[task]
    finally:
        model.release[task].set()
        worker.join()


WHO: dict[str, Any] = {"user_id": "u1", "tenant_id": "acme", "thread": "chat"}


def test_a_turn_that_ends_while_the_thread_went_on_is_not_lost(store: Store) -> None:
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    with running(agent, model, "A: what is my balance?", **WHO):
        agent.run("B: and my card limit?", **WHO)  # B continues while A is still running
        assert model.seen["B: and my card limit?"] == []  # A had not ended: B is not shown it
    # C, after both ended, sees A's question AND its answer, and B's: in the order they ended
    agent.run("C: thanks", **WHO)
    assert model.seen["C: thanks"] == qa("B: and my card limit?", "A: what is my balance?")
    turns = ConversationStore(store).turns("chat", tenant_id="acme", user_id="u1")
    assert [(t.user, t.assistant) for t in turns] == [
        (t, f"answer to {t}") for t in ("B: and my card limit?", "A: what is my balance?",
                                        "C: thanks")]


def test_a_turn_takes_its_place_after_what_was_shown_before_it_ended(store: Store) -> None:
    """The thread's order: a turn comes after every turn a session was shown while it ran, so
    no session's history is ever rewritten by a turn that ended later."""
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    with running(agent, model, "A", **WHO):
        agent.run("B", **WHO)
        agent.run("C", **WHO)  # A still running: C is shown B only
    agent.run("D", **WHO)
    assert model.seen["C"] == qa("B")
    assert model.seen["D"] == qa("B", "C", "A")  # A ended after C was shown the thread
    turns = ConversationStore(store).turns("chat", tenant_id="acme", user_id="u1")
    assert [t.user for t in turns] == ["B", "C", "A", "D"]


def test_eight_sessions_overlapping_on_one_thread_all_count(store: Store) -> None:
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    all_joined = threading.Barrier(8)

    def held(request: ModelRequest) -> ModelResponse:  # every one joined before any ends
        all_joined.wait(WAIT)
        return model(request)

    overlapping = Agent(model=ScriptedModel(held), reasoning=ReAct(), store=store)
    workers = [threading.Thread(target=overlapping.run, args=(f"q{i}",), kwargs=WHO)
               for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    agent.run("next", **WHO)
    turns = ConversationStore(store).turns("chat", tenant_id="acme", user_id="u1")
    assert sorted(t.user for t in turns[:8]) == [f"q{i}" for i in range(8)]
    assert turns[-1].user == "next" and len(turns) == 9
    assert model.seen["next"] == qa(*(t.user for t in turns[:8]))  # in the thread's order


def test_rounds_of_concurrent_sessions_lose_no_turn(store: Store) -> None:
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    asked: list[str] = []
    for round_ in range(3):
        tasks = [f"r{round_}q{i}" for i in range(6)]
        workers = [threading.Thread(target=agent.run, args=(t,), kwargs=WHO) for t in tasks]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        asked += tasks
        check = f"after round {round_}"
        agent.run(check, **WHO)
        assert sorted(c for _, c in model.seen[check][::2]) == sorted(asked)
        assert model.seen[check] == qa(*(c for _, c in model.seen[check][::2]))
        asked.append(check)


def own_connection(store: Store) -> Store:
    """Another worker's store object on the same database (its own connection)."""
    from tether.store.postgres import PostgresStore
    from tether.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    if isinstance(store, PostgresStore):
        return PostgresStore(PG_URL, schema=store.schema)
    return store  # one process's memory


def test_workers_with_their_own_connections_lose_no_turn(store: Store) -> None:
    model = Gated()
    workers = [own_connection(store) for _ in range(6)]
    all_joined = threading.Barrier(6)

    def held(request: ModelRequest) -> ModelResponse:
        all_joined.wait(WAIT)
        return model(request)

    try:
        for round_ in range(2):
            runs = [threading.Thread(target=Agent(model=ScriptedModel(held), reasoning=ReAct(),
                                                  store=w).run,
                                     args=(f"r{round_}w{i}",), kwargs=WHO)
                    for i, w in enumerate(workers)]
            for r in runs:
                r.start()
            for r in runs:
                r.join()
        Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store).run("check", **WHO)
        shown = [c for _, c in model.seen["check"][::2]]
        assert sorted(shown) == sorted(f"r{r}w{i}" for r in range(2) for i in range(6))
        # the second round was shown the first, whole, in the order of the thread
        assert all(model.seen[f"r1w{i}"] == qa(*shown[:6]) for i in range(6))
    finally:
        for w in workers:
            if w is not store:
                w.close()


def test_a_turn_whose_place_was_not_recorded_at_its_end_is_placed_by_the_next_session(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store fails between a session's end and its place in the history (an outage; a
    crash there is the same): the session still ends, and the next one is shown its turn."""
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)

    def down(*args: Any) -> None:
        raise StoreUnavailable(store.url, "connection refused")

    with monkeypatch.context() as patched:
        patched.setattr(store, "end_turns", down)
        assert agent.run("A", **WHO).answer == "answer to A"
    memory = ConversationStore(store)
    assert [t.user for t in memory.turns("chat", tenant_id="acme", user_id="u1")] == ["A"]
    with running(agent, model, "B", **WHO):
        assert model.seen["B"] == qa("A")
        agent.run("C", **WHO)  # placed once, by B: C is shown A in the same place
    agent.run("D", **WHO)
    assert model.seen["C"] == qa("A")
    assert model.seen["D"] == qa("A", "C", "B")


def test_a_turns_place_in_the_history_is_given_once(store: Store) -> None:
    for i in range(8):
        store.join_thread("acme", "u1", "t", f"s{i}")
    gate = threading.Barrier(8)

    def end(i: int) -> None:  # the session's own end and a late reader's, at once
        gate.wait(WAIT)
        store.end_turns("acme", "u1", "t", [f"s{i}", f"s{(i + 1) % 8}"])

    workers = [threading.Thread(target=end, args=(i,)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    placed = {e.session_id: e.ended for e in store.thread_entries("acme", "u1", "t")}
    assert sorted(placed.values()) == list(range(1, 9))  # type: ignore[type-var]
    store.join_thread("acme", "u1", "t", "late")
    store.end_turns("acme", "u1", "t", ["s3", "late", "s5"])  # placed ones keep their place
    again = {e.session_id: e.ended for e in store.thread_entries("acme", "u1", "t")}
    assert again == {**placed, "late": 9}
    # another user's thread of the same id has places of its own
    store.join_thread("acme", "u2", "t", "other")
    store.end_turns("acme", "u2", "t", ["other"])
    assert [e.ended for e in store.thread_entries("acme", "u2", "t")] == [1]


def test_a_long_thread_is_continued_from_the_journal_of_its_last_turn(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cost: the last turn's start holds the turns before it (verified with its journal), so a
    session joining a thread whose sessions did not overlap reads one earlier journal, not
    every one (which grew with the square of the thread)."""
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    for i in range(12):
        agent.run(f"q{i}", **WHO)
    read, reads = store.read, []

    def counted(session_id: str, after_seq: int = 0) -> Any:
        reads.append(session_id)
        return read(session_id, after_seq)

    monkeypatch.setattr(store, "read", counted)
    last = store.thread_entries("acme", "u1", "chat")[-1].session_id
    new = agent.run("q12", **WHO).session_id
    assert set(reads) - {new} == {last}
    assert model.seen["q12"] == qa(*(f"q{i}" for i in range(12)))


def test_a_pruned_turn_is_not_shown_again_from_a_later_starts_copy(store: Store) -> None:
    import time

    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    agent.run("old", **WHO)
    cutoff = time.time()
    agent.run("kept", **WHO)
    agent.run("latest", **WHO)  # its start holds "old" and "kept"
    assert store.prune(cutoff) == 1
    agent.run("now", **WHO)
    assert model.seen["now"] == qa("kept", "latest")


def test_a_start_journaled_by_an_earlier_tether_is_not_taken_as_the_history(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before this order, a start held a running turn's question without its answer: a store
    written then is read turn by turn, so that turn is shown with its answer once it ended."""
    from tether.runtime.lifecycle import opening

    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)

    def start(task: str) -> threading.Thread:
        model.gate(task)
        worker = threading.Thread(target=agent.run, args=(task,), kwargs=WHO)
        worker.start()
        assert model.asked[task].wait(WAIT)
        return worker

    a_run = start("A")
    (a,) = store.thread_entries("acme", "u1", "chat")

    def as_before(session: Any, thread_id: str) -> History:
        place = store.join_thread("acme", "u1", thread_id, session.id)  # no "order"
        return History([], (), {"id": thread_id, "position": place, "history": [
            {"session": a.session_id, "position": 1, "user": "A", "assistant": ""}]})

    with monkeypatch.context() as patched:
        patched.setattr(opening, "_join", as_before)
        b_run = start("B")
    for task, worker in (("A", a_run), ("B", b_run)):  # A ends first: B's turn is the last
        model.release[task].set()
        worker.join()
    agent.run("C", **WHO)
    assert model.seen["B"] == [("user", "A")]
    assert model.seen["C"] == qa("A", "B")


def test_a_session_resumed_after_a_pause_sees_the_history_it_started_with(store: Store) -> None:
    model = Gated()
    plain = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    plain.run("first", **WHO)
    sent: list[list[tuple[str, str]]] = []

    def payer(request: ModelRequest) -> ModelResponse:
        sent.append([(m.role, m.content) for m in request.messages if m.role != "system"])
        if not any(m.role == "tool" for m in request.messages):
            return call("pay", {"account": "A"})
        return ModelResponse(text="paid")

    def paying() -> Agent:  # a new recipe object, as `tether resume` and a fleet worker make
        return Agent(model=ScriptedModel(payer), reasoning=ReAct(), tools=[pay],
                     policy=PaymentsNeedApproval(), store=store)

    paused = paying().session("pay A", **WHO)
    assert paused.run().stop_reason is StopReason.NEEDS_APPROVAL
    plain.run("meanwhile", **WHO)  # a paused turn has not ended: not shown
    assert model.seen["meanwhile"] == qa("first")
    (request,) = paused.pending_approvals()
    resumer = paying()
    resumer.approvals.approve(request.id, approver="alice")
    assert resumer.resume(paused.id).answer == "paid"
    assert sent[-1][:3] == [*qa("first"), ("user", "pay A")]  # what it started with, no more
    plain.run("last", **WHO)
    assert model.seen["last"] == [*qa("first", "meanwhile"), ("user", "pay A"),
                                  ("assistant", "paid")]  # in the order the turns ended


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(list(range(5))), st.permutations(list(range(5))),
       st.lists(st.integers(0, 9), min_size=5, max_size=5))
def test_every_history_holds_exactly_what_had_ended_and_extends_the_ones_before(
        starts: list[int], ends: list[int], shifts: list[int]) -> None:
    """Any schedule of five overlapping sessions: each is shown exactly the turns that had
    ended when it started, and each history is a prefix of every later one."""
    store = MemoryStore()
    model = Gated()
    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), store=store)
    # an order of operations: each session starts before it ends, otherwise as drawn
    ops: list[tuple[str, int]] = [("start", s) for s in starts]
    for i, e in enumerate(ends):
        at = max(ops.index(("start", e)) + 1, min(len(ops), shifts[i] + i))
        ops.insert(at, ("end", e))
    ended: list[str] = []
    expected: dict[str, set[str]] = {}
    workers: dict[int, threading.Thread] = {}
    for op, i in ops:
        task = f"s{i}"
        if op == "start":
            expected[task] = set(ended)
            model.gate(task)
            workers[i] = threading.Thread(target=agent.run, args=(task,), kwargs=WHO)
            workers[i].start()
            assert model.asked[task].wait(WAIT)
        else:
            model.release[task].set()
            workers[i].join()
            ended.append(task)
    histories = {t: [c for _, c in model.seen[t][::2]] for t in expected}
    for task, shown in histories.items():
        assert set(shown) == expected[task]
        assert model.seen[task] == qa(*shown)
    for a in histories.values():
        for b in histories.values():
            shorter, longer = sorted((a, b), key=len)
            assert longer[:len(shorter)] == shorter
