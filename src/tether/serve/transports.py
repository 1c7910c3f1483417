"""How a built MCP server is carried: stdio, or streamable HTTP on a socket of its own.

Why apart from ``tether.serve.server`` (what a request does): the transport decides who can reach
the tools at all, and that decision is written here once for ``tether mcp serve`` and the proxy.

- Streamable HTTP listens on 127.0.0.1 by default, with the SDK's DNS-rebinding protection. Any
  other address needs authorization (``check_bind``): without it anyone who reaches the address
  could call the tools.
- With ``OAuth`` the app is an OAuth 2.1 resource server through the SDK's own seams
  (``AuthSettings``, its bearer backend and ``RequireAuthMiddleware``, the protected resource
  metadata of RFC 9728 and the ``WWW-Authenticate`` challenge naming it), the tokens checked by
  ``tether.serve.oauth.JWTVerifier``.
- A client that ends its MCP session (DELETE) ends its governed session at once
  (``ending_sessions``), rather than at the idle timeout.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from tether.errors import InvalidArgument
from tether.serve.jwks import is_loopback
from tether.serve.oauth import JWTVerifier

if TYPE_CHECKING:
    from tether.serve.clients import ClientGateways
    from tether.serve.oauth import OAuth

HOST = "127.0.0.1"
PATH = "/mcp"
SESSION_IDLE_TIMEOUT = 30 * 60.0  # the SDK's default for streamable HTTP sessions


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin and stdout until it closes stdin.

    While serving, the SDK points file descriptor 1 at stderr, so a tool's stray ``print``
    cannot corrupt the protocol stream."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def listen(port: int, host: str = HOST) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: any free port); OSError says why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # an answer's head and body go out as two writes: without this, Nagle's algorithm holds
        # the body for the client's delayed ACK (40 ms on Linux) on a kept-alive connection
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def ending_sessions(app: Any, gateways: ClientGateways) -> Any:
    """``app``, and when a client ends its MCP session (DELETE with its ``Mcp-Session-Id``, the
    spec's way to leave) and the transport accepts, its gateway is closed at once: its session
    ends in the journal instead of staying open until the idle timeout or shutdown."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        ended: list[str] = []
        if scope.get("type") == "http" and scope.get("method") == "DELETE":
            header = MCP_SESSION_ID_HEADER.lower().encode()
            session = dict(scope.get("headers") or ()).get(header)

            async def watch(message: Any) -> None:
                if (message.get("type") == "http.response.start" and session
                        and 200 <= message.get("status", 500) < 300):
                    ended.append(session.decode(errors="replace"))
                await send(message)

            await app(scope, receive, watch)
        else:
            await app(scope, receive, send)
        for session_id in ended:
            gateways.end(f"http:{session_id}", "the client ended its MCP session")

    return asgi


def check_bind(host: str, oauth: OAuth | None) -> None:
    """InvalidArgument when ``host`` is not a loopback address and authorization is off."""
    if oauth is None and not is_loopback(host):
        raise InvalidArgument(
            f"refusing to serve on {host}: without authorization anyone who reaches that "
            "address could call the tools. Turn it on (--oauth-issuer URL, with "
            "--oauth-resource set to the URL clients use), or serve on 127.0.0.1")


def url_of(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{PATH}"


def http_app(server: Server[Any], resource: str, *, host: str, session_idle_timeout: float,
             oauth: OAuth | None) -> Any:
    """The SDK's streamable-HTTP app; with ``oauth``, an OAuth 2.1 resource server for
    ``resource``: bearer tokens checked by ``JWTVerifier`` and its required scopes, protected
    resource metadata (RFC 9728) served, 401/403 answered with the challenge naming it."""
    if oauth is None:
        return server.streamable_http_app(streamable_http_path=PATH, host=host,
                                          session_idle_timeout=session_idle_timeout)
    from mcp.server.auth.settings import AuthSettings

    settings = AuthSettings(issuer_url=oauth.issuer,
                            resource_server_url=resource,
                            required_scopes=list(oauth.scopes), validate_token_resource=True)
    return server.streamable_http_app(streamable_http_path=PATH, host=host,
                                      session_idle_timeout=session_idle_timeout, auth=settings,
                                      token_verifier=JWTVerifier(oauth, resource))


async def serve_http(server: Server[Any], port: int, *,
                     session_idle_timeout: float = SESSION_IDLE_TIMEOUT,
                     on_ready: Callable[[str], None] | None = None,
                     gateways: ClientGateways | None = None, host: str = HOST,
                     oauth: OAuth | None = None) -> None:
    """Serve streamable HTTP at ``http://<host>:<port>/mcp`` until SIGINT or SIGTERM.

    ``port`` 0 takes any free port; ``on_ready`` gets the URL once requests are served;
    ``oauth`` makes it a resource server (``http_app``). Raises InvalidArgument for a
    non-loopback ``host`` without ``oauth``, OSError when the port cannot be bound."""
    check_bind(host, oauth)
    sock = listen(port, host)
    bound = int(sock.getsockname()[1])
    resource = url_of(host, bound) if oauth is None or oauth.resource is None else oauth.resource
    app = http_app(server, resource, host=host, session_idle_timeout=session_idle_timeout,
                   oauth=oauth)
    if gateways is not None:
        app = ending_sessions(app, gateways)
    await run_http(app, sock, host, url_of(host, bound), on_ready)


async def run_http(app: Any, sock: socket.socket, host: str, url: str,
                   on_ready: Callable[[str], None] | None) -> None:
    """Serve the ASGI ``app`` on the listening ``sock`` (``listen``) until SIGINT or SIGTERM;
    ``on_ready`` gets ``url`` once requests are served. The socket is closed at the end."""
    import uvicorn

    runner = uvicorn.Server(uvicorn.Config(app, host=host, port=int(sock.getsockname()[1]),
                                           log_level="warning", timeout_graceful_shutdown=5))

    async def announce() -> None:
        while not runner.started and not runner.should_exit:
            await asyncio.sleep(0.01)
        if runner.started and on_ready is not None:
            on_ready(url)

    waiter = asyncio.ensure_future(announce())
    try:
        await runner.serve(sockets=[sock])
    finally:
        waiter.cancel()
        sock.close()
