"""Serve tether tools over MCP: whatever client connects, every call passes the chokepoint.

Why: an MCP client (an IDE, a desktop assistant, another agent) calls tools without any tether
Agent in the loop, so the promise — decided by the policy, bounded by a budget, journaled — must
be kept by the server itself. ``tools/list`` is the tools' own specs; ``tools/call`` is
``Gateway.call`` for the calling client (``tether.serve.clients``) and nothing else, so serving
adds no second path to a tool. ``tether mcp serve`` and ``tether mcp proxy`` both run this.

Decisions:

- Built on the SDK's low-level ``Server``, not ``MCPServer``: the tools already exist with
  their schemas and descriptions, and the high-level server would re-derive schemas from Python
  signatures and call the functions itself — exactly the second path tether forbids.
- A result's status maps to ``isError`` — anything but ``ok`` (a denial, an approval that is
  needed, a spent budget, a rejected argument, an error, a timeout) is an error the client's
  model reads as text and can act on — and the status and the client's tether session id ride
  in ``_meta`` (``tether/status``, ``tether/session``, and ``tether/approval`` for a call that
  waits for a person), so a program can tell them apart.
- The policy must name the tools served (``tether.policy.names``): ``serve`` refuses one whose
  rules name a tool or an argument none of them has (PolicyNameError), before answering anyone.
- A client's span rides in as ``_meta.traceparent`` (W3C Trace Context, the key MCP tracing
  uses): only that one key is read, and only the gateway's strict parse decides whether it is
  trusted (journaled on the call's ``client.call``); anything malformed is ignored, never an
  error. Nothing else of a client's ``_meta`` is kept.
- The transports (stdio, streamable HTTP on 127.0.0.1 unless authorization is on) are
  ``tether.serve.transports``. With authorization (``Governance.oauth``, ``tether.serve.oauth``)
  each request's verified token names the Subject its calls are decided for, and the client
  key carries that identity, so two identities never share a governed session.
- A result a tool returned as ``Content`` (``tether.tools.content``) reaches the client part
  by part — text, image, audio, embedded resource — as the journal masked it; a plain result
  is one text block.
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
- A 2026-07-28 request that declared the capability has no back-channel: the tool's asks are
  answered by MCP's multi-round-trip (``tether.serve.rounds``): the call is answered
  ``InputRequiredResult`` and the client calls again with the answers and the sealed
  ``requestState``. Each round is a full governed call (decided, charged, journaled) and the
  tool runs again from the start, so the rule for tool authors is *ask before you act*: make
  every ask before any side effect, since what a tool did before an ask is done again.
- ``logging/setLevel`` sets the level per client (its MCP session; the stdio peer); lower
  levels are dropped. A client that never set one gets ``warning`` and above
  (``DEFAULT_LOG_LEVEL``): it did not ask for chatter. Log lines carry no secret: they are
  scrubbed like the journal's text (``tether.tools.caller.Scrubbed``).
"""

from __future__ import annotations

import base64
import contextlib
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tether.errors import InvalidArgument
from tether.serve.clients import ClientExpired, ClientGateways, Governance, Outcome
from tether.serve.oauth import Identity, identity_of
from tether.serve.rounds import Rounds, elicit_in_rounds, elicited, sample_in_rounds, sampled_text
from tether.serve.rounds import state_security as rounds_security
from tether.serve.transports import HOST, SESSION_IDLE_TIMEOUT, serve_http, serve_stdio
from tether.tools.base import Tool, ToolMeta
from tether.tools.caller import LOG_LEVELS, CallerCannot, Elicited, LogLevel
from tether.tools.content import Audio, Image, Part, Text

if TYPE_CHECKING:
    from tether.policy.base import Policy
    from tether.runtime.chokepoint.gateway import Gateway

SERVED_TOOLS = "the served tools"
SERVED_ADVICE = ("Fix the names (`tether policy lint POLICY --tools MODULE:TOOLS` makes this check "
                 "without serving)")
STDIO_CLIENT = "stdio"
SESSIONLESS_CLIENT = "http:sessionless"
DEFAULT_LOG_LEVEL: LogLevel = "warning"  # for a client that never sent logging/setLevel
MAX_LEVELS = 10_000  # clients whose log level is remembered (the oldest set is forgotten)


def tool_annotations(meta: ToolMeta) -> types.ToolAnnotations:
    """What a tether tool's declared metadata tells an MCP client (as the spec's hints)."""
    return types.ToolAnnotations(
        read_only_hint=not meta.side_effect,
        destructive_hint=meta.side_effect and meta.risk == "high",
        idempotent_hint=meta.idempotent,
        open_world_hint=meta.egress)


def check_served_names(policy: Policy, tools: Iterable[Tool], *,
                       advice: str = SERVED_ADVICE) -> None:
    """PolicyNameError when ``policy`` names a tool or an argument none of ``tools`` has."""
    from tether.policy.names import check_names

    check_names(policy, [t.spec for t in tools], whose=SERVED_TOOLS, advice=advice)


def listing_of(tools: Iterable[Tool]) -> list[types.Tool]:
    """The ``tools/list`` entries of tether tools: name, description, input schema, hints."""
    return [types.Tool(name=t.spec.name, description=t.spec.description,
                       input_schema=dict(t.spec.parameters), annotations=tool_annotations(t.meta))
            for t in tools]


ContentBlock = (types.TextContent | types.ImageContent | types.AudioContent
                | types.EmbeddedResource)


def content_block(part: Part) -> ContentBlock:
    """One part of a tether result as an MCP content block (binary base64-encoded)."""
    if isinstance(part, Text):
        return types.TextContent(text=part.text)
    if isinstance(part, Image):
        return types.ImageContent(data=base64.b64encode(part.data).decode(),
                                  mime_type=part.mime_type)
    if isinstance(part, Audio):
        return types.AudioContent(data=base64.b64encode(part.data).decode(),
                                  mime_type=part.mime_type)
    resource: types.TextResourceContents | types.BlobResourceContents
    if part.text is not None:
        resource = types.TextResourceContents(uri=part.uri, mime_type=part.mime_type,
                                              text=part.text)
    else:
        assert part.blob is not None
        resource = types.BlobResourceContents(uri=part.uri, mime_type=part.mime_type,
                                              blob=base64.b64encode(part.blob).decode())
    return types.EmbeddedResource(resource=resource)


def call_result(outcome: Outcome) -> types.CallToolResult:
    """A tether result as MCP's: its parts (or its text), ``isError`` unless ok, and tether's
    view in _meta: the status (``approval_required`` for a call that waits for a person, with
    the approval's id in ``tether/approval``) and the client's tether session."""
    result = outcome.result
    meta: dict[str, Any] = {"tether/status": result.status,
                            "tether/session": outcome.session_id}
    if outcome.approval_id is not None:
        meta["tether/status"] = "approval_required"
        meta["tether/approval"] = outcome.approval_id
    content: list[Any] = ([content_block(p) for p in result.parts] if result.parts
                          else [types.TextContent(text=result.content)])
    return types.CallToolResult(content=content, is_error=result.status != "ok", meta=meta)


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
def _quietly() -> Iterator[None]:
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
        with _quietly():
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
        with _quietly():
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
        with _quietly():
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


def client_traceparent(params: types.CallToolRequestParams) -> object:
    """What the client sent as ``_meta.traceparent`` (unchecked: ``Gateway.call`` parses it
    strictly), or None."""
    meta = params.meta
    return meta.get("traceparent") if isinstance(meta, dict) else None


def request_identity(ctx: ServerRequestContext[Any, Any]) -> Identity | None:
    """Who the request's verified bearer token names (None: the server has no authorization;
    the SDK answers 401 before a handler runs when it has and the token does not verify)."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if user is None:  # no authentication middleware: authorization is off
        return None
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    return identity_of(user.access_token) if isinstance(user, AuthenticatedUser) else None


def client_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """Which client sent a request: the MCP session of an HTTP request, else the stdio peer.

    Only a handshake-era request has a session the transport vouches for (it routes the
    request to a live session, or answers 404); a 2026-07-28 request is served on its own, so
    a session header it carries proves nothing and must not buy it a gateway of its own.
    With authorization, the key ends with the token's identity (``#`` and its digest): each
    identity has gateways of its own, sessionless or not."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return STDIO_CLIENT
    session = headers.get(MCP_SESSION_ID_HEADER)
    if not session or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        key = SESSIONLESS_CLIENT
    else:
        key = f"http:{session}"
    identity = request_identity(ctx)
    return key if identity is None else f"{key}#{identity.key()}"


def build_server(gateways: ClientGateways, listing: Sequence[types.Tool], *,
                 name: str = "tether", instructions: str | None = None,
                 before_call: Callable[[], Awaitable[None]] | None = None,
                 state_key: str | bytes | None = None) -> Server[Any]:
    """A low-level MCP server whose tools are ``listing`` and whose calls go to ``gateways``;
    ``before_call`` is awaited before each call is decided (the proxy re-checks its policy
    against a changed upstream there): if it raises, the call is not made. ``state_key``: the
    key sealing ``requestState`` (``tether.serve.rounds.state_security``)."""
    tools = list(listing)
    state_security = rounds_security(client_key, state_key)
    levels = LogLevels()

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        if before_call is not None:
            try:
                await before_call()
            except Exception as exc:
                return types.CallToolResult(
                    content=[types.TextContent(text=f"the call was not made: {exc}")],
                    is_error=True, meta={"tether/status": "error"})
        key = client_key(ctx)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        rounds = Rounds.of(params) if modern else None
        caller = ClientCaller(ctx, key, levels, rounds)
        try:
            outcome = await gateways.call(key, params.name, params.arguments or {},
                                          identity=request_identity(ctx),
                                          traceparent=client_traceparent(params),
                                          caller=caller)
        except ClientExpired as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))],
                                        is_error=True, meta={"tether/status": "rejected"})
        if rounds is not None and rounds.pending and outcome.result.status != "ok":
            # the tool let an InputNeeded fail it: the client answers, and calls again
            return types.InputRequiredResult(input_requests=rounds.pending,
                                             request_state=rounds.state())
        refusal = missing_capability(outcome, caller)
        if refusal is not None:
            raise refusal
        return call_result(outcome)

    async def set_level(ctx: ServerRequestContext[Any, Any],
                        params: types.SetLevelRequestParams) -> types.EmptyResult:
        levels.set(client_key(ctx), params.level)
        return types.EmptyResult()

    from tether._version import __version__

    with _quietly():
        server: Server[Any] = Server(name, version=__version__, instructions=instructions,
                                     on_list_tools=list_tools, on_call_tool=call_tool,
                                     on_set_logging_level=set_level)
    from mcp.server.request_state import RequestStateBoundary

    server.middleware.append(RequestStateBoundary(state_security, default_audience=name))
    return server


async def serve(tools: Iterable[Tool], governance: Governance, *,
                transport: Literal["stdio", "http"] = "stdio", port: int = 0, host: str = HOST,
                name: str = "tether", listing: Sequence[types.Tool] | None = None,
                on_ready: Callable[[str], None] | None = None,
                on_client: Callable[[str, Gateway], None] | None = None,
                check_policy_names: bool = True,
                before_call: Callable[[], Awaitable[None]] | None = None) -> None:
    """Serve ``tools`` over MCP, each client governed by ``governance``, until the transport
    ends (stdio: the client closes stdin; HTTP: SIGINT or SIGTERM). Raises PolicyNameError,
    before serving, when the policy names what the tools do not have (``check_policy_names``
    False: the caller checked, as the proxy does against the upstream's own definitions).

    ``listing`` replaces the ``tools/list`` entries derived from the tools (the proxy shows the
    upstream's pinned definitions); ``on_client`` is told each new client's gateway;
    ``before_call`` see ``build_server``; ``host``: the HTTP address (not loopback only with
    ``governance.oauth``)."""
    idle = SESSION_IDLE_TIMEOUT if transport == "http" else None
    gateways = ClientGateways(tools, governance, idle_timeout=idle,
                              lasting=(SESSIONLESS_CLIENT,), on_new=on_client)
    if check_policy_names:
        check_served_names(governance.policy, gateways.tools)
    server = build_server(gateways, listing_of(gateways.tools) if listing is None else listing,
                          name=name, before_call=before_call)
    if transport not in ("stdio", "http"):
        raise InvalidArgument(f"transport must be 'stdio' or 'http', got {transport!r}")
    try:
        if transport == "stdio":
            if on_ready is not None:
                on_ready("stdio")
            await serve_stdio(server)
        else:
            await serve_http(server, port, session_idle_timeout=SESSION_IDLE_TIMEOUT,
                             on_ready=on_ready, gateways=gateways, host=host,
                             oauth=governance.oauth)
    finally:  # every client's session ends in the journal, with its spend
        for gateway in gateways.gateways:
            gateway.close("the MCP server stopped")
