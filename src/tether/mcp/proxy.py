"""A governing MCP proxy: another MCP server's tools, served through tether's chokepoint.

Why: teams already run MCP servers (a filesystem, git, a database) and connect assistants to
them directly, where nothing decides, bounds or records the calls. The proxy sits in between.
Clients connect to it; it connects to the upstream server with tether's own MCP client
(``MCPToolset``: arguments checked against the upstream's schemas, definitions pinned,
annotations read as untrusted hints, every wait bounded), and each call goes through the
calling client's Gateway (``tether.mcp.server``) with the operator's policy — deny, approval,
partial allow, mask, degrade — and into the journal. A call the policy refuses is never sent to
the upstream; a degraded call runs the fallback tool, itself decided again.

Decisions:

- Clients see the upstream's tools under their own names (no prefix), as *pinned*: the name,
  description, input schema and annotations approved at first discovery (or later by a
  person). A tool whose definition changed upstream keeps showing the approved text and is
  blocked at call time until re-approved; ``pins`` (``--pins FILE``) keeps pins across restarts,
  so a change made while the proxy was down is caught too.
- The tool list is fixed when the proxy starts. A tool the upstream adds later is offered after
  a restart, where it is pinned like any new tool; nothing reaches a client past the pinning.
- One upstream connection serves every client; each client still has its own gateway, budget
  and journal.
- The hints clients see are the pinned definition's own (reviewed, or seen first): they only
  steer a client's prompts. What runs is decided by the policy on tether's cautious reading of
  the upstream's annotations (``tether.mcp.annotations``), not on these hints.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import mcp_types as types

from tether.mcp.clients import Governance
from tether.mcp.config import MCPServer
from tether.mcp.pins import PinStore
from tether.mcp.server import serve, tool_annotations
from tether.mcp.supervise import RESTARTS, watch
from tether.mcp.toolset import MCPToolset

if TYPE_CHECKING:
    from tether.runtime.chokepoint.gateway import Gateway

UPSTREAM = "upstream"


def upstream_server(argv: Sequence[str], *, name: str = UPSTREAM,
                    env: Mapping[str, str] | None = None, trusted: bool = False,
                    call_timeout: float = 30.0, connect_timeout: float = 20.0) -> MCPServer:
    """The upstream MCP server spawned from ``argv`` (stdio), its tools keeping their names."""
    if not argv or not argv[0]:
        raise ValueError("give the command of the upstream MCP server after '--', e.g. "
                         "tether mcp proxy --policy policy.yaml -- npx -y "
                         "@modelcontextprotocol/server-filesystem /data")
    return MCPServer.stdio(name, argv[0], *argv[1:], env=env, trusted=trusted, prefix="",
                           call_timeout=call_timeout, connect_timeout=connect_timeout)


def proxied_listing(toolset: MCPToolset) -> list[types.Tool]:
    """The ``tools/list`` entries of an open toolset: each tool's pinned definition (for a tool
    blocked by pinning, the approved one with a note; for a new tool awaiting approval, no
    server text at all — see ``tether.mcp.tool.visible_spec``).

    The hints are those of the pinned definition — what was reviewed, or seen first — so a
    client does not prompt on every read: they steer a client's prompts, never what runs, which
    the proxy's policy decides on tether's own, cautious reading of the tool. A tool whose
    definition waits for approval shows that cautious reading instead."""
    listing = []
    server = toolset.server.name
    for tool in toolset:
        pinned = toolset.pins.get(server, tool.mcp_name)
        waiting = toolset.pins.pending(server, tool.mcp_name) is not None
        hints = (pinned.definition.get("annotations") if pinned is not None and not waiting
                 else None)
        listing.append(types.Tool(
            name=tool.spec.name, description=tool.spec.description,
            input_schema=dict(tool.spec.parameters),
            annotations=reviewed_hints(hints) if isinstance(hints, Mapping)
            else tool_annotations(tool.meta)))
    return listing


def reviewed_hints(annotations: Mapping[str, object]) -> types.ToolAnnotations:
    """A pinned definition's annotations, as the spec's hints (a non-boolean hint is none)."""
    def hint(key: str) -> bool | None:
        value = annotations.get(key)
        return value if isinstance(value, bool) else None

    title = annotations.get("title")
    return types.ToolAnnotations(
        title=title if isinstance(title, str) else None,
        read_only_hint=hint("readOnlyHint"), destructive_hint=hint("destructiveHint"),
        idempotent_hint=hint("idempotentHint"), open_world_hint=hint("openWorldHint"))


async def proxy(upstream: MCPServer, governance: Governance, *,
                transport: Literal["stdio", "http"] = "stdio", port: int = 0,
                pins: PinStore | None = None, require_approval_for_new: bool = False,
                name: str | None = None, on_ready: Callable[[str], None] | None = None,
                on_client: Callable[[str, Gateway], None] | None = None,
                log: Callable[[str], None] | None = None, restarts: int = RESTARTS) -> None:
    """Connect to ``upstream`` and serve its tools, governed, until the transport ends; the
    upstream is stopped when the proxy stops, and restarted when it dies (``supervise``; each
    event told to ``log``). Raises MCPConnectionError when the upstream cannot be started (the
    message has its last stderr lines), UpstreamLost when it died and could not be restarted."""
    async with MCPToolset(upstream, pins=pins,
                          require_approval_for_new=require_approval_for_new) as toolset:
        serving = asyncio.ensure_future(serve(
            list(toolset), governance, transport=transport, port=port,
            name=name or f"tether-proxy-{upstream.name}", listing=proxied_listing(toolset),
            on_ready=on_ready, on_client=on_client))
        watching = asyncio.ensure_future(watch(toolset, log or _stderr, restarts=restarts))
        try:
            await asyncio.wait({serving, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (serving, watching):
                task.cancel()
            await asyncio.gather(serving, watching, return_exceptions=True)
        if not watching.cancelled():
            watching.result()  # UpstreamLost: the upstream could not be brought back
        serving.result()  # the server's own error, if it ended with one


def _stderr(message: str) -> None:
    print(f"tether mcp proxy: {message}", file=sys.stderr, flush=True)
