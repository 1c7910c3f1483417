"""What the recording MCP test servers share (``era_server.py``, ``mrtr_server.py``): reading a
request's whole body in front of the SDK's app, so a test server can record it and answer some
requests itself (a wire the SDK would never send); the rest go on to the app with the body
replayed. And serving on 127.0.0.1, printing ``serving at URL`` once it listens (what
``tests/mcp_peers.printed_url`` waits for).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn

# (scope, body, send) -> whether it answered the request itself
Intercept = Callable[[dict[str, Any], bytes, Any], Awaitable[bool]]


def record(path: str, entry: Any) -> None:
    """Append ``entry`` to ``path`` as a JSON line."""
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


async def answer(send: Any, status: int, body: dict[str, Any]) -> bool:
    """Answer the request with ``body`` as JSON; True (it is answered)."""
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
    return True


def intercepting(app: Any, intercept: Intercept) -> Any:
    """``app`` behind ``intercept``, which sees every HTTP request's whole body first."""
    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if await intercept(scope, body, send):
            return None
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        return await app(scope, replay, send)

    return asgi


def serve(app: Any) -> None:
    """Serve ``app`` on 127.0.0.1 (a free port) until killed."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # listening from here: a client's connection waits in the backlog until
    port = sock.getsockname()[1]  # uvicorn accepts it, so the URL can be printed at once
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"serving at http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    server.run(sockets=[sock])
