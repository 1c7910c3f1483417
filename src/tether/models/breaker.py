"""CircuitBreaker: stop calling a provider that keeps failing, and try it again later.

Decision: a dead provider should cost one fast, clear error per call, not a full retry cycle with
backoff per call. After ``failure_threshold`` consecutive provider-side failures (rate limits,
server errors, connection errors, timeouts — not a bad request, which says nothing about the
provider's health) the circuit opens and calls fail at once with a ``ProviderError`` of kind
``circuit_open``. After ``reset_after`` seconds it half-opens: exactly one trial call goes
through; its success closes the circuit, its failure opens it for another cool-down. A call the
caller cancels gives no verdict. One breaker is meant to be shared by every session of an
Agent (that is how it learns a provider is down), so its state is guarded by a lock.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable

from tether.errors import InvalidArgument
from tether.models.errors import RETRYABLE, ErrorKind, ProviderError


class CircuitState(enum.StrEnum):
    """A circuit breaker's state: ``closed`` (calls go through), ``open`` (calls fail at once)
    or ``half_open`` (one trial call decides)."""
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Stops calling a provider that keeps failing, and tries it again later; share one across
    an agent's sessions (``Resilient(model, breaker=...)``).

    Args:
        failure_threshold: Provider-side failures in a row (rate limit, server, connection,
            timeout; not a bad request) that open the circuit: calls then fail at once.
        reset_after: Seconds an open circuit waits before one trial call goes through.
        clock: The clock ``reset_after`` is measured on."""
    __slots__ = ("_clock", "_failures", "_last", "_lock", "_opened_at", "_state", "_trial",
                 "failure_threshold", "reset_after")

    def __init__(self, failure_threshold: int = 5, reset_after: float = 30.0, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if failure_threshold < 1:
            raise InvalidArgument("failure_threshold must be >= 1")
        if not reset_after >= 0:
            raise InvalidArgument("reset_after must be a number of seconds >= 0")
        self.failure_threshold = failure_threshold
        self.reset_after = reset_after
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CircuitState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._trial = False  # a half-open trial call is in flight
        self._last = ""

    def __repr__(self) -> str:
        return (f"CircuitBreaker({self.state.value}, failures={self._failures}/"
                f"{self.failure_threshold}, reset_after={self.reset_after})")

    @property
    def state(self) -> CircuitState:
        with self._lock:
            return self._current()

    def _current(self) -> CircuitState:
        if (self._state is CircuitState.OPEN
                and self._clock() - self._opened_at >= self.reset_after):
            self._state, self._trial = CircuitState.HALF_OPEN, False
        return self._state

    def acquire(self, provider: str) -> None:
        """Allow a call, or raise a ``circuit_open`` ProviderError saying when to expect more."""
        with self._lock:
            state = self._current()
            if state is CircuitState.CLOSED:
                return
            if state is CircuitState.HALF_OPEN and not self._trial:
                self._trial = True
                return
            wait = max(0.0, self._opened_at + self.reset_after - self._clock())
            why = (f"a trial call is under way after {self._failures} consecutive failures"
                   if state is CircuitState.HALF_OPEN else
                   f"{self._failures} consecutive failures; next trial in {wait:.1f}s")
        raise ProviderError(f"circuit open ({why}); last failure: {self._last}",
                            provider=provider, kind=ErrorKind.CIRCUIT_OPEN)

    def success(self) -> None:
        with self._lock:
            self._state, self._failures, self._trial = CircuitState.CLOSED, 0, False

    def failure(self, error: ProviderError) -> None:
        """Count a failed call; only provider-side kinds count towards opening."""
        with self._lock:
            self._trial = False
            if error.kind not in RETRYABLE:
                return
            self._failures += 1
            self._last = error.detail
            if (self._state is CircuitState.HALF_OPEN
                    or self._failures >= self.failure_threshold):
                self._state, self._opened_at = CircuitState.OPEN, self._clock()

    def release(self) -> None:
        """The call was cancelled by its caller: no verdict, but free the trial slot."""
        with self._lock:
            self._trial = False
