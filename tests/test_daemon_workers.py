"""Sync tools run on reused daemon workers: a worker is reused for the next call, a hung call
keeps its worker while later calls get others, idle workers leave, and nothing is lost in the
race between a worker leaving and a call arriving. A function whose calls are quick is waited
for in place (the caller does not suspend); a slow or hung one is awaited on the loop, which
stays free meanwhile."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tether.runtime.chokepoint.eager import start
from tether.tools.threads import QUICK, DaemonWorkers, Pace, run_on_daemon_thread


def test_calls_in_sequence_reuse_one_worker() -> None:
    workers = DaemonWorkers()

    async def three() -> list[int]:
        return [await run_on_daemon_thread(threading.get_ident, workers) for _ in range(3)]

    idents = asyncio.run(three())
    assert len(set(idents)) == 1 and idents[0] != threading.get_ident()
    assert all(t.daemon for t in threading.enumerate() if t.ident == idents[0])


def test_a_hung_call_keeps_its_worker_and_later_calls_get_another() -> None:
    workers = DaemonWorkers()
    release = threading.Event()

    async def scenario() -> tuple[int, int]:
        hung = asyncio.ensure_future(run_on_daemon_thread(lambda: (release.wait(10),
                                                                   threading.get_ident())[1],
                                                          workers))
        await asyncio.sleep(0.05)
        other = await asyncio.wait_for(run_on_daemon_thread(threading.get_ident, workers), 5)
        release.set()
        return await hung, other

    hung_on, other_on = asyncio.run(scenario())
    assert hung_on != other_on  # nobody waited for the hung one


def test_idle_workers_leave_and_a_call_after_that_still_runs() -> None:
    workers = DaemonWorkers(idle_seconds=0.05)

    async def one() -> int:
        return await run_on_daemon_thread(lambda: 7, workers)

    assert asyncio.run(one()) == 7
    assert workers.idle == 1
    deadline = time.monotonic() + 5
    while workers.idle and time.monotonic() < deadline:
        time.sleep(0.01)
    assert workers.idle == 0
    assert asyncio.run(one()) == 7


def test_no_call_is_lost_while_workers_come_and_go() -> None:
    """Calls arriving just as idle workers time out (idle_seconds of a millisecond): each one
    runs exactly once."""
    workers = DaemonWorkers(idle_seconds=0.001)
    done: list[int] = []
    lock = threading.Lock()

    def record(n: int) -> None:
        with lock:
            done.append(n)

    for n in range(2000):
        workers.submit(lambda n=n: record(n))
        if n % 50 == 0:
            time.sleep(0.002)
    deadline = time.monotonic() + 10
    while len(done) < 2000 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(done) == list(range(2000))


class Recording(Pace):
    """A pace that notes how long each call was to be waited for in place: what the tests check,
    instead of how long a wait took on a machine that may be loaded."""

    __slots__ = ("asked",)

    def __init__(self, window: float | None = None) -> None:
        super().__init__(window)
        self.asked: list[float] = []

    def wait(self, limit: float) -> float:
        seconds = super().wait(limit)
        self.asked.append(seconds)
        return seconds


def test_a_quick_call_returns_without_suspending_its_caller() -> None:
    # a wide window: however loaded the machine, the worker answers within it
    workers, pace = DaemonWorkers(), Pace(window=30.0)

    async def scenario() -> tuple[object, object]:
        # warm the worker: the first call starts a thread
        await run_on_daemon_thread(lambda: 0, workers, pace=pace, limit=5)
        return start(run_on_daemon_thread(threading.get_ident, workers, pace=pace, limit=5))

    value, rest = asyncio.run(scenario())
    assert rest is None  # no suspension: the caller stays on its fast path
    assert value != threading.get_ident()  # ...though the call ran on a worker
    assert pace.quick


def test_a_quick_call_that_raises_raises_in_place() -> None:
    pace = Pace()

    def broken() -> None:
        raise KeyError("nope")

    async def scenario() -> None:
        await run_on_daemon_thread(lambda: 0, pace=pace, limit=5)
        await run_on_daemon_thread(broken, pace=pace, limit=5)

    with pytest.raises(KeyError, match="nope"):
        asyncio.run(scenario())


def test_a_slow_call_frees_the_loop_and_its_next_call_is_not_waited_for_in_place() -> None:
    """A call outlasting QUICK marks its function slow: the next call suspends at once and the
    loop serves others while it runs — the call ends only once the loop has ticked 20 times."""
    workers, pace = DaemonWorkers(), Recording()
    ticked = threading.Event()

    async def ticker() -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        ticked.set()

    async def scenario() -> str:
        assert await run_on_daemon_thread(lambda: (time.sleep(0.05), "a")[1], workers,
                                          pace=pace, limit=5) == "a"
        assert not pace.quick
        background = asyncio.ensure_future(ticker())
        coro = run_on_daemon_thread(lambda: (ticked.wait(60), "b")[1], workers, pace=pace,
                                    limit=120)
        _, rest = start(coro)
        assert rest is not None
        value: str = await rest
        await background
        return value

    assert asyncio.run(scenario()) == "b"
    assert ticked.is_set()  # the loop ran the ticker while the call ran
    assert pace.asked == [QUICK, 0.0]  # the slow function's call was not waited for in place


def test_a_hung_call_is_waited_for_in_place_once_at_most() -> None:
    """A quick function that hangs costs the caller QUICK once; then it counts as slow even
    though its call never finished."""
    pace, release = Recording(), threading.Event()

    async def scenario() -> float:
        await run_on_daemon_thread(lambda: 0, pace=pace, limit=5)  # a worker is started
        pace.quick, pace.asked = True, []  # quick, however long the start took on this machine
        began = time.perf_counter()
        _, rest = start(run_on_daemon_thread(lambda: release.wait(10), pace=pace, limit=5))
        waited = time.perf_counter() - began
        assert rest is not None and not pace.quick
        release.set()
        assert await rest is True
        return waited

    waited = asyncio.run(scenario())
    assert waited >= QUICK * 0.9  # a timed wait lasts at least its timeout, loaded or not
    assert pace.asked == [QUICK]  # one wait in place, of QUICK; then marked slow (above)


def test_the_wait_in_place_never_exceeds_the_callers_limit() -> None:
    pace = Recording()

    async def scenario() -> None:
        await run_on_daemon_thread(lambda: 0, pace=pace, limit=5)  # a worker is started
        pace.quick, pace.asked = True, []
        _, rest = start(run_on_daemon_thread(lambda: time.sleep(0.05), pace=pace,
                                             limit=QUICK / 10))
        assert rest is not None
        await rest

    asyncio.run(scenario())
    assert pace.asked == [QUICK / 10]


def test_no_outcome_is_lost_when_it_arrives_as_the_wait_in_place_ends() -> None:
    """Calls whose length straddles QUICK: the outcome arrives just before, during or just
    after the switch from waiting in place to awaiting on the loop; each is delivered once."""
    workers = DaemonWorkers()

    async def scenario() -> list[int]:
        out = []
        for n in range(300):
            pace = Pace()
            delay = QUICK * (0.5 + (n % 20) / 20)
            out.append(await run_on_daemon_thread(
                lambda n=n, delay=delay: (time.sleep(delay), n)[1], workers, pace=pace,
                limit=5))
        return out

    assert asyncio.run(scenario()) == list(range(300))


def test_an_inline_tool_runs_on_the_loops_thread_and_a_plain_one_on_a_worker() -> None:
    from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

    @tool(inline=True)
    def here() -> int:
        """Where am I?"""
        return threading.get_ident()

    @tool
    def there() -> int:
        """Where am I?"""
        return threading.get_ident()

    calls = ModelResponse(tool_calls=(ToolCall("a", "here", {}), ToolCall("b", "there", {})))
    agent = Agent(model=ScriptedModel([calls, "done"]), reasoning=ReAct(), tools=[here, there])
    # on a loop that may serve other sessions (arun): a plain sync tool runs on a worker (on the
    # loop ``run`` makes for one session, it too runs in place: tests/test_inline_tools.py)
    result = asyncio.run(agent.arun("go"))
    here_on, there_on = (int(r.content) for r in result.trajectory.steps[0].results)
    assert here_on == threading.get_ident()  # asyncio.run drives the loop on this thread
    assert there_on != threading.get_ident()


def test_an_inline_tool_is_not_abandoned_at_its_timeout_and_its_errors_are_results() -> None:
    """Inline trades the abandonment for the handoff: the run waits for it, as documented."""
    from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

    @tool(inline=True, timeout=0.01)
    def slow() -> str:
        """Slow."""
        time.sleep(0.1)
        return "finished"

    @tool(inline=True)
    def broken() -> str:
        """Broken."""
        raise ValueError("no")

    calls = ModelResponse(tool_calls=(ToolCall("a", "slow", {}), ToolCall("b", "broken", {})))
    result = Agent(model=ScriptedModel([calls, "done"]), reasoning=ReAct(),
                   tools=[slow, broken]).run("go")
    finished, failed = result.trajectory.steps[0].results
    assert (finished.status, finished.content) == ("ok", "finished")
    assert failed.status == "error" and "ValueError: no" in failed.content


def test_inline_is_refused_for_an_async_tool() -> None:
    from tether import tool
    from tether.tools.decorator import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="already runs on the event loop"):
        @tool(inline=True)
        async def nope() -> str:
            """Nope."""
            return ""


def test_the_wait_in_place_keeps_to_what_the_budget_left_the_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor tells the tool its timeout (the tool's own, or the time budget's rest):
    a quick function is never waited for in place beyond it."""
    import tether.tools.threads as threads
    from tether import tool
    from tether.tools.base import ToolContext

    monkeypatch.setattr(threads, "QUICK", 0.5)

    @tool
    def sometimes_slow(seconds: float) -> str:
        """Sleep."""
        time.sleep(seconds)
        return "done"

    pace = Recording()  # the tool's memo, recording what it is asked to wait in place
    sometimes_slow._pace = pace  # type: ignore[attr-defined]
    assert pace.window == 0.5

    async def scenario() -> None:
        assert await sometimes_slow.invoke({"seconds": 0.0}, ToolContext("s", "c0", 1)) == "done"
        pace.quick, pace.asked = True, []  # quick, however loaded the machine
        _, rest = start(sometimes_slow.invoke({"seconds": 1.0},
                                              ToolContext("s", "c1", 1, timeout=0.05)))
        assert rest is not None
        await rest

    asyncio.run(scenario())
    assert pace.asked == [0.05]  # the call's timeout, not QUICK's 0.5 s


def test_a_forked_child_runs_its_calls_on_workers_of_its_own() -> None:
    """A process forked while the pool had idle workers (an evaluation's worker processes,
    forked after a local run) inherits the count but not the threads: its calls must start
    workers of its own, not wait forever in a queue no thread of the child reads."""
    import os

    workers = DaemonWorkers()
    asyncio.run(run_on_daemon_thread(threading.get_ident, workers))
    assert workers.idle == 1  # the parent's worker waits for its next call
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call, reported through the pipe
        code = 1
        try:
            ran = threading.Event()
            workers.submit(ran.set)
            code = 0 if ran.wait(30) else 2  # 30 s: a bound for a failure, never reached on a pass
            os.write(write, b"ran" if code == 0 else b"never ran")
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert said == b"ran" and os.waitstatus_to_exitcode(status) == 0
    assert workers.idle == 1  # the parent's own worker is untouched
