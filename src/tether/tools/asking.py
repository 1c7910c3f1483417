"""What a tool's *server* may ask of the session running the call: the seam, on the tools' floor.

Why: a remote tool (an MCP server) may ask things back while it runs a call — a model call
(sampling) or a question for a person (elicitation). The session answers them, governed
(``tether.runtime.chokepoint.asks``: reserved, charged, journaled, bounded), but the MCP client
that receives the requests sits on the adapters' floor, below the runtime, and must not import
it. So what the client may ask is stated here, as protocols the runtime's ``SessionAsks`` and
``CallAsks`` satisfy, with the data and the refusal both sides share; the runtime hands a
``SessionAsking`` down in ``ToolContext.asks`` and the client asks through it (dependency
inversion, not an upward import).

Not ``tether.tools.caller``: that is the other direction, the MCP *client* that called a tool
tether serves. A proxy joins the two: its upstream's asks during a call go to that call's
caller (``CallAsking.caller``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tether.errors import RunError
from tether.types import Message

SECRET_KEY = re.compile(r"pass(word|phrase|wd)?|secret|token|api[_-]?key|credential|private[_-]?key"
                        r"|ssn|social[_-]?security|card[_-]?number|cvv|pin\b|otp|auth",
                        re.IGNORECASE)


def secret_looking(name: str) -> bool:
    """Whether a form field's name looks like it asks for a secret (a server must not)."""
    return bool(SECRET_KEY.search(name))


class Refused(RunError):
    """The session did not do what a tool asked; the message says why (it goes to the tool)."""


@dataclass(frozen=True, slots=True)
class Question:
    """A question a tool's server asks a person: what an answerer is given. ``schema`` is the
    requested JSON Schema (a flat object); ``approval_id`` the request in the approval store."""

    server: str
    message: str
    schema: Mapping[str, Any]
    session_id: str
    call_id: str
    tool: str
    approval_id: str
    expires_at: float  # wall-clock seconds


@dataclass(frozen=True, slots=True)
class Sampled:
    """A sampling call's answer, as the tool may pass it on."""

    text: str
    model: str
    finish_reason: str


Check = Callable[[Any], dict[str, Any]]  # an answer's check: the content, or ValueError


@runtime_checkable
class CallAsking(Protocol):
    """What one tool call may ask of its session, on the session's ``loop``; each ask raises
    ``Refused`` when the session does not do it. ``caller``: the MCP client waiting for the
    call (a proxied call), to which requests may be relayed; None when nobody waits."""

    loop: asyncio.AbstractEventLoop
    caller: Any

    @property
    def session_id(self) -> str: ...

    def refuse(self, kind: str, server: str, reason: str) -> None:
        """Record that a request of ``kind`` was declined before anything was asked."""
        ...

    def tally(self, kind: str, server: str, most: int) -> bool:
        """Count one ``kind`` told during the call; False past ``most``."""
        ...

    async def sample(self, server: str, messages: Sequence[Message], max_tokens: int,
                     notes: Sequence[str] = ()) -> Sampled:
        """A governed model call of the session for ``server``'s untrusted ``messages``."""
        ...

    async def relay_sample(self, server: str, messages: Sequence[Message], max_tokens: int,
                           system_prompt: str | None, key: str | None = None) -> Sampled:
        """Ask the call's caller to sample ``messages`` (``key``: the server's name for the
        ask, where its protocol names asks)."""
        ...

    async def elicit(self, server: str, message: str, schema: Mapping[str, Any],
                     answerer: Callable[[Question], Any] | None, check: Check
                     ) -> dict[str, Any] | None:
        """Ask a person (or ``answerer``) a form; the content accepted, or None: declined."""
        ...

    async def relay_elicit(self, server: str, message: str, schema: Mapping[str, Any],
                           check: Check, key: str | None = None) -> dict[str, Any] | None:
        """Ask the call's caller's user a form; the content accepted, or None: declined
        (``key``: as ``relay_sample``'s)."""
        ...


@runtime_checkable
class SessionAsking(Protocol):
    """What every call of one session asks through (``ToolContext.asks``)."""

    def hide(self, scrubber: Callable[[str], str], key: str) -> None:
        """Keep what ``scrubber`` blanks out of everything the session records from now on."""
        ...

    def for_call(self, call_id: str, tool: str, timeout: float) -> CallAsking:
        """The asks of one call (``timeout``: the seconds the call may take)."""
        ...
