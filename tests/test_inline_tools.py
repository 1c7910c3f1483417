"""A quick sync tool runs in place on the loop ``agent.run`` makes for one session, under an alarm
that stops it at its timeout (``tether.tools.inline``); everywhere else it keeps its worker.

Hostile cases: a quick tool that turns into a hang, one that swallows the alarm, one that
catches ``Exception``, one that starts its own event loop or a nested run, a program that owns
``SIGALRM``, a run off the main thread, two sessions sharing one loop (``arun``) whose tools wait
on each other, a lease shorter than the tool's timeout, and an alarm that arrives late.
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.tools import threads
from tether.tools.inline import _Alarm, serving_one_run
from tether.tools.threads import Pace

MAIN = threading.main_thread().ident


@pytest.fixture(autouse=True)
def _a_quick_call_is_quick_under_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests assert where a quick call runs, not the threshold: a loaded machine can
    stretch a 1 ms call (an event loop made inside it) past ``QUICK``, which would send the next
    call to a worker. Half a second is quick for them, and still not the 1 s a slow one records."""
    monkeypatch.setattr(threads, "QUICK", 0.5)


def calls(name: str, n: int) -> list[ModelResponse | str]:
    """``n`` calls of ``name``, each with its own argument (a repeat would be refused), then
    the answer."""
    return [*(ModelResponse(tool_calls=(ToolCall(f"c{i}", name, {"n": i}),))
              for i in range(n)), "done"]


def results(result: Any) -> list[tuple[str, str]]:
    return [(r.status, r.content) for step in result.trajectory.steps for r in step.results]


def where_tool() -> tuple[Any, list[int | None]]:
    seen: list[int | None] = []

    @tool
    def where(n: int) -> str:
        """Which thread runs me?"""
        seen.append(threading.get_ident())
        return "here"

    return where, seen


def test_after_a_quick_first_call_a_sync_tool_runs_in_place_under_run() -> None:
    where, seen = where_tool()
    result = Agent(model=ScriptedModel(calls("where", 4)), reasoning=ReAct(),
                   tools=[where]).run("go")
    assert result.answer == "done" and len(seen) == 4
    assert seen[0] != MAIN  # the first call is measured on a worker
    assert seen[1:] == [MAIN] * 3  # then no handoff
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL  # nothing left behind
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_on_a_loop_other_sessions_share_it_keeps_its_worker() -> None:
    where, seen = where_tool()
    agent = Agent(model=ScriptedModel(calls("where", 3)), reasoning=ReAct(), tools=[where])
    assert asyncio.run(agent.arun("go")).answer == "done"
    assert MAIN not in seen


def test_two_sessions_on_one_loop_whose_tools_wait_on_each_other_both_finish() -> None:
    """Were a shared loop's sync tool run in place, the first session's wait would hold the
    loop, the second session could never set the event, and both would hang."""
    ready = threading.Event()

    @tool(timeout=20)
    def wait_for_other(n: int) -> str:
        """Wait until the other session has run."""
        return "seen" if ready.wait(15) else "never"

    @tool
    def signal_other(n: int) -> str:
        """Let the other session go on."""
        ready.set()
        return "set"

    waiting = Agent(model=ScriptedModel(calls("wait_for_other", 3)), reasoning=ReAct(),
                    tools=[wait_for_other])
    setting = Agent(model=ScriptedModel([*calls("signal_other", 2)[:-1], "done"]),
                    reasoning=ReAct(), tools=[signal_other])

    async def both() -> list[Any]:
        return list(await asyncio.gather(waiting.arun("a"), setting.arun("b")))

    first, second = asyncio.run(both())
    assert [c for _, c in results(first)] == ["seen"] * 3 and second.answer == "done"


def hanging_after(quick: int, *, swallow: bool = False, catch: bool = False
                  ) -> tuple[Any, list[str]]:
    """A tool quick ``quick`` times, then hung on an event no one sets."""
    log: list[str] = []
    never = threading.Event()

    @tool(timeout=0.3)
    def flaky(n: int) -> str:
        """Quick, until it is not."""
        if len(log) < quick:
            log.append("quick")
            return "ok"
        log.append("hung")
        if swallow:
            try:
                never.wait()
            except BaseException:  # the hostile tool swallows everything, once
                log.append("swallowed")
            return "late"
        if catch:
            try:
                never.wait()
            except Exception:  # the alarm is not an Exception: not caught here
                log.append("caught")
            return "late"
        never.wait()
        log.append("went on")  # never: the alarm stopped it
        return "late"

    return flaky, log


def test_a_quick_tool_that_hangs_in_place_is_stopped_at_its_timeout() -> None:
    flaky, log = hanging_after(2)
    result = Agent(model=ScriptedModel(calls("flaky", 4)), reasoning=ReAct(),
                   tools=[flaky]).run("go")
    statuses = results(result)
    assert [s for s, _ in statuses] == ["ok", "ok", "timeout", "timeout"]
    assert statuses[2][1] == "Error: 'flaky' timed out after 0.3s and was stopped."
    # the hung call was stopped, not left running; after it the function counts as slow, so
    # its next call went to a worker and was abandoned there (it is still hung: a daemon)
    assert "went on" not in log and statuses[3][1].endswith("and was abandoned.")
    assert result.answer == "done"


def test_a_tool_that_swallows_the_alarm_is_still_timed_out_and_its_late_result_dropped() -> None:
    flaky, log = hanging_after(1, swallow=True)
    result = Agent(model=ScriptedModel(calls("flaky", 2)), reasoning=ReAct(),
                   tools=[flaky]).run("go")
    assert log[-1] == "swallowed"
    assert [s for s, _ in results(result)] == ["ok", "timeout"]
    assert "late" not in [c for _, c in results(result)]


def test_except_exception_in_the_tool_does_not_catch_the_alarm() -> None:
    flaky, log = hanging_after(1, catch=True)
    result = Agent(model=ScriptedModel(calls("flaky", 2)), reasoning=ReAct(),
                   tools=[flaky]).run("go")
    assert "caught" not in log and [s for s, _ in results(result)] == ["ok", "timeout"]


def test_a_program_that_owns_sigalrm_keeps_its_handler_and_the_worker() -> None:
    where, seen = where_tool()
    rang: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: rang.append(signum))
    try:
        Agent(model=ScriptedModel(calls("where", 3)), reasoning=ReAct(), tools=[where]).run("go")
        assert MAIN not in seen
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL  # still the program's
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert rang == []


def test_off_the_main_thread_the_tool_keeps_its_worker() -> None:
    where, seen = where_tool()
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.append(Agent(
        model=ScriptedModel(calls("where", 3)), reasoning=ReAct(), tools=[where]).run("go")))
    runner.start()
    runner.join(30)
    assert done and done[0].answer == "done"
    assert [s for s, _ in results(done[0])] == ["ok"] * 3
    assert len(seen) == 3 and runner.ident not in seen and MAIN not in seen


def test_in_place_the_tool_sees_no_loop_and_none_of_the_runs_context() -> None:
    """As on a worker: ``asyncio.run`` works inside, and the caller's context variables (and
    tether's own, which mark a run in progress) are not there."""
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    seen: list[tuple[int, str, int]] = []

    async def inner() -> int:
        return 7

    @tool
    def nested_loop(n: int) -> str:
        """Run an event loop of its own."""
        seen.append((threading.get_ident(), marker.get(), asyncio.run(inner())))
        return "ok"

    marker.set("the caller's")
    result = Agent(model=ScriptedModel(calls("nested_loop", 3)), reasoning=ReAct(),
                   tools=[nested_loop]).run("go")
    assert [s for s, _ in results(result)] == ["ok"] * 3
    assert [(t == MAIN, m, v) for t, m, v in seen] == [
        (False, "unset", 7), (True, "unset", 7), (True, "unset", 7)]


def test_a_tool_running_a_nested_session_in_place_finishes_and_the_nested_tools_use_workers(
) -> None:
    where, seen = where_tool()
    inner = Agent(model=ScriptedModel(calls("where", 2)), reasoning=ReAct(), tools=[where])
    outer_on: list[int] = []

    @tool(timeout=20)
    def delegate(n: int) -> str:
        """Ask another agent."""
        outer_on.append(threading.get_ident())
        if n == 0:
            return "quick"  # measured quick: the next call runs in place
        inner_model = ScriptedModel(calls("where", 2))
        import dataclasses
        return str(dataclasses.replace(inner, model=inner_model).run("sub").answer)

    result = Agent(model=ScriptedModel(calls("delegate", 2)), reasoning=ReAct(),
                   tools=[delegate]).run("go")
    assert [c for _, c in results(result)] == ["quick", "done"]
    assert outer_on[1] == MAIN  # the outer call ran in place...
    assert len(seen) == 2 and MAIN not in seen  # ...and the inner run's tools on workers


def test_a_lease_shorter_than_the_timeout_keeps_the_worker(tmp_path: Path) -> None:
    """A session's lease renews on the loop: a call in place may hold it only within the lease
    the append before it renewed (half of it)."""
    where, seen = where_tool()
    store = f"sqlite:///{tmp_path}/s.db"
    long_timeout = Agent(model=ScriptedModel(calls("where", 3)), reasoning=ReAct(),
                         tools=[where], store=store, lease_ttl=40)  # 30 s timeout > 20 s
    assert long_timeout.run("go").answer == "done"
    assert MAIN not in seen
    seen.clear()
    fits = Agent(model=ScriptedModel(calls("where", 3)), reasoning=ReAct(), tools=[where],
                 store=store)  # 60 s lease: 30 s fits
    assert fits.run("go").answer == "done"
    assert seen[1:] == [MAIN, MAIN]


def test_an_alarm_that_arrives_after_the_call_returned_is_ignored() -> None:
    alarm = _Alarm()
    alarm.armed = False
    alarm.ring(signal.SIGALRM, None)  # no Deadline raised into whatever runs now
    assert not alarm.fired


@pytest.mark.parametrize("hold", [0.0, 0.1])
def test_a_timeout_longer_than_the_hold_or_a_loop_not_alone_runs_on_a_worker(hold: float) -> None:
    from tether.tools.inline import runs_in_place

    pace = Pace()
    pace.record(0.0)
    assert not runs_in_place(pace, 1.0)  # no run marked this context
    with serving_one_run(hold):
        assert not runs_in_place(pace, 1.0)
        assert runs_in_place(pace, 0.05) == (hold > 0)
        slow: Callable[[], None] = lambda: pace.record(1.0)  # noqa: E731
        slow()
        assert not runs_in_place(pace, 0.05)


def test_a_deadline_that_is_up_before_the_call_begins_leaves_no_timer_behind() -> None:
    """The alarm may ring before the tool's first line: the call is timed out, the timer is
    disarmed and the handler restored (a timer left running after SIG_DFL is back would kill
    the process at its next ring)."""
    from tether.tools.inline import call_in_place

    ran: list[bool] = []
    pace = Pace()
    with pytest.raises(Exception, match="timed out after 1e-06s and was stopped"):
        call_in_place(lambda: ran.append(threading.Event().wait(5)), "tiny", 1e-6, pace)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
    assert ran == [] and not pace.quick
