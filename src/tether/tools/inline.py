"""A quick sync tool runs on the loop's own thread when that loop serves one blocking run.

Why: a sync tool runs on a worker thread so that it stalls no other session on the event loop
and so that a hung call can be given up at its timeout. Handing a call to a worker and back
costs two thread wake-ups; on a virtual machine whose idle vCPU has to be woken, that is about
60 µs a call — as much as the whole rest of a governed step, and the reason a step with a sync
tool took twice one with an ``async`` tool. But a loop that ``session.run()`` (``agent.run()``)
made for one blocking call serves that run alone: no other session waits on it, so running the
call right there stalls nobody.

Decision: on such a loop (``serving_one_run`` marks it, with how long a call may hold it), a sync
tool whose last call was measured quick (``Pace``: within 1 ms; a function's first call goes to a
worker) runs in place — no handoff — under a real-time alarm (``ITIMER_REAL``/``SIGALRM``) that
stops it at its timeout: the alarm raises ``Deadline`` inside the call (a ``BaseException``, so
``except Exception`` in the tool does not swallow it; raised again every ``REPEAT`` seconds until
the call gives up), and the call is recorded as timed out, as a worker's would be. Where that
alarm cannot be had, the call goes to a worker as before: off the main thread (signals reach only
it), when the program has its own ``SIGALRM`` handler (a timer of its own needs one; a nested run
finds ours), for a timeout longer than the loop may be held (a session's lease renews on the
loop), and for a function whose last call was slow. In place the call sees what a worker's call
sees: a fresh ``contextvars`` context and no running event loop (so ``asyncio.run`` inside it
works). The price, stated: a call blocked inside C code that never returns to the interpreter is
stopped only when it does; and a quick function's call that turns slow holds the loop while it
runs (once: the function goes to workers from then on), so read-only calls of the same turn wait
for it instead of running beside it. Shared loops (``arun``, the gateway, fleet workers,
evaluations) are never marked: their sync tools keep the worker.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's, unwrapped: no enums (7 µs a pair)
import asyncio
import contextlib
import contextvars
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from tether.tools.base import ToolFailure
from tether.tools.threads import Pace

REPEAT = 0.05  # seconds between alarms once a call's time is up, until it gives up

# how many seconds a call may hold the loop of the run this context serves alone; 0: not alone
_ALONE: contextvars.ContextVar[float] = contextvars.ContextVar("tether_serving_one_run",
                                                               default=0.0)


@contextlib.contextmanager
def serving_one_run(hold: float) -> Iterator[None]:
    """Mark the event loop that starts inside as serving one blocking run, whose sync tools may
    hold it for up to ``hold`` seconds (a session's lease renews on the loop: ``hold`` keeps a
    call inside the lease an append just renewed); 0: the loop may serve other runs."""
    token = _ALONE.set(hold)
    try:
        yield
    finally:
        _ALONE.reset(token)


class Deadline(BaseException):
    """Raised inside a sync tool running in place when its time is up: a BaseException, so
    that no ``except Exception`` in the tool swallows its timeout."""


def runs_in_place(pace: Pace, limit: float) -> bool:
    """Whether a call of a function with ``pace`` and ``limit`` seconds runs in place."""
    return (pace.quick and pace.measured and 0 < limit <= _ALONE.get()
            and threading.current_thread() is threading.main_thread()
            and _signal.getsignal(signal.SIGALRM) == _signal.SIG_DFL)  # (a timer needs one)


class _Alarm:
    __slots__ = ("armed", "fired")

    def __init__(self) -> None:
        self.armed = True
        self.fired = False

    def ring(self, signum: int, frame: FrameType | None) -> None:
        if self.armed:  # an alarm delivered after the call returned is no one's business
            self.fired = True
            raise Deadline


def call_in_place(fn: Callable[[], Any], name: str, limit: float, pace: Pace) -> Any:
    """Run ``fn`` on this thread, now, for at most ``limit`` seconds; past it, ToolFailure with
    status ``timeout`` (a result that arrives after the deadline is dropped, as a worker's is)."""
    alarm = _Alarm()
    loop = asyncio._get_running_loop()
    previous = _signal.signal(signal.SIGALRM, alarm.ring)
    asyncio._set_running_loop(None)  # as on a worker: no loop runs here, asyncio.run works
    started = time.perf_counter()
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, limit, REPEAT)
            value = contextvars.Context().run(fn)
        finally:
            alarm.armed = False  # first, and no call before it: no alarm raises past here,
            signal.setitimer(signal.ITIMER_REAL, 0)  # not even one that rings again (REPEAT)
    except BaseException:  # Deadline (always after the alarm rang), or the tool's own
        if not alarm.fired:
            raise  # the tool's own failure: the executor reports it
    finally:  # the timer is off here (restoring SIG_DFL with one running would kill us)
        asyncio._set_running_loop(loop)
        _signal.signal(signal.SIGALRM, previous)
        pace.record(time.perf_counter() - started)
    if alarm.fired:
        pace.overran()  # however short its time was: the next call goes to a worker
        raise ToolFailure(f"Error: {name!r} timed out after {limit:.3g}s and was stopped.",
                          "timeout")
    return value
