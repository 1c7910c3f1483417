"""How to reach one MCP server, and how far tether believes what it says.

Decision: a server is plain frozen data — a name, one transport (a command to spawn for stdio, or
a URL for streamable HTTP), and the few facts the operator vouches for: whether the server is
``trusted`` (only then are its read-only and open-world hints believed), which of its tools are
``read_only`` (the operator's word for tools it reviewed, not the server's hint), its per-call
timeout, and the prefix its tools get. Nothing here touches the ``mcp`` SDK, so a config can be
built, validated and shown without the extra installed. Secrets in ``env`` and ``headers`` never
appear in the repr.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import InvalidArgument, WrongType

if TYPE_CHECKING:
    from tether.mcp.oauth.flows import OAuth

NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
Transport = Literal["stdio", "http"]
#: What a server's elicitation (a question for a person, ``tether.mcp.requests``) gets:
#: ``"decline"``; ``"ask"``, an approval request a person answers (``tether approvals``); an
#: answerer, ``(Question) -> content | None``, that answers in process (None declines); or
#: ``"relay"``, to the MCP client waiting for the call (a proxy's client; none: declined).
Elicitation = Literal["decline", "ask", "relay"] | Callable[[Any], Any]
#: What a server's sampling request (a model call it asks for) gets: ``"decline"``;
#: ``"session"``, a model call of the session whose tool call is in flight (its model, its
#: budget); or ``"relay"``, to the MCP client waiting for the call (a proxy's client).
Sampling = Literal["decline", "session", "relay"]
#: The MCP protocol era a connection speaks (``tether.mcp.eras``): negotiated, or pinned.
Protocol = Literal["auto", "2025-11-25", "2026-07-28"]
PROTOCOLS = ("auto", "2025-11-25", "2026-07-28")


MIN_CREDENTIAL = 8  # a shorter value under a secret-looking name ("1", "yes") is blanked nowhere


def _tool_names(server: str, names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise WrongType(f"MCP server {server!r}: read_only must be a list of tool names, such as "
                        f"[{names!r}], not {names!r}")
    return frozenset(names)


def _positive(what: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            value > 0 and math.isfinite(value)):
        raise InvalidArgument(f"{what} must be a positive number of seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class MCPServer:
    """One MCP server: ``MCPServer.stdio(...)``, ``MCPServer.http(...)`` or the constructor.

    ``name`` names the server in tool tags, pins and error messages. ``prefix`` (default: the
    name; ``""`` for none) is put before each tool's name with ``separator``. ``trusted=True``
    means the operator vouches for the server's annotations (see ``tether.mcp.annotations``).
    ``call_timeout`` bounds each tool call; ``connect_timeout`` bounds start-up and the tool
    listing; ``close_timeout`` bounds shutdown. ``command``, ``args``, ``env`` and ``cwd`` make a
    stdio server (see ``stdio``); ``url``, ``headers`` and ``auth`` (an OAuth flow of
    ``tether.mcp.oauth``) an HTTP one (see ``http``). ``protocol`` picks the MCP protocol era:
``"auto"`` (the default: ``server/discover`` for 2026-07-28, falling back to the 2025
``initialize`` handshake), or pinned, ``"2026-07-28"`` (never falls back) or ``"2025-11-25"``
(the handshake only, never probes; for a server that mishandles the probe).

    Requests the server makes *during* a tool call (``tether.mcp.requests``): ``elicitation``
    (``"decline"``, ``"ask"`` a person through the approval store, an in-process answerer, or
    ``"relay"`` to the MCP client waiting for the call) and ``sampling`` (``"decline"``,
    ``"session"``: a governed model call of the calling session, at most
    ``sampling_max_tokens`` of output, or ``"relay"``). Both default to declining, journaled.

    ``read_only`` names tools (by their name on the server) that the operator reviewed and
    vouches have no side effect: policies see them so whatever the server's hints say (a
    ``destructiveHint`` still counts), and pinning keeps the reviewed definition — a tool
    redefined later is blocked, so the word cannot be carried over to what was not reviewed.
    Their output stays untrusted unless the server is ``trusted`` and says it is closed-world.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = field(default=None, repr=False)  # may carry credentials: see where()
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    auth: OAuth | None = None  # OAuth for an HTTP server (tether.mcp.oauth); its repr hides secrets
    trusted: bool = False
    prefix: str | None = None
    separator: str = "_"
    call_timeout: float = 30.0
    connect_timeout: float = 20.0
    close_timeout: float = 10.0
    elicitation: Elicitation = "decline"
    sampling: Sampling = "decline"
    sampling_max_tokens: int = 1024
    protocol: Protocol = "auto"
    read_only: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME.match(self.name):
            raise InvalidArgument(f"server name must be 1-32 letters, digits, '_' or '-', got "
                                  f"{self.name!r}; it becomes a tool tag and part of tool names")
        if (self.command is None) == (self.url is None):
            raise InvalidArgument(f"MCP server {self.name!r}: give exactly one of command= (stdio) "
                                  "or url= (streamable HTTP)")
        if isinstance(self.args, str):
            raise WrongType(f"MCP server {self.name!r}: args must be a list of strings such as "
                            f"[{self.args!r}], not a string")
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "read_only", _tool_names(self.name, self.read_only))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", str(self.cwd))
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise InvalidArgument(f"MCP server {self.name!r}: url must start with http:// or "
                                  f"https://, got {self.url!r}")
        if self.url is not None and (self.env or self.cwd or self.args):
            raise InvalidArgument(f"MCP server {self.name!r}: args, env and cwd apply to a spawned "
                                  "(stdio) server; an HTTP server takes url= and headers=")
        if self.command is not None and self.headers:
            raise InvalidArgument(f"MCP server {self.name!r}: headers apply to an HTTP server; a "
                                  "stdio server takes command=, args=, env= and cwd=")
        if self.auth is not None:
            from tether.mcp.oauth.flows import FLOWS

            if not isinstance(self.auth, FLOWS):
                raise WrongType(f"MCP server {self.name!r}: auth must be AuthorizationCode, "
                                "ClientCredentials or PrivateKeyJWT (tether.mcp.oauth), got "
                                f"{type(self.auth).__name__}")
            if self.url is None:
                raise InvalidArgument(f"MCP server {self.name!r}: auth= (OAuth) applies to an HTTP "
                                      "server; a stdio server gets its credentials through env=")
        if self.prefix is not None and self.prefix and not NAME.match(self.prefix):
            raise InvalidArgument("prefix must be 1-32 letters, digits, '_' or '-' (or '' for "
                                  f"none), got {self.prefix!r}")
        if self.separator not in ("_", "-", "__"):
            raise InvalidArgument(f"separator must be '_', '-' or '__' (tool names must match "
                                  f"[A-Za-z0-9_-] for every provider), got {self.separator!r}")
        for what in ("call_timeout", "connect_timeout", "close_timeout"):
            _positive(what, getattr(self, what))
        if self.elicitation not in ("decline", "ask", "relay") and not callable(
                self.elicitation):
            raise InvalidArgument(f"MCP server {self.name!r}: elicitation must be 'decline', "
                                  "'ask', 'relay' or an answerer (a function of the question), got "
                                  f"{self.elicitation!r}")
        if self.sampling not in ("decline", "session", "relay"):
            raise InvalidArgument(f"MCP server {self.name!r}: sampling must be 'decline', "
                                  f"'session' or 'relay', got {self.sampling!r}")
        if self.protocol not in PROTOCOLS:
            raise InvalidArgument(
                f"MCP server {self.name!r}: protocol must be 'auto' (negotiate: 2026-07-28's "
                "server/discover, else the 2025 handshake), '2026-07-28' or '2025-11-25' (pin "
                f"that era), got {self.protocol!r}")
        if type(self.sampling_max_tokens) is not int or self.sampling_max_tokens < 16:
            raise InvalidArgument(f"MCP server {self.name!r}: sampling_max_tokens must be a whole "
                                  f"number >= 16, got {self.sampling_max_tokens!r}")

    def credentials(self) -> tuple[str, ...]:
        """What tether passes this server that the server may echo back: the values of ``env``
        and ``headers`` under secret-looking names (``API_KEY``, ``GITHUB_TOKEN``,
        ``Authorization``, ...; ``tether.tools.asking.secret_looking``), and a header's value
        without its scheme (``Bearer <token>``'s token). ``MCPTool`` keeps them out of what
        the session records and sends, as it keeps an OAuth token out."""
        from tether.tools.asking import secret_looking

        found: list[str] = []
        for name, value in (*self.env.items(), *self.headers.items()):
            if not secret_looking(name) or len(value.strip()) < MIN_CREDENTIAL:
                continue
            found.append(value)
            scheme, _, rest = value.partition(" ")
            if rest.strip() and len(rest.strip()) >= MIN_CREDENTIAL and scheme.isalpha():
                found.append(rest.strip())
        return tuple(sorted(set(found), key=len, reverse=True))  # the longest blanked first

    @classmethod
    def stdio(cls, name: str, command: str | Path, *args: str | Path,
              env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
              trusted: bool = False, prefix: str | None = None, separator: str = "_",
              call_timeout: float = 30.0, connect_timeout: float = 20.0,
              close_timeout: float = 10.0, elicitation: Elicitation = "decline",
              sampling: Sampling = "decline", sampling_max_tokens: int = 1024,
              protocol: Protocol = "auto", read_only: Iterable[str] = ()) -> MCPServer:
        """A server tether spawns and talks to over its stdin/stdout.

        The process gets only a minimal environment (PATH, HOME, ...) plus ``env``, never the
        whole environment of the agent, so the agent's secrets do not leak to the server.
        """
        return cls(name, command=str(command), args=tuple(str(a) for a in args), env=env or {},
                   cwd=None if cwd is None else str(cwd), trusted=trusted, prefix=prefix,
                   separator=separator, call_timeout=call_timeout,
                   connect_timeout=connect_timeout, close_timeout=close_timeout,
                   elicitation=elicitation, sampling=sampling,
                   sampling_max_tokens=sampling_max_tokens, protocol=protocol,
                   read_only=_tool_names(name, read_only))

    @classmethod
    def http(cls, name: str, url: str, *, headers: Mapping[str, str] | None = None,
             auth: OAuth | None = None, trusted: bool = False, prefix: str | None = None,
             separator: str = "_",  # auth: the OAuth flow of a protected server (mcp-auth.md)
             call_timeout: float = 30.0, connect_timeout: float = 20.0,
             close_timeout: float = 10.0, elicitation: Elicitation = "decline",
             sampling: Sampling = "decline", sampling_max_tokens: int = 1024,
             protocol: Protocol = "auto", read_only: Iterable[str] = ()) -> MCPServer:
        """A server already listening on ``url`` (streamable HTTP), e.g.
        ``http://127.0.0.1:8000/mcp``."""
        return cls(name, url=url, headers=headers or {}, auth=auth, trusted=trusted, prefix=prefix,
                   separator=separator, call_timeout=call_timeout,
                   connect_timeout=connect_timeout, close_timeout=close_timeout,
                   elicitation=elicitation, sampling=sampling,
                   sampling_max_tokens=sampling_max_tokens, protocol=protocol,
                   read_only=_tool_names(name, read_only))

    @property
    def transport(self) -> Transport:
        return "stdio" if self.command is not None else "http"

    @property
    def tool_prefix(self) -> str:
        return self.name if self.prefix is None else self.prefix

    def where(self) -> str:
        """Where the server is, for messages (never shows env, headers, or a URL's secrets)."""
        if self.command is not None:
            return " ".join([self.command, *self.args][:4]) + (" …" if len(self.args) > 3 else "")
        from tether.urls import redact_url

        return redact_url(str(self.url))
