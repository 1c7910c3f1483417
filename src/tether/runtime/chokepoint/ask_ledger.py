"""The record both kinds of ask share: the session's side, and one call's count, time and turn.

Why a module of its own: a sampling request (``sampling.py``) and a question for a person
(``elicitation.py``) are governed differently, but the bounds around them are one mechanism and
must not drift apart: each runs on the session's loop (the journal and the accountant are not
shared across threads), one at a time per call, inside the call's own deadline less a margin for
the server to finish, with the journal made durable under one lock (the calls of a turn may ask
at the same time). A call may ask at most ``MAX_ASKS`` times of each kind; past that it is
refused without a record each time (one event says so), so a flooding server cannot flood the
journal; logs and progress it relays are counted the same way (``tally``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tether.runtime.accounting.accountant import Accountant
from tether.runtime.approvals.requests import ApprovalStore
from tether.tools.asking import Refused
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.models.base import Model

MAX_ASKS = 8  # of each kind, per tool call
MARGIN = 0.5  # seconds (at most a tenth of the call's time) an ask leaves the call to finish


class SharedAsks:
    """What every call of one session (or gateway) asks through: made once, shared by the calls'
    ``CallAsks``. ``flushing``: the lock around a flush made while tools run (the calls of a turn
    may ask at the same time; one flush at a time writes each event once)."""

    __slots__ = ("accountant", "approvals", "bound_to", "flushing", "journal", "model",
                 "session_id", "tenant_id")

    def __init__(self, *, session_id: str, journal: Journal, accountant: Accountant,
                 model: Model | None, approvals: ApprovalStore, bound_to: str,
                 tenant_id: str | None) -> None:
        self.session_id = session_id
        self.journal = journal
        self.accountant = accountant
        self.model = model
        self.approvals = approvals
        self.bound_to = bound_to
        self.tenant_id = tenant_id
        self.flushing = asyncio.Lock()

    def hide(self, scrubber: Callable[[str], str], key: str) -> None:
        """Keep what ``scrubber`` blanks out of everything the session records and sends from
        now on (``Journal.scrub_with``): a secret of the tool's own connection, say, which its
        server may echo back."""
        self.journal.scrub_with(scrubber, key)


class AskLedger:
    """One tool call's asks as its session keeps them: counted by kind, timed, taken one at a
    time. ``CallAsks`` (``asks.py``) is this with the asks themselves."""

    __slots__ = ("_count", "_deadline", "_lock", "call_id", "caller", "loop", "overrun",
                 "session", "tool")

    def __init__(self, session: SharedAsks, call_id: str, tool: str, timeout: float) -> None:
        self.session = session
        self.call_id = call_id
        self.tool = tool
        self.loop = asyncio.get_running_loop()
        # an answer must reach the server, and the server finish, before the call is abandoned
        self._deadline = time.monotonic() + timeout - min(MARGIN, timeout / 10)
        self._lock: asyncio.Lock | None = None
        self._count: dict[str, int] = {}
        # an earlier sampling call of this call went past its reservation: it samples no more
        self.overrun = False
        # the MCP client waiting for this call (a proxied call: tether.tools.caller), to which
        # the server's logs, progress and (when configured to) requests are relayed; None: none
        self.caller: Any = None

    @property
    def session_id(self) -> str:
        return self.session.session_id

    def time_left(self) -> float:
        return self._deadline - time.monotonic()

    def admit(self, kind: str, server: str) -> None:
        """Count one ask of ``kind``; Refused past ``MAX_ASKS`` (journaled the first time)."""
        n = self._count[kind] = self._count.get(kind, 0) + 1
        if n > MAX_ASKS:
            if n == MAX_ASKS + 1:
                self.session.journal.append(EventType(f"{kind}.refused"), {
                    "call_id": self.call_id, "server": server,
                    "reason": f"more than {MAX_ASKS} {kind} requests in one call: this and "
                              "every later one is refused without a record"})
            raise Refused(f"too many {kind} requests in one tool call (at most {MAX_ASKS})")

    def refuse(self, kind: str, server: str, reason: str) -> None:
        """Journal that a request of ``kind`` (``sampling`` / ``elicitation``) was declined for
        ``reason`` before anything was asked (the server's configuration, a form tether does
        not answer); Refused past ``MAX_ASKS``."""
        self.admit(kind, server)
        self.session.journal.append(EventType(f"{kind}.refused"), {"call_id": self.call_id,
                                                        "server": server, "reason": reason})

    def tally(self, kind: str, server: str, most: int) -> bool:
        """Count one ``kind`` (``log`` / ``progress``) told during the call; False past ``most``
        (``{kind}.dropped`` journaled the first time: a flood is recorded once)."""
        n = self._count[kind] = self._count.get(kind, 0) + 1
        if n == most + 1:
            self.session.journal.append(EventType(f"{kind}.dropped"), {
                "call_id": self.call_id, "server": server,
                "reason": f"more than {most} {kind} notifications in one call: this and every "
                          "later one is dropped"})
        return n <= most

    async def flush(self) -> None:
        """Make what the call's asks journaled durable (one flush at a time per session)."""
        async with self.session.flushing:
            await self.session.journal.aflush()

    def serial(self) -> asyncio.Lock:
        """The lock that takes this call's asks one at a time."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock
