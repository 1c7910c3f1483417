"""Run a blocking tool function without letting it hold the run or the interpreter hostage.

Decision: one daemon thread per blocking call, not a shared executor. ``concurrent.futures``
threads are joined at interpreter exit, so one hung tool would block exit forever; a daemon thread
is simply abandoned when its call times out, and the process can still leave. Thread start costs
tens of microseconds, which is noise beside the I/O a blocking tool does; pure CPU tools should
be declared async (the Calculator is).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any


async def run_on_daemon_thread(fn: Callable[[], Any]) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # timed out or cancelled meanwhile: the result is dropped
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            value = fn()
        except StopIteration as exc:  # a Future refuses StopIteration; it would never resolve
            ok, value = False, RuntimeError(f"the tool raised StopIteration: {exc}")
        except BaseException as exc:  # delivered to the awaiting coroutine
            ok, value = False, exc
        else:
            ok = True
        with contextlib.suppress(RuntimeError):  # the loop closed while the tool was hung
            loop.call_soon_threadsafe(deliver, ok, value)

    threading.Thread(target=work, name="tether-tool", daemon=True).start()
    return await future
