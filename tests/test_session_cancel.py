"""In Python, ``Session.cancel()`` and a cancelled ``arun()`` task pause the session exactly as a
signal does to ``tether run``: resumably, with a side effect in flight left uncertain for an
operator, a model call in flight charged at its reservation, and a result that arrived kept."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.journal.chain import verify_chain
from tether.runtime.lifecycle.session import Session
from tether.runtime.record.state import fold
from tether.store.base import Store
from tether.types import ModelRequest


class Ledger:
    """A side-effecting tool that can hold inside its call until the test lets it go."""

    def __init__(self, hold: bool) -> None:
        self.writes: list[str] = []
        self.inside = asyncio.Event()
        self.entered = threading.Event()  # the same, for a test outside the run's loop
        self.hold = hold

    def agent(self, store: str | Store, **extra: Any) -> Agent:
        @tool(side_effect=True)
        async def write(text: str) -> str:
            """Write a line."""
            self.writes.append(text)
            if self.hold:
                self.inside.set()
                self.entered.set()
                await asyncio.Event().wait()
            return f"wrote {text}"

        script = [ModelResponse(tool_calls=(ToolCall("w1", "write", {"text": "ran 500"}),)),
                  "done"]
        return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[write],
                     store=store, **extra)


def _store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'j.db'}"


def _finish(agent: Agent, session_id: str, action: str | None) -> None:
    """Settle (if asked) and resume in a fresh process's way: from the store."""
    loaded = agent.load(session_id)
    if action is not None:
        loaded.settle("w1", action, operator="ops", note="checked")
    result = loaded.resume()
    assert result.stop_reason.value == "finished", result
    events = loaded.replay()
    assert verify_chain(events) is None


def _paused_on_w1(session: Session, result: Any = None) -> None:
    """Paused with w1 uncertain (and ``result``, if given, the paused Result)."""
    if result is not None:
        assert result.stop_reason.value == "uncertain_effect"
        assert "w1" in result.stop_detail
    events = session.replay()
    assert events[-1].type == "session.paused"
    assert events[-1].data["reason"] == "uncertain_effect"
    state = fold(events)
    assert state.started - set(state.results) == {"w1"}
    assert session.paused and session.result is None


def test_session_cancel_pauses_with_the_effect_uncertain(store: Store) -> None:
    ledger = Ledger(hold=True)
    agent = ledger.agent(store)
    session = agent.session("write ran 500")

    async def main() -> Any:
        run = asyncio.ensure_future(session.arun())
        await ledger.inside.wait()
        assert session.cancel() is True
        return await run  # the caller asked for nothing: it gets the paused result

    result = asyncio.run(main())
    assert "Session.cancel()" in result.stop_detail
    _paused_on_w1(session, result)
    assert session.cancel() is False  # nothing runs now
    ledger.hold = False
    _finish(agent, session.id, "skip")
    assert ledger.writes == ["ran 500"]


def test_session_cancel_from_another_thread_pauses_a_blocking_run(tmp_path: Path) -> None:
    ledger = Ledger(hold=True)
    agent = ledger.agent(_store(tmp_path))
    session = agent.session("write ran 500")
    results: list[Any] = []
    runner = threading.Thread(target=lambda: results.append(session.run()), daemon=True)
    runner.start()
    try:
        assert ledger.entered.wait(60)
        assert session.cancel()
    finally:
        runner.join(60)
    assert not runner.is_alive()
    _paused_on_w1(session, results[0])
    ledger.hold = False
    _finish(agent, session.id, "retry")  # the operator saw no effect... and retries
    assert ledger.writes == ["ran 500", "ran 500"]


def test_a_cancelled_arun_task_pauses_resumably(tmp_path: Path) -> None:
    ledger = Ledger(hold=True)
    agent = ledger.agent(_store(tmp_path))
    session = agent.session("write ran 500")

    async def main() -> None:
        run = asyncio.ensure_future(session.arun())
        await ledger.inside.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):  # the canceller gets its cancellation
            await run

    asyncio.run(main())
    _paused_on_w1(session)
    assert "cancelled" in session.replay()[-1].data["detail"]
    ledger.hold = False
    _finish(agent, session.id, "skip")
    assert ledger.writes == ["ran 500"]


def test_a_result_that_arrived_before_the_interrupt_is_kept(tmp_path: Path) -> None:
    ran: list[str] = []
    holder: list[Session] = []

    @tool(side_effect=True)
    async def write(text: str) -> str:
        """Write a line; the session is interrupted as it returns."""
        ran.append(text)
        holder[0].cancel()
        return f"wrote {text}"

    script = [ModelResponse(tool_calls=(ToolCall("w1", "write", {"text": "x"}),)), "done"]
    agent = Agent(model=ScriptedModel(script, latency=0.001), reasoning=ReAct(), tools=[write],
                  store=_store(tmp_path))  # the model's latency: where the interrupt lands
    session = agent.session("write x")
    holder.append(session)
    result = session.run()
    assert result.stop_reason.value == "interrupted"
    events = session.replay()
    assert events[-1].type == "session.paused" and events[-1].data["reason"] == "interrupted"
    assert [e.data["status"] for e in events if e.type == "tool.result"] == ["ok"]
    assert agent.resume(session.id).stop_reason.value == "finished"
    assert ran == ["x"]


def test_a_model_call_in_flight_is_charged_and_the_run_resumes(tmp_path: Path) -> None:
    asked = asyncio.Event()

    class Slow(ScriptedModel):
        hold = True

        async def complete(self, request: ModelRequest) -> ModelResponse:
            if Slow.hold:
                asked.set()
                await asyncio.Event().wait()
            return await super().complete(request)

    agent = Agent(model=Slow(["the answer"]), reasoning=ReAct(), store=_store(tmp_path))
    session = agent.session("answer me")

    async def main() -> Any:
        run = asyncio.ensure_future(session.arun())
        await asked.wait()
        session.cancel()
        return await run

    result = asyncio.run(main())
    assert result.stop_reason.value == "interrupted"
    events = session.replay()
    (lost,) = [e.data for e in events if e.type == "model.unmetered"]
    request = next(e.data for e in events if e.type == "model.request")
    assert lost["input_tokens"] == request["reserved_input"]
    assert result.spend.steps == 1
    Slow.hold = False
    resumed = agent.resume(session.id)
    assert resumed.stop_reason.value == "finished" and resumed.answer == "the answer"
    assert not [e for e in agent.load(session.id).replay() if e.type == "model.lost"]


def test_an_idempotent_call_in_flight_pauses_interrupted_and_reruns_journaled(
        tmp_path: Path) -> None:
    entered = asyncio.Event()
    ran: list[str] = []
    hold = [True]

    @tool(side_effect=True, idempotent=True)
    async def put(key: str) -> str:
        """Set a key (the same value every time)."""
        ran.append(key)
        if hold[0]:
            entered.set()
            await asyncio.Event().wait()
        return f"set {key}"

    script = [ModelResponse(tool_calls=(ToolCall("p1", "put", {"key": "k"}),)), "done"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[put],
                  store=_store(tmp_path))
    session = agent.session("set k")

    async def main() -> Any:
        run = asyncio.ensure_future(session.arun())
        await entered.wait()
        session.cancel()
        return await run

    assert asyncio.run(main()).stop_reason.value == "interrupted"  # nobody has to settle it
    hold[0] = False
    assert agent.resume(session.id).stop_reason.value == "finished"
    events = agent.load(session.id).replay()
    assert [e.data["call_id"] for e in events if e.type == "effect.rerun"] == ["p1"]
    assert ran == ["k", "k"]


def test_a_tool_that_swallows_the_cancellation_does_not_keep_the_run_going(
        tmp_path: Path) -> None:
    entered = asyncio.Event()
    ran: list[str] = []

    @tool
    async def stubborn() -> str:
        """Read something, refusing to be cancelled."""
        ran.append("stubborn")
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "finished anyway"
        return "unreachable"

    script = [ModelResponse(tool_calls=(ToolCall("s1", "stubborn", {}),)),
              ModelResponse(tool_calls=(ToolCall("s2", "stubborn", {}),)), "done"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[stubborn],
                  store=_store(tmp_path))
    session = agent.session("go")

    async def main() -> Any:
        run = asyncio.ensure_future(session.arun())
        await entered.wait()
        session.cancel()
        return await run

    result = asyncio.run(main())
    assert result.stop_reason.value == "interrupted", result
    assert ran == ["stubborn"]  # the second call never started
    events = session.replay()
    assert [e.data["content"] for e in events if e.type == "tool.result"] == ["finished anyway"]


def test_an_ended_session_is_neither_settled_nor_resumed(tmp_path: Path) -> None:
    from tether.runtime.lifecycle.session import SessionEnded

    agent = Ledger(hold=False).agent(_store(tmp_path))
    session = agent.session("write ran 500")
    assert session.run().stop_reason.value == "finished"
    before = [e.hash for e in session.replay()]
    loaded = agent.load(session.id)
    with pytest.raises(SessionEnded, match=r"ended \(finished\), so there is nothing to settle"):
        loaded.settle("w1", "skip", operator="ops")
    with pytest.raises(ValueError):  # what settle's other refusals are
        loaded.settle("w1", "skip", operator="ops")
    with pytest.raises(RuntimeError, match="nothing to resume"):
        loaded.resume()
    assert [e.hash for e in agent.load(session.id).replay()] == before


def test_a_signal_before_the_session_started_journals_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import os
    import signal

    from tether.cli.interrupts import Interrupts, report

    agent = Ledger(hold=False).agent(_store(tmp_path))
    session = agent.session("write ran 500")
    before = signal.getsignal(signal.SIGTERM)
    with Interrupts() as interrupts:
        os.kill(os.getpid(), signal.SIGTERM)  # handled here, before any loop runs
        assert interrupts.signal is signal.SIGTERM
        assert asyncio.run(interrupts.run(session, session.arun)) is None
        code = report(signal.SIGTERM, session,
                      argparse.Namespace(agent="app.py:agent", store=None))
    assert signal.getsignal(signal.SIGTERM) is before  # put back
    assert code == 128 + signal.SIGTERM
    assert session.replay() == [] and agent.journal_store is not None
    assert agent.journal_store.sessions() == []
    err = capsys.readouterr().err
    assert err == "interrupted by SIGTERM before the session started; nothing was journaled\n"
