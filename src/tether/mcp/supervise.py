"""Keep a proxy's upstream MCP server running: notice when it dies, restart it, or give up loudly.

Why: a proxy whose upstream process died kept listing the upstream's tools and failed every
call, forever and silently — the clients saw errors, the operator saw nothing, and the process
looked healthy to whatever supervises it.

Decision: a watchdog looks at the upstream every ``check_every`` seconds (the connection is
closed, or the stdio server's process exited). When it is gone, the watchdog says so on the
log, with the server's last stderr lines, and reconnects — a new process, the tools listed and
checked against their pins again — waiting ``backoff * 2**n`` before attempt ``n``, at most
``restarts`` attempts. Calls that arrive meanwhile fail with the toolset's "not connected" error,
whose advice is the proxy's to its MCP clients (``proxy.RESTART_ADVICE``: call again shortly)
(they are not queued or retried: a call that may have reached the dead server is not repeated
behind anyone's back). When every attempt fails, ``UpstreamLost`` ends the proxy, so its exit
code is non-zero and its supervisor (systemd, a container runtime) can act.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tether.mcp.errors import MCPConnectionError

if TYPE_CHECKING:
    from tether.mcp.toolset import MCPToolset

CHECK_EVERY = 1.0  # seconds between looks at the upstream
RESTARTS = 5  # attempts to bring a dead upstream back before giving up
BACKOFF = 0.5  # seconds before the first attempt; doubled for each next one


class UpstreamLost(MCPConnectionError):
    """The upstream MCP server died and could not be restarted."""


async def watch(toolset: MCPToolset, log: Callable[[str], None], *,
                check_every: float = CHECK_EVERY, restarts: int = RESTARTS,
                backoff: float = BACKOFF) -> None:
    """Watch ``toolset``'s server until cancelled; raise UpstreamLost when it cannot be
    brought back."""
    name = toolset.server.name
    while True:
        await asyncio.sleep(check_every)
        if toolset.alive:
            continue
        tail = toolset.stderr_tail().strip()
        log(f"the upstream MCP server {name!r} is gone"
            + (f"; its last stderr lines:\n{tail}" if tail else "") + "; restarting it")
        last: Exception | None = None
        for attempt in range(1, restarts + 1):
            await asyncio.sleep(backoff * 2 ** (attempt - 1))
            try:
                await toolset.areconnect()
            except MCPConnectionError as exc:
                last = exc
                log(f"restart {attempt} of {restarts} failed: {exc}")
                continue
            log(f"the upstream MCP server {name!r} runs again (restart {attempt})")
            break
        else:
            raise UpstreamLost(f"the upstream MCP server {name!r} died and {restarts} restarts "
                               f"failed; the last: {last}")
