"""Riding through a PostgreSQL restart or failover, within a stated bound.

Why: a managed database restarts for maintenance and fails over to a standby; for a few seconds
every connection is cut (``AdminShutdown``), new ones are refused (``the database system is
starting up``) or land on a read-only standby. Nothing stored is lost, but twenty running
sessions all died with the driver's exception, though each could have gone on a few seconds
later.

Decision: an operation that loses its connection is tried again, on a new connection, with a
growing pause, until the store's ride-through bound (``ride_through`` seconds, 30 by default;
``?ride_through=N`` in the URL) has passed since the operation began; past it, the operation fails
with ``StoreUnavailable``, which names the cause and says the session is resumable — never the
driver's exception. A write retried this way cannot be written twice: an append is fenced (its
first seq must follow the stored ones, under its lease's token), so an append whose commit
reached the server before the connection dropped is refused on the retry, and the retry then
checks that the stored events are its own, by hash, and counts it done; the chain cannot fork.
Once an operation has given up, the store is taken as down: later operations wait at most
``DOWN_GRACE`` (on a fresh connection pool, whose first connection is tried at once), not the
whole bound again, until one gets through. A full disk on the server (``DiskFull``) is not
waited out: it fails at once with ``StoreFull``. Errors that are not about reaching the server
(a constraint, a bug) are never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from tether.store.base import StoreError, StoreFull, StoreUnavailable
from tether.urls import redact_text

DEFAULT_RIDE_THROUGH = 30.0  # seconds a store waits out a lost database before giving up
FIRST_PAUSE, LONGEST_PAUSE = 0.05, 1.0  # back-off between tries, doubling
DOWN_GRACE = 1.0  # seconds an operation waits once an earlier one has given up

# SQLSTATEs that say the server went away or is not taking writes yet: connection exceptions
# (class 08), shutting down or starting up (57P01-57P03), a read-only standby (25006)
_AWAY = frozenset({"57P01", "57P02", "57P03", "25006"})
_DISK_FULL = "53100"

T = TypeVar("T")
P = ParamSpec("P")


class Riding(Protocol):
    _ride: RideThrough


S = TypeVar("S", bound=Riding)


def riding(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Run a store method under its store's ride-through; a method whose first argument is a
    session id names that session in the StoreUnavailable it may end with."""
    names_session = list(inspect.signature(method).parameters)[1:2] == ["session_id"]

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        session_id = args[0] if names_session and args and isinstance(args[0], str) else None
        return self._ride.call(lambda: method(self, *args, **kwargs), session_id)

    return wrapper


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the server could not be reached (worth trying again elsewhere)."""
    import psycopg

    state = getattr(exc, "sqlstate", None)
    if state is not None:
        return state.startswith("08") or state in _AWAY
    return isinstance(exc, psycopg.OperationalError)  # a dropped socket, a pool timeout


class RideThrough:
    """The retry policy of one store: ``bound`` seconds from an operation's first failure."""

    def __init__(self, bound: float, url: str, dsn: str,
                 recover: Callable[[bool], None] | None = None) -> None:
        if not 0 <= bound < float("inf"):
            raise StoreError(f"ride_through must be a finite number of seconds >= 0, got "
                             f"{bound!r}")
        self.bound, self.url, self._dsn = bound, url, dsn
        self._recover = recover  # (down) drops dead connections (all of them when down)
        self._down = False  # an operation gave up and none has got through since
        self._attempt = threading.local()  # this thread's try: its number and deadline

    def retrying(self) -> bool:
        """Whether this thread's current operation is a retry (its earlier try may have been
        committed by the server before the connection dropped)."""
        return getattr(self._attempt, "number", 0) > 0

    def wait(self) -> float:
        """How long this thread's current try may wait for a connection from the pool."""
        deadline = getattr(self._attempt, "deadline", None)
        return 0.1 if deadline is None else max(0.1, deadline - time.monotonic())

    def call(self, operation: Callable[[], T], session_id: str | None = None, *,
             bound: float | None = None) -> T:
        """Run ``operation`` (on a thread), trying again while the server is away, for the
        store's bound (or ``bound`` seconds)."""
        deadline, pause, number = self._deadline(bound), FIRST_PAUSE, 0
        if self._down:  # connections that died with the server must not spend the grace
            self._recovered(down=True)
        outer = (getattr(self._attempt, "number", 0), getattr(self._attempt, "deadline", None))
        while True:
            self._attempt.number, self._attempt.deadline = number, deadline
            try:
                result = operation()
            except Exception as exc:  # a shorter bound than the store's never marks it down
                self._give_up_on(exc, deadline, pause, session_id, mark_down=bound is None)
            else:
                self._down = False
                return result
            finally:  # an operation made inside another gives the outer one its try back
                self._attempt.number, self._attempt.deadline = outer
            time.sleep(pause)  # back-off before the next try, not a wait for an outcome
            self._recovered(down=False)
            pause, number = min(pause * 2, LONGEST_PAUSE), number + 1

    async def acall(self, operation: Callable[[int], Awaitable[T]]) -> T:
        """``call`` on the event loop; ``operation`` is given its try's number (0 first).
        Giving up raises a StoreUnavailable naming no session (see its ``for_session``)."""
        deadline, pause, number = self._deadline(), FIRST_PAUSE, 0
        while True:
            try:
                result = await operation(number)
            except Exception as exc:
                self._give_up_on(exc, deadline, pause, None)
            else:
                self._down = False
                return result
            await asyncio.sleep(pause)  # back-off before the next try
            pause, number = min(pause * 2, LONGEST_PAUSE), number + 1

    def unavailable(self, exc: BaseException, session_id: str | None) -> StoreUnavailable:
        """The error that replaces the driver's ``exc`` once the bound has passed."""
        if getattr(exc, "sqlstate", None) == _DISK_FULL:
            return StoreFull(self.url, f"PostgreSQL: {self._text(exc)}", session_id=session_id)
        waited = "it was already unreachable" if self.bound == 0 or self._down else \
            f"it did not come back within the store's ride-through bound of {self.bound:g}s"
        return StoreUnavailable(self.url, f"PostgreSQL could not be reached ({waited}; last "
                                f"error: {self._text(exc)})", session_id=session_id)

    def _recovered(self, down: bool) -> None:
        if self._recover is not None:
            with contextlib.suppress(Exception):  # the next try says what is wrong
                self._recover(down)

    def _deadline(self, bound: float | None = None) -> float:
        bound = self.bound if bound is None else bound
        return time.monotonic() + (min(bound, DOWN_GRACE) if self._down else bound)

    def _give_up_on(self, exc: Exception, deadline: float, pause: float,
                    session_id: str | None, mark_down: bool = True) -> None:
        """Return when ``exc`` is worth another try before ``deadline``; raise otherwise."""
        if getattr(exc, "sqlstate", None) == _DISK_FULL:
            raise self.unavailable(exc, session_id) from None
        if not lost_connection(exc):
            raise exc
        if time.monotonic() + pause > deadline:
            unavailable = self.unavailable(exc, session_id)
            self._down = self._down or mark_down
            raise unavailable from None

    def _text(self, exc: BaseException) -> str:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return redact_text(lines[0] if lines else type(exc).__name__, self._dsn)
