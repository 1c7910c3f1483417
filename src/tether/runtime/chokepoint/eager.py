"""Eager start: run a call's coroutine until it first suspends before arming its timer.

Decision: every tool call and every model call under a time budget is bounded by a timer, and an
``asyncio.timeout`` costs about 4 µs to arm and disarm — a fifth of the per-step target. Most
scripted model turns and many tools (pure functions, cache hits) finish without ever
suspending, and a timer cannot interrupt code that does not suspend anyway. So the coroutine is
started directly; if it finishes, there was nothing to bound; if it suspends, the rest of it runs
under the timer exactly as before. (Python 3.12's eager tasks make the same trade.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Generator
from types import CoroutineType
from typing import Any, TypeVar

T = TypeVar("T")

_PENDING = object()


def start(awaitable: Awaitable[T]) -> tuple[Any, Awaitable[T] | None]:
    """Run ``awaitable`` until it first suspends.

    Returns ``(value, None)`` when it finished synchronously, or ``(_, rest)`` where ``rest`` is
    an awaitable that continues it. Exceptions raised before the first suspension propagate.
    """
    if type(awaitable) is not CoroutineType and not isinstance(awaitable, Coroutine):
        return _PENDING, awaitable  # (the exact-type test first: the ABC check is dear)
    try:
        yielded = awaitable.send(None)
    except StopIteration as done:
        return done.value, None
    return _PENDING, _Continuation(awaitable, yielded)


class _Continuation:
    """Awaitable that resumes a started coroutine, forwarding what the event loop sends or
    throws (results of awaited futures, cancellation) exactly as ``await`` would have."""

    __slots__ = ("_coro", "_yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, value = self._coro, self._yielded
        while True:
            try:
                sent = yield value
            except BaseException as exc:  # cancellation and friends go to the coroutine
                try:
                    value = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as done:
                    return done.value
