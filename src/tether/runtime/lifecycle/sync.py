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
from tether.tools.inline import serving_one_run


def run_sync(coro: Any, *, alone: float = 0.0) -> Any:
    """Run a coroutine to completion from synchronous code, refusing inside a running loop.
    ``alone``: the coroutine is one session's run, the only one on the loop made for it, so its
    quick sync tools may hold that loop up to so many seconds (``tether.tools.inline``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        with serving_one_run(alone):
            return asyncio.run(coro)
    coro.close()
    raise WrongState("run() was called inside a running event loop; use `await agent.arun(...)`"
                     " or `await session.arun()` there")
