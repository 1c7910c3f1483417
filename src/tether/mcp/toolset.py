"""``MCPToolset``: the tools of one MCP server, connected, pinned and ready for an Agent.

Why: this is the one object a user holds — ``with connect(server) as fs:`` then
``Agent(tools=[*fs])`` — so it ties the pieces together: it opens the connection on its private
loop, lists every tool (all pages), applies pinning to each definition, builds the tether tools,
and at each call re-checks the pin against the server's current definition before anything is
sent. It works from sync and async code alike (``with`` / ``async with``, ``open`` / ``aopen``).

Decision: the pin check runs at every call, not only at discovery, so an approval given while
the agent runs takes effect at the next call, and a server that announces a changed tool list
(``notifications/tools/list_changed``) is re-listed first — a tool changed mid-session is
blocked before its next call.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

from tether.errors import WrongType
from tether.mcp.annotations import tool_meta, tool_name
from tether.mcp.config import MCPServer
from tether.mcp.connection import Connection, require_sdk
from tether.mcp.content import render
from tether.mcp.errors import MCPConnectionError, MCPError, MCPToolBlocked, MCPToolError
from tether.mcp.fit import unfit
from tether.mcp.loop import LoopThread
from tether.mcp.pins import MemoryPinStore, Pin, PinStore, definition_of, observe
from tether.mcp.schema import ArgumentSchema
from tether.mcp.tool import MCPTool, visible_spec
from tether.types import ToolSpec

EXTRA = 5.0  # slack on top of the connection's own bounds for a blocking open/close


class MCPToolset:
    """The tools of one MCP server. Open it (``with``, ``async with``, ``open()``) before use."""

    def __init__(self, server: MCPServer, *, pins: PinStore | None = None,
                 require_approval_for_new: bool = False,
                 on_relisted: Callable[[], None] | None = None,
                 advice: str | None = None) -> None:
        """``on_relisted`` is called when a call finds the tool list announced as changed and
        lists it again, before the call is sent: raising MCPError there stops the call (the
        proxy re-checks its policy against the new list). ``advice``: what a call that finds
        the server gone is told to do, in place of the Python API's advice (the proxy tells its
        MCP clients to call again once it has restarted the server)."""
        if not isinstance(server, MCPServer):
            raise WrongType(f"expected an MCPServer, got {server!r}; build one with "
                            "MCPServer.stdio(...) or MCPServer.http(...)")
        self.server = server
        self.credentials = server.credentials()  # what it was given and may echo: read once
        self.pins: PinStore = MemoryPinStore() if pins is None else pins
        self.require_approval_for_new = require_approval_for_new
        self.on_relisted = on_relisted
        self.advice = advice
        self._loop: LoopThread | None = None
        self._conn: Connection | None = None
        self._tools: dict[str, MCPTool] = {}  # by the server's tool name
        # mcp name -> its definition as last listed, its schema, why it is unfit to show (or None)
        self._current: dict[str, tuple[dict[str, Any], ArgumentSchema, str | None]] = {}

    def __repr__(self) -> str:
        state = "open" if self._conn is not None else "closed"
        return f"<MCPToolset {self.server.name} ({state}, {len(self._tools)} tools)>"

    # -- the tools ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[MCPTool]:
        if self._conn is None and not self._tools:  # Agent(tools=[*fs]) before opening
            self._require_open()
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names as the model sees them."""
        return tuple(t.name for t in self._tools.values())

    def get(self, name: str) -> MCPTool | None:
        """A tool by its tether name or its name on the server."""
        found = self._tools.get(name)
        return found or next((t for t in self._tools.values() if t.name == name), None)

    def offered(self) -> list[ToolSpec]:
        """The tools the server offers as of its last listing, under the model's names, with
        their current definitions (not the pinned ones): what a policy governing them must
        name (``tether.policy.names``)."""
        return [ToolSpec(tool.name, str(definition.get("description") or ""),
                         dict(definition.get("inputSchema") or {}))
                for mcp_name, (definition, _, _) in self._current.items()
                if (tool := self._tools.get(mcp_name)) is not None]

    @property
    def protocol_version(self) -> str | None:
        """The MCP protocol version the open connection speaks (``"2026-07-28"``, or the 2025
        handshake's, e.g. ``"2025-11-25"``); None while closed. ``MCPServer.protocol`` pins it."""
        return None if self._conn is None else self._conn.protocol_version

    @property
    def stale(self) -> bool:
        """The server announced a changed tool list that has not been listed again yet."""
        return self._conn is not None and self._conn.stale

    def schema_of(self, mcp_name: str) -> ArgumentSchema:
        current = self._current.get(mcp_name)
        if current is None:
            raise MCPError(f"MCP server {self.server.name!r} no longer offers tool "
                           f"{mcp_name!r}; refresh the toolset to see what it offers")
        return current[1]

    # -- pinning -----------------------------------------------------------------------------

    def _how_to_approve(self, mcp_name: str) -> str:
        return (f"toolset.approve({mcp_name!r}) or pins.approve({self.server.name!r}, "
                f"{mcp_name!r})")

    def approve(self, tool: str, *, approver: str | None = None,
                fingerprint: str | None = None) -> Pin:
        """Approve the pending definition of ``tool`` (tether name or server name); pass the
        ``fingerprint`` of the definition you reviewed so a later swap is refused."""
        found = self.get(tool)
        return self.pins.approve(self.server.name, found.mcp_name if found else tool,
                                 approver=approver, fingerprint=fingerprint)

    def pending(self) -> list[Pin]:
        """Definitions of this server's tools that wait for approval."""
        return [p for p in self.pins.all_pending() if p.server == self.server.name]

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self) -> MCPToolset:
        """Connect, list and pin the tools (blocking). Returns the toolset."""
        if self._conn is not None:
            return self
        require_sdk()
        loop = LoopThread(self.server.name)
        try:
            loop.call(self._open(), timeout=2 * self.server.connect_timeout +
                      self.server.close_timeout + EXTRA)
        except BaseException:
            loop.stop()
            raise
        self._loop = loop
        return self

    async def aopen(self) -> MCPToolset:
        """Connect, list and pin the tools. Returns the toolset."""
        if self._conn is not None:
            return self
        require_sdk()
        loop = LoopThread(self.server.name)
        try:
            await loop.run(self._open())
        except BaseException:
            loop.stop()
            raise
        self._loop = loop
        return self

    async def _open(self) -> None:
        conn = Connection(self.server) if self.advice is None else Connection(self.server,
                                                                              self.advice)
        await conn.open()
        try:
            await self._list(conn)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn

    def close(self) -> None:
        """Close the session and stop the server (bounded by ``close_timeout``). Idempotent."""
        loop, conn, self._loop, self._conn = self._loop, self._conn, None, None
        if loop is None:
            return
        try:
            if conn is not None:  # past the timeout the shutdown is abandoned: its daemon
                with contextlib.suppress(TimeoutError):  # thread cannot block exit
                    loop.call(conn.close(), timeout=self.server.close_timeout + EXTRA)
        finally:
            loop.stop()

    async def aclose(self) -> None:
        loop, conn, self._loop, self._conn = self._loop, self._conn, None, None
        if loop is None:
            return
        try:
            if conn is not None:
                await loop.run(conn.close())
        finally:
            loop.stop()

    def reconnect(self) -> MCPToolset:
        """Close and open again (after the server died); tools are re-listed and re-pinned."""
        self.close()
        return self.open()

    async def areconnect(self) -> MCPToolset:
        await self.aclose()
        return await self.aopen()

    def refresh(self) -> MCPToolset:
        """List the tools again (new tools are added; changed ones are checked against pins)."""
        loop, conn = self._require_open()
        loop.call(self._list(conn), timeout=self.server.connect_timeout + EXTRA)
        return self

    async def arefresh(self) -> MCPToolset:
        loop, conn = self._require_open()
        await loop.run(self._list(conn))
        return self

    @property
    def alive(self) -> bool:
        """Open, connected, and (for a stdio server) its process still running."""
        return self._conn is not None and self._conn.alive

    def stderr_tail(self) -> str:
        """The last lines a stdio server wrote to its stderr."""
        return "" if self._conn is None else self._conn.stderr_tail()

    def __enter__(self) -> MCPToolset:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> MCPToolset:
        return await self.aopen()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def _require_open(self) -> tuple[LoopThread, Connection]:
        if (self._loop is None or self._conn is None) and self.advice is not None:
            raise MCPConnectionError(f"MCP server {self.server.name!r} is not connected; the "
                                     f"call was not sent. {self.advice}")
        if self._loop is None or self._conn is None:
            raise MCPConnectionError(
                f"the toolset of MCP server {self.server.name!r} is not open; use "
                "'with connect(server) as tools:' (or 'async with', or tools.open()) around the "
                "agent run")
        return self._loop, self._conn

    # -- discovery and calls (on the private loop) ------------------------------------------

    async def _list(self, conn: Connection) -> None:
        listed = await conn.list_tools()
        current: dict[str, tuple[dict[str, Any], ArgumentSchema, str | None]] = {}
        taken = {t.name: t.mcp_name for t in self._tools.values()}
        for raw in listed:
            mcp_name = str(raw.get("name"))
            definition = definition_of(raw)
            schema = ArgumentSchema(mcp_name, _schema(raw.get("inputSchema")))
            why = unfit(definition, schema.broken)  # judged once a listing, not at each call
            current[mcp_name] = (definition, schema, why)
            if mcp_name in self._tools:
                continue  # the model's view of a known tool stays; calls re-check its pin
            verdict = observe(self.pins, self.server.name, definition,
                              require_approval_for_new=self.require_approval_for_new,
                              how_to_approve=self._how_to_approve(mcp_name))
            name = tool_name(self.server, mcp_name)
            if taken.get(name, mcp_name) != mcp_name:
                name = f"{name[:55]}_{hashlib.sha256(mcp_name.encode()).hexdigest()[:8]}"
            taken[name] = mcp_name
            self._tools[mcp_name] = MCPTool(
                self, mcp_name, name, tool_meta(self.server, _mapping(raw.get("annotations")),
                                                 mcp_name),
                visible_spec(name, self.server.name, definition, verdict, why))
        self._current = current

    async def invoke(self, mcp_name: str, arguments: dict[str, Any], *,
                     traceparent: str = "", asks: Any = None) -> str:
        """Call a tool from any loop or thread; runs on the connection's private loop.
        ``traceparent``, the call's span when telemetry is on, goes in the request's ``_meta``.
        ``asks`` (the call's ``CallAsking``, see ``MCPTool.invoke``): the session the server's
        sampling and elicitation requests during the call go to (``tether.mcp.requests``)."""
        loop, _ = self._require_open()
        return await loop.run(self._call(mcp_name, arguments, traceparent, asks))

    async def _call(self, mcp_name: str, arguments: dict[str, Any], traceparent: str,
                    asks: Any = None) -> str:
        _, conn = self._require_open()
        if conn.stale and conn.connected:  # the server announced a changed tool list
            await self._list(conn)
            if self.on_relisted is not None:
                self.on_relisted()
        current = self._current.get(mcp_name)
        if current is None:
            raise MCPError(f"MCP server {self.server.name!r} no longer offers tool "
                           f"{mcp_name!r}; the call was not sent")
        verdict = observe(self.pins, self.server.name, current[0],
                          require_approval_for_new=self.require_approval_for_new,
                          how_to_approve=self._how_to_approve(mcp_name))
        if not verdict.allowed:
            raise MCPToolBlocked(verdict.reason, server=self.server.name, tool=mcp_name)
        why = current[2]
        if why is not None:
            raise MCPToolBlocked(f"tool {mcp_name!r} of MCP server {self.server.name!r} is not "
                                 f"offered: {why}. The call was not sent to the server.",
                                 server=self.server.name, tool=mcp_name)
        with conn.requests.calling(asks):
            result = await conn.call(mcp_name, arguments, traceparent=traceparent,
                                     progress=conn.requests.progress_for(asks), asks=asks,
                                     log_level=conn.requests.log_level_for(asks))
        content = result.get("content")
        text = render(content if isinstance(content, list) else [],
                      result.get("structuredContent"))
        if result.get("isError"):
            raise MCPToolError(text or f"MCP tool {mcp_name!r} reported an error without a "
                                       "message")
        return text


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _schema(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {"type": "object"}


def connect(server: MCPServer, *, pins: PinStore | None = None,
            require_approval_for_new: bool = False) -> MCPToolset:
    """A toolset for ``server``, to open with ``with`` or ``async with``::

        async with connect(MCPServer.stdio("fs", "mcp-server-filesystem", "/data")) as fs:
            agent = Agent(model=..., reasoning=ReAct(), tools=[*fs])
    """
    return MCPToolset(server, pins=pins, require_approval_for_new=require_approval_for_new)
