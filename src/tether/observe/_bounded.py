"""One deadline for everything a telemetry flush or close waits on.

Why: ``close(timeout)`` and ``flush(timeout)`` promise their caller a bound — a CLI must exit,
a worker must stop — but what they wait on has bounds of its own that add up: the sink's
worker, then its exporter, then the meter provider, each of whose OTLP requests waits up to
``OTEL_EXPORTER_OTLP_TIMEOUT`` (10 s by default) and retries within it. A collector that
accepts a connection and never answers made ``close(timeout=3)`` take 6 s and ``tether run``
21 s to exit.

Decision: a call takes one monotonic ``Deadline`` and every stage waits only for what is left
of it. A stage that may block inside an SDK (a meter provider's flush or shutdown, an
exporter's shutdown) runs on a daemon thread that the caller waits for until the deadline and
then abandons: a daemon never holds the interpreter's exit, and what it was sending is lost
exactly as it would be had the collector been down — counted, never raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Deadline:
    """A point on the monotonic clock (``None``: no deadline)."""

    at: float | None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        return cls(None if seconds is None else time.monotonic() + max(seconds, 0.0))

    def left(self) -> float | None:
        """Seconds left (never negative), or ``None`` without a deadline."""
        return None if self.at is None else max(self.at - time.monotonic(), 0.0)

    def millis(self, unbounded: int = 30_000) -> int:
        """What is left in whole milliseconds, as the SDK's ``timeout_millis`` wants it."""
        left = self.left()
        return unbounded if left is None else int(left * 1000)


def bounded(stage: Callable[[], object], deadline: Deadline, name: str) -> bool:
    """Run ``stage`` on a daemon thread and wait for it until ``deadline``: True if it returned
    in time with anything but ``False``; False if it returned ``False``, raised, or was still
    running at the deadline (then it is left to finish, or not, on its own)."""
    outcome: list[bool] = []

    def run() -> None:
        try:
            outcome.append(stage() is not False)
        except Exception:  # a telemetry failure never fails its caller
            outcome.append(False)

    thread = threading.Thread(target=run, name=f"tether-{name}", daemon=True)
    thread.start()
    thread.join(deadline.left())
    return bool(outcome) and outcome[0]
