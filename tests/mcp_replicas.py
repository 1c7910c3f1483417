"""Two replicas of ``tether mcp serve`` on one store, behind a round-robin HTTP proxy, and a mix
of 2025-11-25 (initialize, an MCP session) and 2026-07-28 (stateless) clients driven through it:
for tests/test_mcp_replicas.py and bench/replicas.py.

The proxy (``RoundRobin``, Starlette and httpx on 127.0.0.1) sends each request to the next
replica in turn — except a request that carries an ``Mcp-Session-Id`` when ``sticky``: that goes
to the replica that issued the id (read from the ``initialize`` response), since a handshake
session lives in one replica's memory. A stateless request carries no session, so any replica
serves it. Every call's text is unique (``call-<n>``), so the journal can be checked for each
call exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mcp_peers import http_peer, http_server

TOOLS = "tests/mcp/replica_tools.py:tools"
MODERN = "2026-07-28"
HOP_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection",
                         "keep-alive"})


def policy_yaml(limited: int) -> str:
    """Everything allowed; ``limited`` calls of the tool ``limited`` an hour, per agent (every
    client of every replica is the agent ``gateway:mcp-client``), kept in the store."""
    return ("version: 1\npolicy_id: replicas\ndefault: allow\nrules: []\nquotas:\n"
            f"  - id: limited-calls\n    tool: limited\n    limit: {limited}\n"
            "    window: 1h\n    per: agent\n")


class RoundRobin:
    """An ASGI reverse proxy over ``upstreams``: round robin, sticky by ``Mcp-Session-Id``."""

    def __init__(self, upstreams: Sequence[str], *, sticky: bool = True) -> None:
        self.upstreams = list(upstreams)
        self.sticky = sticky
        self.served = [0] * len(upstreams)  # requests each replica answered
        self._turn = itertools.cycle(range(len(upstreams)))
        self._sessions: dict[str, int] = {}  # Mcp-Session-Id -> the replica that issued it
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(120.0),
                                         limits=httpx.Limits(max_connections=200))

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.background import BackgroundTask
        from starlette.requests import Request
        from starlette.responses import StreamingResponse
        from starlette.routing import Route

        async def forward(request: Request) -> StreamingResponse:
            session = request.headers.get("mcp-session-id")
            index = (self._sessions.get(session, -1) if self.sticky and session else -1)
            if index < 0:
                index = next(self._turn)
            self.served[index] += 1
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
            sent = self._client.build_request(request.method, self.upstreams[index],
                                              headers=headers, content=await request.body())
            answer = await self._client.send(sent, stream=True)
            issued = answer.headers.get("mcp-session-id")
            if issued:
                self._sessions[issued] = index
            back = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_HEADERS}
            return StreamingResponse(answer.aiter_raw(), status_code=answer.status_code,
                                     headers=back, background=BackgroundTask(answer.aclose))

        return Starlette(routes=[Route("/mcp", forward, methods=["GET", "POST", "DELETE"])])

    async def aclose(self) -> None:
        await self._client.aclose()


@contextlib.asynccontextmanager
async def serving(proxy: RoundRobin) -> AsyncIterator[str]:
    """``proxy`` on a loopback port of its own (bound before serving starts, so a client may
    connect at once); its URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(proxy.app(), log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=5))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task
        await proxy.aclose()
        sock.close()


@contextlib.contextmanager
def replicas(store: str, policy: Path, n: int = 2,
             extra: Sequence[str] = ()) -> Iterator[list[str]]:
    """``n`` ``tether mcp serve`` processes on ``store``: their URLs."""
    args = ["serve", TOOLS, "--policy", str(policy), "--store", store, *extra]
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(http_server(args))[0] for _ in range(n)]


def stateless_body(n: int, tool: str, text: str) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": text}, "_meta": meta}}


@dataclass
class Tally:
    """What the clients saw: each call's (text, tether status, tether session), by kind."""

    stateless: list[tuple[str, str, str]] = field(default_factory=list)
    handshake: list[tuple[str, str, str]] = field(default_factory=list)
    not_found: int = 0  # 404 "session not found" answers to stateless requests
    errors: list[str] = field(default_factory=list)  # anything else that went wrong
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        return len(self.stateless) + len(self.handshake)


async def stateless_client(url: str, calls: Sequence[tuple[int, str]], tally: Tally) -> None:
    """A 2026-07-28 client: each call a request of its own, no session, no initialize."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call"}
    async with httpx.AsyncClient(timeout=120.0) as client:
        for n, tool in calls:
            text = f"call-{n}"
            answer = await client.post(url, json=stateless_body(n, tool, text),
                                       headers={**headers, "Mcp-Name": tool})
            if answer.status_code == 404:
                tally.not_found += 1
                continue
            body = answer.json()
            if answer.status_code != 200 or "result" not in body:
                tally.errors.append(f"{answer.status_code} {answer.text[:300]}")
                continue
            meta = body["result"].get("_meta") or {}
            tally.stateless.append((text, str(meta.get("tether/status")),
                                    str(meta.get("tether/session"))))


async def handshake_client(url: str, calls: Sequence[tuple[int, str]], tally: Tally) -> None:
    """A 2025-11-25 client (the SDK's ClientSession): initialize, then its calls in one MCP
    session."""
    try:
        async with http_peer(url) as client:
            for n, tool in calls:
                result = await client.call_tool(tool, {"text": f"call-{n}"})
                meta = result.meta or {}
                tally.handshake.append((f"call-{n}", str(meta.get("tether/status")),
                                        str(meta.get("tether/session"))))
    except Exception as exc:  # counted, never lost: the test asserts there is none
        tally.errors.append(f"handshake client: {type(exc).__name__}: {exc}")


async def drive(url: str, calls: int, *, stateless: int = 6, handshake: int = 2,
                limited_every: int = 10) -> Tally:
    """``calls`` tool calls through ``url``, dealt in turn to ``stateless`` 2026-07-28 clients
    and ``handshake`` 2025-11-25 ones running at once; every ``limited_every``-th call is of
    the tool ``limited``, the rest of ``echo``."""
    plan = [(n, "limited" if n % limited_every == 0 else "echo") for n in range(calls)]
    clients = stateless + handshake
    dealt = [plan[i::clients] for i in range(clients)]
    tally = Tally()
    start = time.perf_counter()
    await asyncio.gather(*(stateless_client(url, dealt[i], tally) for i in range(stateless)),
                         *(handshake_client(url, dealt[stateless + i], tally)
                           for i in range(handshake)))
    tally.seconds = time.perf_counter() - start
    return tally



def read_journals(store: str) -> dict[str, list[Any]]:
    """Every session's events in the store at URL ``store``."""
    from tether.store.opening import open_store

    opened = open_store(store)
    try:
        return {info.session_id: list(opened.read(info.session_id))
                for info in opened.sessions()}
    finally:
        opened.close()
