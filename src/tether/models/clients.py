"""One SDK client per event loop.

Decision: the official SDKs' async clients pool connections that belong to the event loop they
were opened on, and ``agent.run(...)`` starts a fresh loop per run (``asyncio.run``). Reusing one
client across loops fails with "Event loop is closed" on the second run. So an adapter builds its
client lazily, once per running loop, and forgets it when the loop is garbage-collected. A
client passed in by the caller is used as given, on whatever loop the caller chose.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

C = TypeVar("C")


class PerLoop(Generic[C]):
    """Build with ``factory`` on first use in each event loop; ``fixed`` short-circuits."""

    __slots__ = ("_clients", "_factory", "_fixed", "_lock")

    def __init__(self, factory: Callable[[], C], fixed: C | None = None) -> None:
        self._factory = factory
        self._fixed = fixed
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, C] = (
            weakref.WeakKeyDictionary())
        self._lock = threading.Lock()  # an Agent, and so its model, may serve many threads

    def get(self) -> C:
        if self._fixed is not None:
            return self._fixed
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                client = self._factory()
                self._clients[loop] = client
            return client

    def pop(self) -> C | None:
        """Forget (and return) this loop's client, so the caller can close it; None if there
        is none, or if the client was passed in (it is its owner's to close)."""
        if self._fixed is not None:
            return None
        with self._lock:
            return self._clients.pop(asyncio.get_running_loop(), None)
