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
- The client waiting for a call is the tool's ``caller`` (``tether.serve.caller``): its log
  lines, progress and asks reach the client, and a capability the client did not declare is
  answered as its protocol says (-32021 for a 2026-07-28 request).
- A 2026-07-28 request that declared the capability has no back-channel: the tool's asks are
  answered by MCP's multi-round-trip (``tether.serve.rounds``): the call is answered
  ``InputRequiredResult`` and the client calls again with the answers and the sealed
  ``requestState``. Each round is a full governed call (decided, charged, journaled) and the
  tool runs again from the start, so the rule for tool authors is *ask before you act*: make
  every ask before any side effect, since what a tool did before an ask is done again.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tether.errors import InvalidArgument
from tether.serve.caller import ClientCaller, LogLevels, missing_capability, quietly
from tether.serve.clients import ClientExpired, ClientGateways, Governance, Outcome
from tether.serve.oauth import Identity, identity_of
from tether.serve.rounds import Rounds
from tether.serve.rounds import state_security as rounds_security
from tether.serve.transports import HOST, SESSION_IDLE_TIMEOUT, serve_http, serve_stdio
from tether.tools.base import Tool, ToolMeta
from tether.tools.content import Audio, Image, Part, Text

if TYPE_CHECKING:
    from tether.policy.base import Policy
    from tether.runtime.chokepoint.gateway import Gateway

SERVED_TOOLS = "the served tools"
SERVED_ADVICE = ("Fix the names (`tether policy lint POLICY --tools MODULE:TOOLS` makes this check "
                 "without serving)")
STDIO_CLIENT = "stdio"
SESSIONLESS_CLIENT = "http:sessionless"


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

    with quietly():
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
