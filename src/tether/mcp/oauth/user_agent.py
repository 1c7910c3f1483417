"""The user agent of the authorization-code flow: ``authorize(url) -> redirect URL``.

Why: the code flow needs a person at a browser, which a library cannot assume. The seam is one
async callable; the default prints the URL (and opens a browser when one may exist) and waits
for the redirect on a listener bound to 127.0.0.1, and a test's user agent follows the URL
without a browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from urllib.parse import parse_qs, urlsplit

from tether.errors import InvalidArgument
from tether.mcp.errors import MCPConnectionError
from tether.mcp.oauth.flows import AUTHORIZE_TIMEOUT, Authorize


def loopback_port(redirect_uri: str) -> tuple[str, int, str] | None:
    """``(host, port, path)`` when ``redirect_uri`` is a plain-http loopback URL with a port."""
    parts = urlsplit(redirect_uri)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    if parts.port is None:
        return None
    return parts.hostname, parts.port, parts.path or "/"


def free_loopback_redirect() -> str:
    """A redirect URL on 127.0.0.1 at a port free now (``http://127.0.0.1:PORT/callback``),
    for a code flow's ``redirect_uri``."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}/callback"


PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
        b"tether: the authorization is complete; you can close this tab.\n")
NOT_HERE = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n"


def loopback_authorize(redirect_uri: str, *, timeout: float = AUTHORIZE_TIMEOUT,
                       open_browser: bool = True) -> Authorize:
    """The default user agent: print the authorization URL on stderr (and open a browser when a
    graphical one may exist), then wait up to ``timeout`` seconds for the redirect on
    ``redirect_uri``, a listener bound to 127.0.0.1 (loopback only). Returns the redirect URL."""
    where = loopback_port(redirect_uri)
    if where is None:
        raise InvalidArgument("the default authorize needs an http loopback redirect_uri with a "
                              f"port (http://127.0.0.1:PORT/callback), got {redirect_uri!r}; pass "
                              "authorize= to handle another redirect URI")
    _, port, path = where

    async def authorize(url: str) -> str:
        got: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
                parts = line.split()
                target = parts[1] if len(parts) >= 2 else ""
                if parts[:1] == ["GET"] and urlsplit(target).path == path and not got.done():
                    writer.write(PAGE)
                    got.set_result(f"http://127.0.0.1:{port}{target}")
                else:
                    writer.write(NOT_HERE)
                await writer.drain()
            except (OSError, TimeoutError, UnicodeError):  # a visitor that broke off or sent
                pass  # no request line (a browser's probe, a scan): the listener waits on
            finally:
                writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", port)
        try:
            print(f"tether: to authorize this MCP client, open this URL in a browser:\n  {url}",
                  file=sys.stderr, flush=True)
            if open_browser and _has_browser():
                with contextlib.suppress(Exception):
                    import webbrowser

                    await asyncio.to_thread(webbrowser.open, url)
            try:
                async with asyncio.timeout(timeout):
                    return await got
            except TimeoutError:
                raise MCPConnectionError(
                    f"no authorization arrived at {redirect_uri} within {timeout:g}s; open the "
                    "printed URL in a browser and sign in (and raise the server's "
                    "connect_timeout, which bounds the whole connection)") from None
        finally:
            server.close()
            await server.wait_closed()

    return authorize


def _has_browser() -> bool:
    """A graphical browser may exist (a text one would take over the terminal instead)."""
    import os

    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def code_from(redirect: str) -> tuple[str, str | None, str | None]:
    """``(code, state, iss)`` from the redirect URL; an ``error`` becomes a clear error."""
    query = parse_qs(urlsplit(redirect).query)

    def one(key: str) -> str | None:
        values = query.get(key)
        return values[0] if values else None

    error = one("error")
    if error is not None:
        detail = one("error_description")
        raise MCPConnectionError(
            f"the authorization server refused the authorization ({error}"
            f"{': ' + detail[:200] if detail else ''}); sign in again, or check the client's "
            "registration and the scopes it asks for")
    code = one("code")
    if code is None:
        raise MCPConnectionError("the redirect after the authorization carried no code; check "
                                 "that authorize() returns the URL the authorization server "
                                 "redirected to")
    return code, one("state"), one("iss")


