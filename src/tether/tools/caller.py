"""``Caller``: what a tool may tell, or ask, whoever is waiting for its result.

Why: an MCP client that calls a long tool wants to see it progress and read what it logs, and a
tool may need to ask the client's model (sampling) or its user (elicitation). A tool reaches
them through one narrow seam it receives like ``session_id`` or ``credentials`` (a parameter
named ``caller``, or ``ToolContext.caller``), never through a global, so a tool run by an
agent's model — where nobody is waiting — gets the silent caller (``SILENT``) and runs the same.

Decisions:

- Telling is best effort: ``log`` and ``progress`` never raise and never fail the call; what the
  caller did not ask for (a log level below the one it set, progress without a progress token)
  is dropped by the implementation. Asking (``sample``, ``elicit``) raises ``CallerCannot`` when
  the caller cannot answer (the silent caller, a client without the capability), so a tool
  decides what to do without an answer.
- Everything a tool tells passes the chokepoint's scrubbing first (``Scrubbed``): a log line or
  a progress message carries no secret the journal would hide, masked the same way.
- What the caller answers is input from outside, like any argument: a tool must treat a
  sampled text or an elicited form as untrusted.
- A caller may also have ``lacks(capabilities)`` (optional, not part of the protocol): told
  which of its capabilities a call needed and it had not declared (an MCP
  ``ClientCapabilities`` object), so an MCP server can answer with the protocol's error
  (``tether.serve.caller.ClientCaller``); ``Scrubbed`` hands it on.
- Not ``ToolContext.asks`` (``tether.tools.asking``): that is the tether session an
  MCP *server* asks while it runs a tool for tether; ``caller`` is the MCP *client* that called
  a tool tether serves. A proxy joins the two: its upstream's asks, logs and progress during a
  call go to that call's caller (``CallAsking.caller``, ``tether.mcp.requests``).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from tether.errors import RunError

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert",
                   "emergency"]
LOG_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical",
                                    "alert", "emergency")
MAX_LOG_CHARS = 4000  # a log line longer than this is cut: a log is not a result channel


class CallerCannot(RunError):
    """The caller cannot answer this request (nobody is waiting, or it lacks the capability)."""


class InputNeeded(CallerCannot):
    """The caller answers this ask only on its next round: a 2026-07-28 MCP client is answered
    ``InputRequiredResult`` and calls again with the answer, and the tool runs again
    (``tether.serve.rounds``). A tool lets it propagate (or does without)."""


@dataclass(frozen=True, slots=True)
class Elicited:
    """The caller's answer to ``elicit``: ``accept`` (with ``content``), ``decline``, ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Caller(Protocol):
    """Whoever waits for a tool's result."""

    async def log(self, level: LogLevel, message: str, *, logger: str | None = None) -> None:
        """Tell the caller ``message`` at ``level`` (dropped if it asked for less)."""
        ...

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        """Tell the caller how far the call is (dropped if it did not ask to know)."""
        ...

    async def sample(self, prompt: str, *, max_tokens: int,
                     system_prompt: str | None = None, key: str | None = None) -> str:
        """Ask the caller's model ``prompt``; its text. CallerCannot if it cannot. ``key``:
        the ask's name where the protocol names asks (MCP's ``inputRequests``), else unused."""
        ...

    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     key: str | None = None) -> Elicited:
        """Ask the caller's user to fill in a form (a flat JSON schema). CallerCannot if it
        cannot. ``key``: as ``sample``'s."""
        ...


@runtime_checkable
class AnswersInRounds(Protocol):
    """A caller that answers a tool's asks on its next call of the same tool (a 2026-07-28 MCP
    client, ``tether.serve.rounds``)."""

    @property
    def asked(self) -> bool:
        """Whether this call asked it something: the same call comes again with the answer."""
        ...


class Silent:
    """The caller of a tool nobody is waiting on: tells go nowhere, asks cannot be answered."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SILENT"

    async def log(self, level: LogLevel, message: str, *, logger: str | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        return None

    async def sample(self, prompt: str, *, max_tokens: int,
                     system_prompt: str | None = None, key: str | None = None) -> str:
        raise CallerCannot("no caller can answer a sampling request here (the tool is not "
                           "being called by an MCP client that supports sampling)")

    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     key: str | None = None) -> Elicited:
        raise CallerCannot("no caller can answer an elicitation here (the tool is not being "
                           "called by an MCP client that supports elicitation)")


SILENT: Caller = Silent()


class Scrubbed:
    """``inner`` with everything a tool tells it scrubbed by ``scrub`` first (the chokepoint's
    scrubbers and the journal's secrets); a log line is cut to ``MAX_LOG_CHARS``."""

    __slots__ = ("inner", "scrub")

    def __init__(self, inner: Caller, scrub: Callable[[str], str]) -> None:
        self.inner = inner
        self.scrub = scrub

    def __repr__(self) -> str:
        return f"Scrubbed({self.inner!r})"

    @property
    def wants_progress(self) -> bool:
        """Whether the caller asked to be told progress (an MCP client's ``progressToken``);
        an MCP tool asks its server for progress only then."""
        return bool(getattr(self.inner, "wants_progress", False))

    @property
    def log_level(self) -> LogLevel | None:
        """The lowest level of log line the caller takes on this call (an MCP client's), or
        None: it is told none, or does not say; an MCP tool asks its server for logs only then."""
        level = getattr(self.inner, "log_level", None)
        return level if level in LOG_LEVELS else None

    async def log(self, level: LogLevel, message: str, *, logger: str | None = None) -> None:
        if level not in LOG_LEVELS:
            level = "info"
        text = self.scrub(str(message))
        if len(text) > MAX_LOG_CHARS:
            text = text[:MAX_LOG_CHARS] + f" [tether: cut at {MAX_LOG_CHARS} characters]"
        with contextlib.suppress(Exception):  # telling is best effort
            await self.inner.log(level, text,
                                 logger=None if logger is None else self.scrub(str(logger)))

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        with contextlib.suppress(Exception):
            await self.inner.progress(progress, total,
                                      None if message is None else self.scrub(str(message)))

    async def sample(self, prompt: str, *, max_tokens: int,
                     system_prompt: str | None = None, key: str | None = None) -> str:
        system = None if system_prompt is None else self.scrub(system_prompt)
        return await self.inner.sample(self.scrub(prompt), max_tokens=max_tokens,
                                       system_prompt=system, **_keyed(self.inner.sample, key))

    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     key: str | None = None) -> Elicited:
        return await self.inner.elicit(self.scrub(message), schema,
                                       **_keyed(self.inner.elicit, key))

    def lacks(self, capabilities: Mapping[str, Any]) -> None:
        """Tell the caller the call needs ``capabilities`` it did not declare (see ``Caller``);
        a caller without ``lacks`` is not told."""
        lacks = getattr(self.inner, "lacks", None)
        if lacks is not None:
            lacks(capabilities)


def _keyed(ask: Callable[..., Any], key: str | None) -> dict[str, str]:
    """``key`` as the keyword ``ask`` takes, or nothing: none was given, or ``ask`` is a
    caller's written before asks had keys (it is asked without one)."""
    if key is None:
        return {}
    try:
        parameters = inspect.signature(ask).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assume the protocol's
        return {"key": key}
    if any(p.name == "key" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return {"key": key}
    return {}
