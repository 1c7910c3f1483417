"""Each MCP connection lives on its own event loop, on its own daemon thread.

Why: the SDK's session is bound to the event loop and the task that opened it (anyio cancel
scopes must be exited by the task that entered them). A tether Agent is shared across threads
and runs each ``agent.run()`` in a fresh ``asyncio.run`` loop, so a toolset opened in one loop
would be unusable from the next run. Here the connection is opened, used and closed by tasks of
one private loop, and any caller — sync or async, on any thread or loop — reaches it through
``run`` (awaitable) or ``call`` (blocking). Cancelling the awaiting caller (the runtime's per-call
timeout) cancels the work on the private loop, and a server that hangs stalls only that loop,
never the agent's. The thread is a daemon, so a stuck connection never blocks interpreter exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from tether.errors import TimedOut, WrongState
from tether.mcp.errors import MCPConnectionError

T = TypeVar("T")


class LoopThread:
    __slots__ = ("_loop", "_thread")

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=f"tether-mcp-{name}",
                                        daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._loop.is_closed() or not self._thread.is_alive():
            coro.close()
            raise MCPConnectionError("this MCP connection's event loop has stopped; reconnect")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the private loop from any other loop; cancellation is passed on."""
        return await asyncio.wrap_future(self.submit(coro))

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the private loop and block until it finishes (for sync callers)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise WrongState("blocking call from the MCP loop's own thread would deadlock")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimedOut(f"gave up after {timeout}s") from None

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the loop once nothing is left on it (callers close their work first)."""
        if self._loop.is_closed():
            return
        if threading.current_thread() is not self._thread:
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
