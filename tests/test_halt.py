"""A halt, one mechanism at a time: the store's refusal of a covered start (every store), the
session's pause, resume refused then exactly once after unhalt, the watch that stops model calls
and read-only calls, the tenancy of a halt, a halt issued while the worker was down, and the
command line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.cli import main
from tether.errors import InvalidArgument, NotFound
from tether.journal.chain import Journal, verify_chain
from tether.runtime import Identity, halt, standing_halts, unhalt
from tether.runtime.chokepoint import halts as halting
from tether.runtime.chokepoint.halts import PERIOD, HaltWatch, watch_of
from tether.runtime.lifecycle.session import SessionEnded
from tether.store.base import Store
from tether.store.halts import Halted, HaltScope
from tether.store.sqlite import SQLiteStore
from tether.vocabulary import EventType

OPS = Identity("ops", "test")
ROOT = Path(__file__).resolve().parents[1]


def started_journal(store: Store, tenant: str, agent: str = "a") -> Journal:
    journal = Journal(f"s-{tenant}-{agent}", store=store)
    journal.append(EventType.SESSION_START, {"subject": {"tenant_id": tenant}, "agent": agent})
    journal.flush()
    return journal


def test_the_store_refuses_a_covered_start_and_only_that(store: Store) -> None:
    acme, other = started_journal(store, "acme"), started_journal(store, "other")
    made = halt(store, HaltScope(tenant_id="acme"), reason="incident", by=OPS)
    acme.append(EventType.TOOL_STARTED, {"call_id": "c1", "tool": "pay"})
    with pytest.raises(Halted) as refused:
        acme.flush()
    assert refused.value.halt.id == made.id and "tether unhalt --id" in str(refused.value)
    assert [e.type for e in store.read(acme.session_id)] == ["session.start"]  # nothing written
    other.append(EventType.TOOL_STARTED, {"call_id": "c1", "tool": "pay"})
    other.flush()  # another tenant's start commits
    acme.retract_unstored(EventType.TOOL_STARTED)
    acme.append(EventType.SESSION_NOTE, {"text": "what is not a start commits under a halt"})
    acme.flush()
    assert [h.id for h in standing_halts(store)] == [made.id]
    unhalt(store, made.id, by=OPS)
    acme.append(EventType.TOOL_STARTED, {"call_id": "c1", "tool": "pay"})
    acme.flush()
    assert [e.type for e in store.read(acme.session_id)][-1] == "tool.started"
    assert verify_chain(store.read(acme.session_id)) is None
    assert standing_halts(store) == [] and len(store.list_halts(standing=False)) == 1


@pytest.mark.parametrize("scope,covered", [
    (HaltScope(), {"acme/a", "acme/b", "other/a"}),
    (HaltScope(agent="a"), {"acme/a", "other/a"}),
    (HaltScope(agent="a", tenant_id="acme"), {"acme/a"}),
    (HaltScope(session_id="s-other-a"), {"other/a"})])
def test_a_halt_covers_exactly_the_sessions_its_scope_names(
        store: Store, scope: HaltScope, covered: set[str]) -> None:
    journals = {f"{t}/{a}": started_journal(store, t, a)
                for t, a in (("acme", "a"), ("acme", "b"), ("other", "a"))}
    halt(store, scope, by=OPS)
    refused = set()
    for name, journal in journals.items():
        journal.append(EventType.TOOL_STARTED, {"call_id": "c1", "tool": "pay"})
        try:
            journal.flush()
        except Halted:
            refused.add(name)
    assert refused == covered


class HaltWhileDeciding:
    """A policy during whose decision an operator halts the session's tenant: the halt commits
    after the decision, before the call's start is written (the watch cannot have seen it)."""

    inline = True

    def __init__(self, store: Store) -> None:
        self.store, self.halted = store, False

    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
        if not self.halted:
            self.halted = True
            halt(self.store, HaltScope(tenant_id="acme"), reason="stop the payments", by=OPS)
        return Decision(Effect.ALLOW, "ok", "p")


def paying(store: Store, ran: list[str], policy: Any = None, name: str = "payer") -> Agent:
    @tool(side_effect=True)
    async def pay(order: str) -> str:
        """Pay an order."""
        ran.append(order)
        return "paid"

    script = [ModelResponse(tool_calls=(ToolCall("c1", "pay", {"order": "o-1"}),)), "done"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[pay], store=store,
                 name=name, **({"policy": policy} if policy is not None else {}))


def test_a_halt_pauses_the_session_and_resume_goes_on_exactly_once_after_unhalt(
        store: Store) -> None:
    ran: list[str] = []
    agent = paying(store, ran, HaltWhileDeciding(store))
    session = agent.session("pay", tenant_id="acme")
    told: list[str] = []
    session.events.subscribe(lambda event: told.append(event.type))
    result = session.run()
    assert result.stop_reason.value == "halted" and ran == []
    assert "tool.started" not in told  # no subscriber was told of the start the store refused
    assert told == [e.type for e in store.read(session.id)]
    assert "tether unhalt" in result.notice and "stop the payments" in result.notice
    events = store.read(session.id)
    types = [e.type for e in events]
    assert "tool.started" not in types and types[-2:] == ["session.halted", "session.paused"]
    record = events[-2].data
    assert record["call_id"] == "c1" and record["halt"]["by"] == "ops"
    assert record["halt"]["reason"] == "stop the payments"
    [made] = standing_halts(store)
    for resume in (session.resume, lambda: agent.resume(session.id)):
        with pytest.raises(Halted) as refused:
            resume()
        assert made.id in str(refused.value) and "ops" in str(refused.value)
        assert f"tether unhalt --id {made.id}" in str(refused.value)
    assert ran == [] and len(store.read(session.id)) == len(events)  # refused: nothing written
    unhalt(store, scope=HaltScope(tenant_id="acme"), by=OPS)
    assert agent.resume(session.id).stop_reason.value == "finished"
    assert ran == ["o-1"]  # the decided call ran on resume, without a new decision, once
    with pytest.raises(SessionEnded):
        agent.resume(session.id)
    events = store.read(session.id)
    assert [e.type for e in events].count("tool.started") == 1
    assert [e.type for e in events].count("tool.decision") == 1
    assert verify_chain(events) is None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_watch_reads_the_store_at_most_once_a_period_and_sees_a_halt_within_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "w.db")
    started_journal(store, "acme")
    reads: list[int] = []
    version = store.halt_version

    def counted() -> int:
        reads.append(1)
        return version()

    monkeypatch.setattr(store, "halt_version", counted)
    clock = Clock()
    monkeypatch.setattr(halting.time, "monotonic", clock)
    watch = HaltWatch(store)
    assert watch.check("s-acme-a") is None and len(reads) == 1
    for _ in range(100):  # calls within a period: no read
        assert watch.check("s-acme-a") is None
    assert len(reads) == 1
    made = halt(store, HaltScope(tenant_id="acme"), by=OPS)
    clock.now += PERIOD - 0.01
    assert watch.check("s-acme-a") is None  # not read yet: inside the bound
    clock.now += 0.02
    found = watch.check("s-acme-a")
    assert found is not None and found.id == made.id and len(reads) == 2
    assert watch.check("s-other-a") is None  # another tenant's session is not covered
    assert PERIOD < halting.BOUND
    store.close()


def test_the_watch_remembers_a_bounded_number_of_sessions_and_reads_a_forgotten_one_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "w.db")
    started_journal(store, "acme")  # s-acme-a, stored
    monkeypatch.setattr(halting, "OWNERS", 3)
    watch = HaltWatch(store)
    watch.know("s-acme-a", "acme", "a")
    for n in range(10):  # a long-lived process starts many sessions
        watch.know(f"new-{n}", "globex", "a")
    assert len(watch._owners) == 3 and "s-acme-a" not in watch._owners
    made = halt(store, HaltScope(tenant_id="acme"), by=OPS)
    watch.refresh()
    found = watch.check("s-acme-a")  # forgotten: its owner is read from the store again
    assert found is not None and found.id == made.id
    assert watch.check("new-9") is None
    store.close()


def test_model_calls_stop_at_the_watch_without_a_side_effect(store: Store) -> None:
    seen: list[int] = []

    @tool
    async def look(order: str) -> str:
        """Look an order up (read-only); an operator halts everything meanwhile."""
        if not seen:
            halt(store, by=OPS)
            watch = watch_of(store)
            assert watch is not None
            watch.refresh()  # as the period lapsing would
        seen.append(1)
        return "seen"

    script = [ModelResponse(tool_calls=(ToolCall(f"c{i}", "look", {"order": f"o{i}"}),))
              for i in range(5)] + ["done"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[look], store=store)
    session = agent.session("look")
    assert session.run().stop_reason.value == "halted"
    types = [e.type for e in store.read(session.id)]
    assert types.count("model.request") == 1 and seen == [1]  # no model call after the halt
    assert types[-2:] == ["session.halted", "session.paused"]


def test_read_only_calls_stop_at_the_watch(store: Store) -> None:
    looked: list[str] = []

    @tool
    async def look(order: str) -> str:
        """Look an order up (read-only)."""
        looked.append(order)
        return "seen"

    def model(request: Any) -> ModelResponse:  # halts while answering: the call it asks
        halt(store, by=OPS)  # for is the first thing after the halt
        watch = watch_of(store)
        assert watch is not None
        watch.refresh()
        return ModelResponse(tool_calls=(ToolCall("c1", "look", {"order": "o1"}),))

    agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), tools=[look], store=store)
    session = agent.session("look")
    assert session.run().stop_reason.value == "halted" and looked == []


def test_a_person_scoped_to_a_tenant_halts_only_there(store: Store) -> None:
    acme_ops = Identity("ann", "test", "acme")
    with pytest.raises(NotFound):
        halt(store, HaltScope(tenant_id="other"), by=acme_ops)
    made = halt(store, HaltScope(agent="a"), by=acme_ops)  # narrowed to acme
    assert made.scope == HaltScope(agent="a", tenant_id="acme")
    mine = halt(store, by=OPS)
    assert [h.id for h in standing_halts(store, acme_ops)] == [made.id]
    with pytest.raises(NotFound):
        unhalt(store, mine.id, by=acme_ops)  # not one of acme's
    with pytest.raises(InvalidArgument):
        unhalt(store, by=OPS)


def test_a_halt_issued_while_the_worker_is_down_holds_when_it_comes_back(
        tmp_path: Path) -> None:
    db, marker = tmp_path / "c.db", tmp_path / "marker"
    app = [sys.executable, str(ROOT / "tests" / "crash_app.py")]
    env = {"PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run([*app, "run", str(db), str(marker), "idempotent", "acme"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 9  # died inside its side effect: the worker is down
    session_id = run.stdout.split()[0]
    store = SQLiteStore(db)
    made = halt(store, HaltScope(tenant_id="acme"), reason="while down", by=OPS)
    back = subprocess.run([*app, "resume", str(db), str(marker), "idempotent", session_id],
                          capture_output=True, text=True, env=env, timeout=120)
    assert back.returncode != 0 and made.id in back.stderr and "tether unhalt" in back.stderr
    assert marker.read_text().split() == ["o-1"]  # the worker came back and ran nothing
    unhalt(store, made.id, by=OPS)
    again = subprocess.run([*app, "resume", str(db), str(marker), "idempotent", session_id],
                           capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and again.stdout.split()[0] == "finished"
    assert marker.read_text().split() == ["o-1", "o-1"]  # its declared-idempotent re-run, once
    store.close()


def test_the_command_line_halts_lists_and_lifts(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    SQLiteStore(tmp_path / "cli.db").close()
    assert main(["halt", "--store", url]) == 2  # no selector
    assert main(["halt", "--all", "--tenant", "acme", "--store", url]) == 2
    capsys.readouterr()
    assert main(["halt", "--tenant", "acme", "--reason", "incident 7", "--store", url]) == 0
    out = capsys.readouterr().out
    halt_id = out.split()[1]
    assert halt_id.startswith("halt_") and "tenant acme" in out and "incident 7" in out
    assert f"tether unhalt --id {halt_id}" in out
    assert main(["halts", "--store", url]) == 0
    assert halt_id in capsys.readouterr().out
    assert main(["unhalt", "--tenant", "other", "--store", url]) == 1
    assert main(["unhalt", "--tenant", "acme", "--store", url]) == 0
    assert "lifted" in capsys.readouterr().out
    assert main(["halts", "--store", url]) == 0
    assert "no standing halts" in capsys.readouterr().out
    assert main(["halts", "--lifted", "--store", url]) == 0
    assert halt_id in capsys.readouterr().out


@pytest.mark.parametrize("scope", [HaltScope(agent="payer"), HaltScope(tenant_id="acme")])
def test_a_session_begun_under_a_standing_halt_makes_no_call(store: Store,
                                                             scope: HaltScope) -> None:
    ran: list[str] = []
    agent = paying(store, ran)
    agent.session("warm the watch up", tenant_id="other").run()  # the watch has read: no halt
    made = halt(store, scope, by=OPS)
    session = agent.session("pay", tenant_id="acme")
    assert session.run().stop_reason.value == "halted" and ran == ["o-1"]  # the first's only
    types = [e.type for e in store.read(session.id)]
    assert "model.request" not in types and types[-2:] == ["session.halted", "session.paused"]
    assert store.read(session.id)[-2].data["halt"]["id"] == made.id


OWNERS = [(t, a) for t in ("t1", "t2", None) for a in ("a1", "a2", None)]


@given(st.builds(HaltScope, st.sampled_from([None, "s-t1-a1", "s-t2-None"]),
                 st.sampled_from([None, "a1", "a2"]), st.sampled_from([None, "t1", "t2"])))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_stores_sql_covers_exactly_the_sessions_the_scope_says(
        tmp_path_factory: pytest.TempPathFactory, scope: HaltScope) -> None:
    """SQLite's covering query and PostgreSQL's agree with ``HaltScope.covers``, for every
    scope over sessions with and without a tenant and an agent."""
    from conftest import postgres_store

    for store in (SQLiteStore(tmp_path_factory.mktemp("cover") / "c.db"), postgres_store()):
        try:
            for tenant, name in OWNERS:
                journal = Journal(f"s-{tenant}-{name}", store=store)
                journal.append(EventType.SESSION_START, {"subject": {"tenant_id": tenant},
                                                         "agent": name})
                journal.flush()
                made = halt(store, scope, by=OPS)
                journal.append(EventType.TOOL_STARTED, {"call_id": "c1", "tool": "pay"})
                try:
                    journal.flush()
                    refused = False
                except Halted:
                    refused = True
                assert refused == scope.covers(journal.session_id, tenant, name), (
                    store, tenant, name)
                unhalt(store, made.id, by=OPS)
        finally:
            if not isinstance(store, SQLiteStore):
                with store._pool.connection() as db:  # type: ignore[attr-defined]
                    db.execute(f"DROP SCHEMA {store.schema} CASCADE")  # type: ignore[attr-defined]
            store.close()
