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
workers it holds are the only state, and a worker belongs to no run.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
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


async def run_on_daemon_thread(fn: Callable[[], Any],
                               workers: DaemonWorkers = WORKERS) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # timed out or cancelled meanwhile: the result is dropped
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> Callable[[], None]:
        try:
            value = fn()
        except StopIteration as exc:  # a Future refuses StopIteration; it would never resolve
            ok, value = False, RuntimeError(f"the tool raised StopIteration: {exc}")
        except BaseException as exc:  # delivered to the awaiting coroutine
            ok, value = False, exc
        else:
            ok = True

        def hand_over() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while the tool was hung
                loop.call_soon_threadsafe(deliver, ok, value)

        return hand_over

    workers.submit(work)
    return await future
