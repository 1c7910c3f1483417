"""The MCP client waiting for one ``tools/call``, as the tool's ``Caller``: what a tool tells it
and asks it, on that request's stream, in that request's protocol era.

Why a module of its own: what reaches a client from inside a call (log lines, progress, a
question for its user, a prompt for its model) depends on the client's era and on what it
declared, and that is a concern apart from answering a request (``tether.serve.server``).

Decisions:

- The client waiting for a call is the tool's ``caller`` (``tether.tools.caller``, through
  ``ClientCaller``): a tool's log lines become ``notifications/message`` and its progress
  ``notifications/progress`` for the request's ``progressToken`` (none sent without one), and
  a tool may ask the client's model (``sampling/createMessage``) or its user
  (``elicitation/create``) when the client declared that capability. tether logs nothing of
  its own to clients: its decisions are each result's ``_meta``, and its record the journal.
- A capability the client did not declare: a tool asks for it only while it runs, so the call
  has passed the chokepoint (decided, charged, journaled) before anyone knows it is needed.
  The tool gets ``CallerCannot`` and may do without; if the call then fails, the journal keeps
  that failure as the call's result (``tool.result``, status ``error``, naming the capability),
  and the client's answer depends on its protocol. A 2026-07-28 request, whose ``_meta``
  declares its capabilities, gets the protocol error the spec requires (-32021,
  MissingRequiredClientCapabilityError, HTTP 400, ``error.data.requiredCapabilities`` like
  ``{"sampling": {}}``; ``missing_capability``), whose message names the tether session the
  failure is journaled in: a -32021 does not mean nothing ran. A handshake (2025) client
  keeps the ``isError`` result naming the capability: its protocol has no such error. A
  proxied upstream's own -32021 is handed on the same way (``ClientCaller.lacks``).
- ``logging/setLevel`` sets the level per client (its MCP session; the stdio peer); lower
  levels are dropped. A client that never set one gets ``warning`` and above
  (``DEFAULT_LOG_LEVEL``): it did not ask for chatter. Log lines carry no secret: they are
  scrubbed like the journal's text (``tether.tools.caller.Scrubbed``).
- A 2026-07-28 request asks for log lines itself (``_meta`` ``io.modelcontextprotocol/logLevel``;
  none without it): the SDK sends a line only at or above it, and ``log_level`` says it, so a
  proxied upstream is asked for the same lines.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tether.serve.rounds import elicit_in_rounds, elicited, sample_in_rounds, sampled_text
from tether.tools.caller import LOG_LEVELS, CallerCannot, Elicited, LogLevel

if TYPE_CHECKING:
    from tether.serve.clients import Outcome
    from tether.serve.rounds import Rounds

DEFAULT_LOG_LEVEL: LogLevel = "warning"  # for a client that never sent logging/setLevel
MAX_LEVELS = 10_000  # clients whose log level is remembered (the oldest set is forgotten)


class LogLevels:
    """The log level each client set (``logging/setLevel``), by client key; bounded."""

    def __init__(self, default: LogLevel = DEFAULT_LOG_LEVEL, most: int = MAX_LEVELS) -> None:
        self.default = default
        self._most = most
        self._set: OrderedDict[str, LogLevel] = OrderedDict()

    def set(self, key: str, level: LogLevel) -> None:
        self._set[key] = level
        self._set.move_to_end(key)
        while len(self._set) > self._most:
            self._set.popitem(last=False)

    def forget(self, key: str) -> None:
        self._set.pop(key, None)

    def level(self, key: str) -> LogLevel:
        return self._set.get(key, self.default)

    def allows(self, key: str, level: LogLevel) -> bool:
        """Whether a line at ``level`` reaches client ``key`` (its level or higher)."""
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.level(key))


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """The SDK marks logging, sampling and elicitation deprecated as of 2026-07-28 (SEP-2577),
    yet clients of the handshake protocols use them: no warning at each use."""
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


class ClientCaller:
    """The MCP client waiting for one ``tools/call``: what a tool tells it and asks it
    (``tether.tools.caller.Caller``), on that request's stream.

    ``missing``: the client capabilities (MCP's ``ClientCapabilities`` shape) the call needed
    and a 2026-07-28 request's ``_meta`` did not declare — asked of this caller and refused
    (``CallerCannot``), or named by a proxied upstream's -32021 (``lacks``); None when nothing
    was refused. A handshake client is never recorded: its protocol has no such error."""

    __slots__ = ("_ctx", "_key", "_levels", "missing", "rounds")

    def __init__(self, ctx: ServerRequestContext[Any, Any], key: str,
                 levels: LogLevels, rounds: Rounds | None = None) -> None:
        self._ctx = ctx
        self._key = key
        self._levels = levels
        self.missing: dict[str, Any] | None = None
        self.rounds = rounds  # a 2026-07-28 request's asks (tether.serve.rounds), else None

    def __repr__(self) -> str:
        return f"<MCP client {self._key}>"

    @property
    def modern(self) -> bool:
        """Whether the request is a 2026-07-28 one (its capabilities in its own ``_meta``)."""
        return self._ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def asked(self) -> bool:
        """Whether the call asked for input the client answers on its next round
        (``tether.tools.caller.AnswersInRounds``)."""
        return self.rounds is not None and bool(self.rounds.pending)

    @property
    def log_level(self) -> LogLevel | None:
        """The lowest level of log line this call's client takes: a 2026-07-28 request's own
        (``_meta`` ``io.modelcontextprotocol/logLevel``; none without it), else the level the
        client set (``logging/setLevel``) or the default."""
        if self.modern:
            level = (self._ctx.meta or {}).get(LOG_LEVEL_META_KEY)
            return level if level in LOG_LEVELS else None
        return self._levels.level(self._key)

    @property
    def wants_progress(self) -> bool:
        """Whether the request carried a ``progressToken``."""
        meta = self._ctx.meta or {}
        return meta.get("progress_token", meta.get("progressToken")) is not None

    def lacks(self, capabilities: Mapping[str, Any]) -> None:
        """The call cannot go on without ``capabilities`` of the client (a ``ClientCapabilities``
        object): remembered for a 2026-07-28 request, answered with -32021 if the call fails."""
        if self.modern:
            self.missing = {**(self.missing or {}), **capabilities}

    def _cannot(self, capability: str) -> CallerCannot:
        self.lacks({capability: {}})
        where = ("this request's _meta (io.modelcontextprotocol/clientCapabilities)"
                 if self.modern else "its initialize request")
        return CallerCannot(f"the MCP client did not declare the {capability} capability in "
                            f"{where}; the tool needs it")

    async def log(self, level: LogLevel, message: str, *, logger: str | None = None) -> None:
        if not self.modern and not self._levels.allows(self._key, level):  # the SDK filters
            return
        with quietly():
            await self._ctx.session.send_log_message(level, message, logger=logger,
                                                     related_request_id=self._ctx.request_id)

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def sample(self, prompt: str, *, max_tokens: int,
                     system_prompt: str | None = None, key: str | None = None) -> str:
        session = self._ctx.session
        if not session.check_client_capability(
                types.ClientCapabilities(sampling=types.SamplingCapability())):
            raise self._cannot("sampling")
        if self.rounds is not None:
            return sample_in_rounds(self.rounds, prompt, max_tokens, system_prompt, key)
        with quietly():
            result = await session.create_message(
                [types.SamplingMessage(role="user", content=types.TextContent(text=prompt))],
                max_tokens=max_tokens, system_prompt=system_prompt,
                related_request_id=self._ctx.request_id)
        return sampled_text(result)

    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     key: str | None = None) -> Elicited:
        session = self._ctx.session
        if not session.check_client_capability(
                types.ClientCapabilities(elicitation=types.ElicitationCapability())):
            raise self._cannot("elicitation")
        if self.rounds is not None:
            return elicit_in_rounds(self.rounds, message, schema, key)
        with quietly():
            answer = await session.elicit_form(message, dict(schema),
                                               related_request_id=self._ctx.request_id)
        return elicited(answer, schema)


def missing_capability(outcome: Outcome, caller: ClientCaller) -> MCPError | None:
    """The -32021 error (MissingRequiredClientCapabilityError) a 2026-07-28 request is answered
    with when its call failed for want of a capability its ``_meta`` did not declare, or None:
    the call succeeded (the tool did without), or nothing was refused."""
    if caller.missing is None or outcome.result.status == "ok":
        return None
    try:  # what a tool or an upstream named: only what MCP defines is sent
        required = types.ClientCapabilities.model_validate(caller.missing)
    except ValueError:
        return None
    names = ", ".join(sorted(required.model_dump(by_alias=True, exclude_none=True)))
    if not names:
        return None
    data = types.MissingRequiredClientCapabilityErrorData(required_capabilities=required)
    return MCPError(code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message=(f"the tool needs the client capability {names}, which this "
                             "request's _meta (io.modelcontextprotocol/clientCapabilities) does "
                             f"not declare; the call failed and is journaled in tether session "
                             f"{outcome.session_id}. Declare it and call again"),
                    data=data.model_dump(by_alias=True, mode="json", exclude_none=True))
