"""One live session with one MCP server, built on the official ``mcp`` SDK.

Why: the SDK's transports and ``ClientSession`` are async context managers that must be entered
and exited by one task, and they report trouble in SDK terms (``MCPError`` codes, exception
groups). This module owns that lifecycle — an *owner task* enters the transport and the session,
initialises, and waits to be told to close — and translates every failure into an error that
says which server, what happened, the server's last stderr lines, and what to do.

Decision: every wait is bounded. Start-up and listing by ``connect_timeout``, each call by the
caller's timeout (and a backstop just after ``call_timeout``), shutdown by ``close_timeout``;
past that the owner task is cancelled and abandoned. A server that exits fails the pending and
all later calls at once (``CONNECTION_CLOSED``), never leaves them hanging. Runs only on the
connection's private loop (``tether.mcp.loop``); imports the SDK only when a connection opens.

The era (2026-07-28 or the 2025 handshake) is negotiated, or pinned by ``MCPServer.protocol``,
in ``tether.mcp.eras``; ``protocol_version`` says which one the connection speaks. A 2026 call
the server answers with ``InputRequiredResult`` (its in-call sampling or elicitation) is
answered by the call's session and retried, in bounded rounds (``tether.mcp.input_required``).

A call sends exactly the trace context tether gives it (``propagating``): its own span in
``_meta.traceparent`` when telemetry is on, and none otherwise — never an ambient one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from tether.errors import install_command
from tether.mcp.config import MCPServer
from tether.mcp.eras import MODERN, Negotiation, first_error
from tether.mcp.errors import MCPCapabilityMissing, MCPConnectionError, MCPError
from tether.mcp.input_required import InputRounds, malformed
from tether.mcp.requests import ServerRequests
from tether.mcp.spawned import kill_group, record_spawns, stop_recording
from tether.mcp.stderr import StderrTail
from tether.tracing import TraceParent

MAX_PAGES = 1000  # a server whose cursors never end is broken, not large
BACKSTOP = 1.0  # seconds past call_timeout before the SDK gives up on its own
LISTEN_ACK_WAIT = 5.0  # seconds a 2026 server has to acknowledge the tool-change stream


@contextlib.contextmanager
def propagating(parent: TraceParent | None) -> Iterator[None]:
    """Make ``parent`` (or no span at all) the OpenTelemetry context the SDK sees while it sends.

    The SDK injects the *ambient* OpenTelemetry context into every request's ``_meta`` (SEP-414),
    and the ambient context is not always tether's: a proxied call runs under the span the SDK's
    server middleware extracted from the proxy's own client, ``tracestate`` and all. So tether
    decides what goes out: the call's own span (the SDK's client span, when an OpenTelemetry
    SDK is installed, is made its child) or, with telemetry off, nothing."""
    from opentelemetry import context, trace

    ctx = context.Context()
    if parent is not None:
        ctx = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
            int(parent.trace_id, 16), int(parent.span_id, 16), is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED if parent.sampled
                                         else trace.TraceFlags.DEFAULT))), ctx)
    token = context.attach(ctx)
    try:
        yield
    finally:
        context.detach(token)


def require_sdk() -> None:
    """Fail early, with the fix, when the ``mcp`` extra is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise MCPError(f"the MCP client needs the official MCP SDK, which is not installed "
                       f"({exc}); install it with: {install_command('mcp')}") from None


def root_cause(exc: BaseException) -> BaseException:
    """The first real exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def describe(exc: BaseException) -> str:
    exc = root_cause(exc)
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


MAX_REQUIRED_CHARS = 4000  # a -32021's requiredCapabilities longer than this is not handed on


def required_capabilities(exc: Any) -> dict[str, Any] | None:
    """What a server's -32021 (MissingRequiredClientCapabilityError) says it requires, as a
    ``ClientCapabilities`` object of MCP's own capabilities (anything else dropped), or None:
    another error, or data that is not such an object (untrusted: checked, bounded)."""
    import json

    from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY, ClientCapabilities

    data = exc.data
    if exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY or not isinstance(data, dict):
        return None
    try:
        required = ClientCapabilities.model_validate(data.get("requiredCapabilities"))
    except Exception:
        return None
    shown: dict[str, Any] = required.model_dump(by_alias=True, mode="json", exclude_none=True)
    return shown if shown and len(json.dumps(shown)) <= MAX_REQUIRED_CHARS else None


#: What a library user can do about a connection that is gone (a proxy says what its clients can).
RECONNECT_ADVICE = ("Reconnect with toolset.reconnect() (or open a new toolset) once the server "
                    "runs again")


class Connection:
    __slots__ = ("_closing", "_failure", "_processes", "_ready", "_session", "_stale", "_stderr",
                 "_task", "_unwatched", "_watcher", "advice", "protocol_version", "requests",
                 "server")

    def __init__(self, server: MCPServer, advice: str = RECONNECT_ADVICE) -> None:
        self.server = server
        self.advice = advice  # what the reader of a "not connected" error can do about it
        self._stale = False  # the server said its tool list changed
        # a 2026 server that announces tool list changes without a live stream to hear them on
        self._unwatched = False
        self._watcher: asyncio.Task[None] | None = None
        # its sampling and elicitation requests, routed to the call in flight (tether.mcp.requests)
        self.requests = ServerRequests(server)
        self._session: Any = None
        self._stderr: StderrTail | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._processes: list[Any] = []  # the stdio server's process, once spawned
        #: the protocol version the connection speaks, once open ("2026-07-28", "2025-11-25"...)
        self.protocol_version: str | None = None

    # -- diagnostics -------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        return "" if self._stderr is None else self._stderr.text()

    def _with_stderr(self, message: str) -> str:
        if self._stderr is not None:  # error path only: let the reader catch up with the pipe
            self._stderr.wait_ended(0.5)
        tail = self.stderr_tail()
        return f"{message}. Its last stderr lines:\n{tail}" if tail else message

    def gone(self) -> MCPConnectionError:
        """The error for a call on a connection that is closed or broken."""
        server = self.server
        # a closed connection usually means the process exited: give the stderr reader a moment
        # to reach end of file, so the message has the server's last words (error path only)
        exited = self._stderr is not None and self._stderr.wait_ended(0.25)
        what = "its process exited" if exited else "the connection closed"
        if self._failure is not None:
            what = f"{what} ({describe(self._failure)})"
        return MCPConnectionError(self._with_stderr(
            f"MCP server {server.name!r} ({server.where()}) is not connected: {what}; the call "
            f"was not completed. {self.advice}"))

    # -- lifecycle (on the private loop) -----------------------------------------------------

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._closing = asyncio.Event()
        self._task = loop.create_task(self._own(), name=f"mcp-{self.server.name}")
        server = self.server
        try:
            async with asyncio.timeout(server.connect_timeout):
                await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise MCPConnectionError(self._with_stderr(
                f"MCP server {server.name!r} ({server.where()}) did not complete the MCP "
                f"handshake within {server.connect_timeout:g}s; check that the command starts "
                "an MCP server on stdio (or the URL is its MCP endpoint), or raise "
                "connect_timeout")) from None
        except MCPConnectionError as exc:  # says what happened and what to do (e.g. OAuth)
            await self.close()
            raise MCPConnectionError(self._with_stderr(str(exc))) from None
        except Exception as exc:
            await self.close()
            check = ("the command, args and cwd" if server.command is not None
                     else "the URL, the headers and that the server is running")
            raise MCPConnectionError(self._with_stderr(
                f"could not connect to MCP server {server.name!r} ({server.where()}): "
                f"{describe(exc)}; check {check}")) from None

    async def _own(self) -> None:
        assert self._ready is not None and self._closing is not None
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                from mcp import ClientSession

                session = await stack.enter_async_context(ClientSession(
                    read, write, message_handler=self._on_message,
                    logging_callback=self.requests.on_log,
                    sampling_callback=self.requests.on_sampling,
                    elicitation_callback=self.requests.on_elicitation))
                self.protocol_version = await Negotiation(session, self.server.name,
                                                          self.server.protocol).run()
                if self.protocol_version == MODERN:
                    await self._watch(session)
                self._session = session
                self._ready.set_result(None)
                await self._closing.wait()
                await self._unwatch()
        except asyncio.CancelledError:
            if not self._ready.done():
                self._ready.cancel()
            raise
        except BaseException as exc:  # recorded for the error messages, never lost
            if self._ready.done():
                self._failure = exc
            else:
                self._ready.set_exception(root_cause(exc))
        finally:
            self._session = None
            if self._watcher is not None:
                self._watcher.cancel()

    async def _watch(self, session: Any) -> None:
        """Hear a 2026 server's tool list changes: there are no unsolicited notifications in
        that era, only a ``subscriptions/listen`` stream. Until one is acknowledged, or once it
        is gone, a server that announces ``tools.listChanged`` is relisted before every call,
        so a changed definition is still checked against its pin before it is called."""
        caps = session.server_capabilities
        if caps is None or caps.tools is None or not caps.tools.list_changed:
            return
        self._unwatched = True
        acked = asyncio.get_running_loop().create_future()

        async def listen() -> None:
            from mcp.client.subscriptions import ToolsListChanged, listen

            try:  # refused or lost: relist before every call from now on
                with contextlib.suppress(Exception):
                    async with listen(session, tools_list_changed=True) as events:
                        if events.honored.tools_list_changed:
                            self._unwatched = False
                        acked.set_result(None)
                        async for event in events:
                            if isinstance(event, ToolsListChanged):
                                self._stale = True
            finally:
                self._unwatched = True
                if not acked.done():
                    acked.set_result(None)

        self._watcher = asyncio.get_running_loop().create_task(listen())
        with contextlib.suppress(TimeoutError):  # no acknowledgment: relisted at every call
            async with asyncio.timeout(min(LISTEN_ACK_WAIT, self.server.connect_timeout / 2)):
                await asyncio.shield(acked)

    async def _unwatch(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None and not watcher.done():
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    @property
    def stale(self) -> bool:
        """The tool list may have changed since it was last listed: the server said so, or it
        is a 2026 server that announces changes with no live stream to hear them on."""
        return self._stale or self._unwatched

    async def _transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        server = self.server
        if server.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=server.command, args=list(server.args),
                                           env=dict(server.env) or None, cwd=server.cwd)
            self._stderr = tail = StderrTail(server.name)
            assert tail.writer is not None
            recorded = record_spawns(self._processes)
            try:
                read, write = await stack.enter_async_context(stdio_client(params, tail.writer))
            finally:
                tail.close_writer()  # the child holds its own copy now (or never started)
                stop_recording(recorded)
            return read, write
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        from tether.mcp.oauth import httpx_auth

        client = await stack.enter_async_context(httpx2.AsyncClient(
            headers=dict(server.headers), auth=httpx_auth(server, self._auth_failed),
            timeout=httpx2.Timeout(server.connect_timeout, read=max(300.0, server.call_timeout))))
        read, write = await stack.enter_async_context(
            streamable_http_client(str(server.url), http_client=client))
        return read, write

    def _auth_failed(self, error: MCPConnectionError) -> None:
        self._failure = error  # the transport swallows it: gone() says what happened

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._stale = True

    async def close(self) -> None:
        """Close the session and stop the server; bounded by ``close_timeout``."""
        task = self._task
        if task is None or task.done():
            return
        assert self._closing is not None and self._ready is not None
        self._closing.set()
        if not self._ready.done():  # still starting (e.g. a handshake never answered)
            task.cancel()  # the SDK's own shutdown still runs, shielded and bounded
        done, _ = await asyncio.wait({task}, timeout=self.server.close_timeout)
        if not done:  # shutdown itself hangs: cancel, abandon, and kill the server
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
            for process in self._processes:
                kill_group(process)

    @property
    def connected(self) -> bool:
        return self._session is not None

    @property
    def alive(self) -> bool:
        """Connected, and (for a stdio server) its process has not exited."""
        return self._session is not None and all(
            getattr(process, "returncode", None) is None for process in self._processes)

    # -- requests ----------------------------------------------------------------------------

    def _live(self) -> Any:
        if self._session is None:
            raise self.gone()
        return self._session

    def _translate(self, exc: Exception, doing: str, tool: str = "") -> Exception:
        from mcp.shared.exceptions import MCPError as SDKError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        if isinstance(exc, SDKError):
            if exc.code == CONNECTION_CLOSED:
                self._session = None  # later calls fail at once
                return self.gone()
            if exc.code == REQUEST_TIMEOUT:
                return TimeoutError(f"MCP server {self.server.name!r} did not answer {doing} "
                                    "in time")
            message = (f"MCP server {self.server.name!r} refused {doing}: {exc.message} "
                       f"(JSON-RPC error {exc.code})")
            required = required_capabilities(exc)
            if required is not None:
                return MCPCapabilityMissing(message, required)
            return MCPError(message)
        if isinstance(exc, MCPError | TimeoutError):
            return exc
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):  # e.g. a 2026 result without its resultType
            bad = malformed(exc, self.server.name, tool) if tool else None
            if bad is not None:  # an InputRequiredResult that does not parse
                return MCPError(bad)
            return MCPError(f"MCP server {self.server.name!r} answered {doing} with a result "
                            f"the MCP SDK does not accept under protocol {self.protocol_version} "
                            f"({first_error(exc)}); tether cannot read it, so what the call did "
                            "is unknown: check on the server before repeating it")
        return MCPError(f"MCP server {self.server.name!r}: {doing} failed: {describe(exc)}")

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool, following ``nextCursor`` page by page, in wire (camelCase) form."""
        from mcp_types import PaginatedRequestParams

        session = self._live()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            try:
                async with asyncio.timeout(self.server.connect_timeout):
                    page = await session.list_tools(params=params)
            except TimeoutError:
                raise MCPError(self._with_stderr(
                    f"MCP server {self.server.name!r} did not answer tools/list within "
                    f"{self.server.connect_timeout:g}s; check the server, or raise "
                    "connect_timeout")) from None
            except Exception as exc:
                raise self._translate(exc, "tools/list") from None
            tools.extend(t.model_dump(by_alias=True, mode="json", exclude_none=True)
                         for t in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                self._stale = False
                return tools
            if cursor in seen:
                raise MCPError(f"MCP server {self.server.name!r} repeated the tools/list cursor "
                               f"{cursor!r}; its pagination is broken")
            seen.add(cursor)
        raise MCPError(f"MCP server {self.server.name!r} sent more than {MAX_PAGES} pages of "
                       "tools; its pagination is broken")

    async def call(self, name: str, arguments: dict[str, Any], *, traceparent: str = "",
                   progress: Any = None, asks: Any = None,
                   log_level: str | None = None) -> dict[str, Any]:
        """Call tool ``name`` (the server's name); the result in wire (camelCase) form. A valid
        ``traceparent`` rides in the request's ``_meta`` (W3C Trace Context's key, as MCP's
        tracing convention uses it); without one, the request carries no ``_meta`` of tether's.
        ``progress``: the SDK's ``progress_callback`` (a ``progressToken`` is then sent).
        ``asks``: the call's ``CallAsking``, which answers a 2026 ``InputRequiredResult``.
        ``log_level``: on a 2026 connection, the level of log lines asked for (none without;
        a 2025 server logs at the level set for its whole session)."""
        from mcp_types import LOG_LEVEL_META_KEY

        session = self._live()
        parent = TraceParent.parse(traceparent) if traceparent else None
        meta: dict[str, Any] = {} if parent is None else {"traceparent": parent.header()}
        if log_level is not None and self.protocol_version == MODERN:
            meta[LOG_LEVEL_META_KEY] = log_level

        async def send(responses: dict[str, Any] | None, state: str | None) -> Any:
            """The call (again, with a new id, when answering the server's input requests)."""
            try:
                with propagating(parent):
                    return await session.call_tool(
                        name, arguments, read_timeout_seconds=self.server.call_timeout + BACKSTOP,
                        meta=meta or None, progress_callback=progress,
                        input_responses=responses,
                        request_state=state, allow_input_required=True)
            except Exception as exc:
                raise self._translate(exc, f"the call of {name!r}", name) from None

        result = await InputRounds(self.requests, name, asks).drive(await send(None, None), send)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)  # type: ignore[no-any-return]
