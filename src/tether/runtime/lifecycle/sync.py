"""The one bridge from synchronous code to a run: ``agent.run``, ``session.run``, ``rerun``.

Why its own module: the recipe, the session, a rerun and an evaluation all offer a synchronous
twin of their coroutine, and each must refuse alike inside a running event loop (where
``asyncio.run`` would fail obscurely). Kept apart from the recipe so the session, which the
recipe creates, does not import the recipe's module to run itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tether.errors import WrongState


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from synchronous code, refusing inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise WrongState("run() was called inside a running event loop; use `await agent.arun(...)`"
                     " or `await session.arun()` there")
