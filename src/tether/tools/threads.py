"""Run a blocking tool function without letting it hold the run or the interpreter hostage.

Why: a sync tool must run off the event loop, and a hung one must neither block the run (its
timeout abandons it) nor the interpreter's exit. ``concurrent.futures`` executors are joined at
exit, so one hung tool would block exit forever. Starting a new daemon thread per call kept both
promises but cost most of a step: ``Thread.start()`` waits until the new thread is scheduled,
and a plain sync tool's step took 3.8× an async tool's.

Decision: daemon workers that are reused. A call is handed to an idle worker if there is one, else
to a new daemon thread; a worker whose call is done waits for the next one, and leaves after
``IDLE_SECONDS`` without work. A hung call keeps its worker forever, and is simply never counted
idle again: later calls get other workers, nobody waits for it, and being a daemon it never
holds up exit. The pool is one per process, like the interpreter's threads themselves — the
workers it holds are the only state, and a worker belongs to no run. A forked child inherits
the pool's count of idle workers but none of their threads (``fork`` copies only the thread
that called it): the child starts with no workers, else its first calls would be queued for
threads that do not exist there and time out (an evaluation's worker processes, forked after a
local run, did).

And the caller of a function that has been quick waits for its result in place (``Pace``), for
at most ``QUICK``: the call then returns without suspending the caller's coroutine or waking
the event loop, which halves what the handoff costs. A call that outlasts the wait goes on to be
awaited on the loop, as every call of a function that has been slow is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

IDLE_SECONDS = 30.0  # how long an idle worker waits for the next call before it leaves

# a job returns what to do once its worker counts as idle again (hand the result over): so the
# caller, woken by the result, finds the worker free for its next call
Job = Callable[[], Callable[[], None] | None]


class DaemonWorkers:
    """Daemon threads that run one job at a time and wait, idle, for the next."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._idle = 0  # workers waiting for a job (each put job is taken by exactly one)
        self._lock = threading.Lock()
        alive = weakref.WeakMethod(self._forget_the_parents_workers)
        os.register_at_fork(after_in_child=lambda: (forget := alive()) and forget())

    def _forget_the_parents_workers(self) -> None:
        """In a forked child: the parent's workers (and any lock one held) did not come along."""
        self._jobs = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    @property
    def idle(self) -> int:
        return self._idle

    def submit(self, job: Job) -> None:
        """Run ``job`` on an idle worker, or on a new one."""
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)
                return
        threading.Thread(target=self._work, args=(job,), name="tether-tool",
                         daemon=True).start()

    def _work(self, job: Job) -> None:
        while True:
            then = job()
            with self._lock:
                self._idle += 1
            if then is not None:
                then()
            try:
                job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # nobody claimed this worker meanwhile: leave
                        self._idle -= 1
                        return
                job = self._jobs.get()  # a submitter claimed it just now: its job is coming


WORKERS = DaemonWorkers()

QUICK = 0.001  # seconds: a call that took no longer is waited for in place next time


class Pace:
    """Whether a function's last call was quick, so that its next one is waited for in place.

    Waiting in place (the calling thread blocks until the worker hands the result over) costs
    one wake-up each way; awaiting on the event loop costs those plus the loop's own wake-up
    and a suspension of the caller. For a slow call, waiting in place would stall every other
    session on the loop, so only a function whose last call was quick is waited for, at most
    ``QUICK``: a slow call after a quick one stalls the loop that long, once. The memo is about
    the function, not about any run.
    """

    __slots__ = ("measured", "quick", "window")

    def __init__(self, window: float | None = None) -> None:
        self.quick = True
        self.measured = False  # whether a call was timed yet (before: quick is a guess)
        # how long a quick call is waited for in place, at most (default: QUICK)
        self.window = QUICK if window is None else window

    def wait(self, limit: float) -> float:
        """Seconds to wait for the call in place: none for a slow function, else the window
        or the caller's ``limit``, whichever is shorter."""
        return min(self.window, limit) if self.quick else 0.0

    def record(self, took: float) -> None:
        self.quick = took <= self.window
        self.measured = True

    def overran(self) -> None:
        """A wait in place ran out (the call is slow, or hung and may never be recorded)."""
        self.quick = False


class _Handoff:
    """One call's outcome on its way from the worker to the caller: to the calling thread if
    it is still waiting in place, else to the event loop it awaits on."""

    __slots__ = ("_arrived", "_deliver", "_lock", "_outcome", "_pace")

    def __init__(self, pace: Pace | None) -> None:
        self._pace = pace
        self._arrived = threading.Lock()
        self._arrived.acquire()  # released when the outcome arrives for a caller in place
        self._lock = threading.Lock()
        self._outcome: tuple[bool, Any] | None = None
        self._deliver: Callable[[tuple[bool, Any]], None] | None = None

    def job(self, fn: Callable[[], Any]) -> Job:
        def work() -> Callable[[], None]:
            started = time.perf_counter()
            try:
                outcome: tuple[bool, Any] = (True, fn())
            except StopIteration as exc:  # a Future refuses StopIteration; it would never resolve
                outcome = (False, RuntimeError(f"the tool raised StopIteration: {exc}"))
            except BaseException as exc:  # delivered to the caller
                outcome = (False, exc)
            if self._pace is not None:
                self._pace.record(time.perf_counter() - started)
            return lambda: self._hand_over(outcome)

        return work

    def _hand_over(self, outcome: tuple[bool, Any]) -> None:
        with self._lock:
            self._outcome = outcome
            deliver = self._deliver
        if deliver is None:
            self._arrived.release()
        else:
            deliver(outcome)

    def wait(self, limit: float) -> bool:
        """Block the calling thread until the outcome arrives, if the function has been quick
        (for at most ``QUICK`` or ``limit`` seconds). A wait that runs out marks it slow."""
        seconds = self._pace.wait(limit) if self._pace is not None else 0.0
        if seconds <= 0:
            return False
        if self._arrived.acquire(timeout=seconds):
            return True
        assert self._pace is not None
        self._pace.overran()  # the next call is not waited for in place
        return False

    def result(self) -> Any:
        assert self._outcome is not None
        ok, value = self._outcome
        if ok:
            return value
        raise value

    async def arrival(self) -> Any:
        """The outcome, awaited on the running event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(outcome: tuple[bool, Any]) -> None:
            if future.done():  # timed out or cancelled meanwhile: the result is dropped
                return
            ok, value = outcome
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

        def deliver(outcome: tuple[bool, Any]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while the call was hung
                loop.call_soon_threadsafe(settle, outcome)

        with self._lock:
            arrived = self._outcome is not None
            if not arrived:
                self._deliver = deliver
        if arrived:  # it came between the wait in place and now
            return self.result()
        return await future


async def run_on_daemon_thread(fn: Callable[[], Any], workers: DaemonWorkers = WORKERS, *,
                               pace: Pace | None = None, limit: float = 0.0) -> Any:
    """Run blocking ``fn`` on a daemon worker. With a ``pace`` whose function has been quick,
    wait for it in place (at most ``limit`` seconds, and never longer than ``QUICK``) before
    awaiting it on the loop; then a quick call returns without suspending the caller."""
    handoff = _Handoff(pace)
    workers.submit(handoff.job(fn))
    if handoff.wait(limit):
        return handoff.result()
    return await handoff.arrival()
