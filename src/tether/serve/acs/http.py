"""The Guardian over HTTP: one JSON-RPC request per POST, on loopback, bounded in size.

Why a bare ASGI app: the wire is one POST in, one JSON body out; a framework would add routes
and middleware for nothing. Decision: ``POST /acs`` (and ``/``) only; a body past ``max_bytes``
is refused before it is read whole (HTTP 413 with the JSON-RPC -32600), a body that is not JSON
is -32700, anything but a JSON object (a batch: §3 lets a Guardian refuse arrays) is -32600.
The server binds loopback only: the channel is authenticated by its signatures, not hidden,
but a Guardian has no business listening where the observed agent is not.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from tether.errors import InvalidArgument
from tether.serve.acs.guardian import Guardian
from tether.serve.acs.wire import INVALID_REQUEST, PARSE_ERROR, AcsRefused, error
from tether.serve.transports import listen, run_http

MAX_BYTES = 1 << 20  # a request larger than 1 MiB is refused unread
LOOPBACK = ("127.0.0.1", "::1", "localhost")
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def acs_app(guardian: Guardian, max_bytes: int = MAX_BYTES) -> Callable[..., Awaitable[None]]:
    """The ASGI app answering ``guardian``'s requests."""

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST" or scope["path"] not in ("/acs", "/"):
            await _reply(send, 405 if scope["path"] in ("/acs", "/") else 404,
                         {"error": "POST one ACS JSON-RPC request to /acs"})
            return
        body, chunks, size = b"", [], 0
        more = True
        while more:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > max_bytes:
                await _reply(send, 413, error(None, AcsRefused(
                    INVALID_REQUEST, "payload_too_large",
                    f"the request is larger than {max_bytes} bytes")))
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            await _reply(send, 200, error(None, AcsRefused(PARSE_ERROR, "parse_error",
                                                           "the body is not JSON")))
            return
        await _reply(send, 200, await guardian.handle(request))

    return app


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


async def serve_acs(guardian: Guardian, *, host: str = "127.0.0.1", port: int = 8787,
                    on_ready: Callable[[str], None] | None = None,
                    max_bytes: int = MAX_BYTES) -> None:
    """Serve ``guardian`` at ``http://host:port/acs`` until SIGINT or SIGTERM (``port`` 0: any
    free port; ``on_ready`` gets the URL). InvalidArgument for a host that is not loopback."""
    if host not in LOOPBACK:
        raise InvalidArgument(f"--host {host!r} is not loopback: the Guardian listens on "
                              "127.0.0.1 or ::1 only (put a TLS proxy in front to reach it "
                              "from elsewhere)")
    sock = listen(port, host)
    bound = int(sock.getsockname()[1])
    url = f"http://{f'[{host}]' if ':' in host else host}:{bound}/acs"
    await run_http(acs_app(guardian, max_bytes), sock, host, url, on_ready)
