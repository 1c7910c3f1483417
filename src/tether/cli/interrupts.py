"""Ctrl-C, SIGTERM and a closed terminal (SIGHUP) at a command that runs a session: a pause.

Why: these are how a person stops ``tether run`` or ``tether resume``. Python's defaults — a
``KeyboardInterrupt`` raised wherever the interpreter happens to be, death by SIGTERM or SIGHUP —
print a long traceback and at best leave what ``kill -9`` leaves; before this, the session even
ended, losing track of a side effect in flight and refusing to resume.

Decision: while the command runs, the first of these signals asks the session to pause
(``Session.cancel``: resumable, a side effect in flight left ``uncertain_effect`` for an operator
exactly as after a crash); later ones are ignored (in the command line's own process, until it
exits), so a second Ctrl-C cannot cut the pause in half — unless the run has not even begun to
pause because something holds its event loop (a hung ``inline`` tool): then a third signal ends
the process at once, leaving exactly what ``kill -9`` leaves (every write is one transaction). A
signal before the session started stops the command before anything is journaled. The command
then prints one line — what happened, and the exact commands that continue — and exits 128 +
the signal's number, as a shell expects of a process a signal stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

from tether.cli.next_steps import continue_commands, session_store, uncertain

if TYPE_CHECKING:
    from tether.runtime.lifecycle.session import Session

T = TypeVar("T")
FORCE_AT = 3  # the signal that ends the process without waiting for the pause
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                if hasattr(signal, name))


class Interrupts:
    """The first SIGINT/SIGTERM/SIGHUP while installed (``with``) pauses the attached session."""

    def __init__(self, *, process_exits: bool = False) -> None:
        # the process ends when the command does (the CLI's own, not main() called in-process):
        # once a signal paused the run, later ones stay ignored until it exits, so one arriving
        # on the way out (after the handlers are put back, or during the interpreter's shutdown,
        # which resets Python handlers to the default) cannot end it by a second signal
        self._process_exits = process_exits
        self.signal: signal.Signals | None = None
        self._count = 0
        self._asked = False  # whether the run's loop took the request to pause
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: Session | None = None
        # what `tether resume ID` needs to work as printed (`` --agent REF --store URL``): the
        # caller sets it once it knows the recipe and the store
        self.resume_options = ""
        self._previous: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():  # only it may set handlers
            self._previous = {s: signal.signal(s, self._on_signal) for s in SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        ignore = self._process_exits and self.signal is not None
        for number, handler in self._previous.items():
            signal.signal(number, signal.SIG_IGN if ignore else handler)

    async def run(self, session: Session, running: Callable[[], Awaitable[T]]) -> T | None:
        """``running()`` (which runs ``session``), paused by a signal; None when a signal came
        before it started."""
        self._loop, self._session = asyncio.get_running_loop(), session
        if self.signal is not None:
            return None
        return await running()  # the session's activation begins before this first suspends

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        self._count += 1
        if self._count >= FORCE_AT and not self._asked and self._session is not None:
            say(f"a third signal ({signal.Signals(number).name}): stopped at once, as kill -9 "
                f"would; `tether resume {self._session.id}{self.resume_options}` continues "
                "the session")
            os._exit(128 + number)
        if self.signal is not None:
            return  # the pause is under way: nothing may cut it in half
        self.signal = signal.Signals(number)
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the run is over
                loop.call_soon_threadsafe(self._pause)

    def _pause(self) -> None:
        self._asked = True
        if self._session is not None and self.signal is not None:
            self._session.cancel(self.signal.name)


def report(caught: signal.Signals, session: Session, args: argparse.Namespace) -> int:
    """Say in one line on stderr what the signal did to a session that paused (or never
    started) and the exact commands that continue it; the exit code."""
    events = session.replay()
    if not events:
        say(f"interrupted by {caught.name} before the session started; nothing was journaled")
        return 128 + caught.value
    commands = "; then ".join(f"`{command}`" for command in continue_commands(
        session, args.agent, session_store(session, args.store)))
    reason = events[-1].data.get("reason")
    calls = uncertain(events)
    if reason == "uncertain_effect" and calls:
        what = (f"paused with call(s) {', '.join(calls)} in flight, which may or may not have "
                "taken effect; check, then settle each")
    elif reason == "needs_approval":
        what = "paused waiting for approval; decide"
    else:
        what = "paused with nothing uncertain; continue"
    say(f"interrupted by {caught.name}: session {session.id} {what}: {commands}")
    return 128 + caught.value


def say(line: str) -> None:
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) takes stderr with it
        print(line, file=sys.stderr, flush=True)
