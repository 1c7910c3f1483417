"""One MCP tool as a tether Tool: what the model is shown, and a call that goes to the server.

Why: an MCP tool must pass the same chokepoint as any other tool — resolve, validate, budget,
policy, timeout, journal — so it implements the plain ``tether.tools.Tool`` protocol and nothing
in the runtime knows it is remote. What it declares is decided here, once, at discovery: the
name (prefixed), the metadata (from annotations read as untrusted hints), and the spec.

Decision: the spec the model sees is always an *approved* definition, and one fit to be shown
(``tether.mcp.fit``: bounded in size and nesting, a valid JSON Schema). For a tool whose
definition changed since it was pinned, the model is shown the pinned description and schema
(with a note that the tool is blocked), never the new text — a changed description is exactly
where a tool-poisoning instruction would be. A new tool that awaits approval shows no server
text at all. Validation and calls use the server's current definition through the toolset.
A credential tether passed the server (OAuth's token, an API key in ``env=`` or ``headers=``:
``MCPServer.credentials``) is blanked from everything the session records and sends, since a
server may echo it back in a result, an error or a log line. A call carries its span
(``ToolContext.traceparent``, set when the recipe has telemetry) to the server in the request's
``_meta``, so the server's work joins the caller's trace. A server's
refusal for want of a client capability (-32021) is told to the caller waiting (``lacks``: a
proxy answers its own client with the same error) before the call fails as any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from tether.mcp.content import has_binary, parts_of
from tether.mcp.errors import MCPCapabilityMissing
from tether.mcp.oauth.flows import hide_secrets
from tether.tools.base import ToolContext, ToolMeta
from tether.tools.caller import SILENT
from tether.tools.content import Content
from tether.types import ToolSpec

if TYPE_CHECKING:
    from tether.mcp.config import MCPServer
    from tether.mcp.pins import Verdict
    from tether.mcp.schema import ArgumentSchema

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def visible_spec(name: str, server: str, definition: Mapping[str, Any],
                 verdict: Verdict, unfit: str | None = None) -> ToolSpec:
    """The spec the model may see for a tool, given the pinning verdict on its definition and
    why the definition it would show is unfit to be shown (``tether.mcp.fit``), if it is."""
    def describe(d: Mapping[str, Any]) -> str:
        return str(d.get("description") or f"Tool {d.get('name')!r} of MCP server {server!r}.")

    if unfit is not None:
        return ToolSpec(name, f"Tool {definition.get('name')!r} of MCP server {server!r} "
                              "[tether: blocked: its definition is unfit to show].",
                        EMPTY_SCHEMA)
    if verdict.allowed:
        return ToolSpec(name, describe(definition), dict(definition.get("inputSchema") or
                                                         EMPTY_SCHEMA))
    if verdict.pinned is not None:
        old = verdict.pinned.definition
        return ToolSpec(name, describe(old) + " [tether: blocked: its definition changed on the "
                        "server and awaits re-approval]",
                        dict(old.get("inputSchema") or EMPTY_SCHEMA))
    return ToolSpec(name, f"Tool {definition.get('name')!r} of MCP server {server!r} "
                          "[tether: blocked: new tool awaiting approval].", EMPTY_SCHEMA)


def _blank(secrets: tuple[str, ...], text: str) -> str:
    for secret in secrets:
        text = text.replace(secret, "****")
    return text


class Host(Protocol):
    """What a tool needs of the toolset that discovered it (``MCPToolset``): stated here, so the
    tool does not import the toolset that imports it."""

    @property
    def server(self) -> MCPServer: ...

    @property
    def credentials(self) -> tuple[str, ...]: ...  # ``MCPServer.credentials()``, read once

    def schema_of(self, mcp_name: str) -> ArgumentSchema: ...

    async def invoke(self, mcp_name: str, arguments: dict[str, Any], *,
                     traceparent: str = "", asks: Any = None) -> Any: ...


class MCPTool:
    """A tool of an MCP server. ``mcp_name`` is its name on the server; ``name`` the model's."""

    __slots__ = ("_toolset", "mcp_name", "meta", "name", "server", "spec")

    def __init__(self, toolset: Host, mcp_name: str, name: str, meta: ToolMeta,
                 spec: ToolSpec) -> None:
        self._toolset = toolset
        self.server = toolset.server.name
        self.mcp_name = mcp_name
        self.name = name
        self.meta = meta
        self.spec = spec

    def __repr__(self) -> str:
        return f"<MCP tool {self.name} ({self.server}:{self.mcp_name})>"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self._toolset.schema_of(self.mcp_name).validate(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """The server's answer: its text, or, when it sent more than text (an image, audio,
        an embedded resource), its parts (``Content``), so a proxy's client receives them as
        they were sent; the model and the journal read their text all the same."""
        auth = self._toolset.server.auth
        if auth is not None and context.asks is not None:  # the server may echo its token
            context.asks.hide(partial(hide_secrets, auth), f"mcp-oauth:{self.server}")
        held = self._toolset.credentials
        if held and context.asks is not None:  # or the API key it was given in env=
            context.asks.hide(partial(_blank, held), f"mcp-credentials:{self.server}")
        asks = None if context.asks is None else context.asks.for_call(  # the session's
            context.call_id, self.name,
            self._toolset.server.call_timeout if context.timeout is None else context.timeout)
        if asks is not None and context.caller is not SILENT:  # a client waits: relay to it
            asks.caller = context.caller
        try:
            text = await self._toolset.invoke(self.mcp_name, arguments,
                                              traceparent=context.traceparent, asks=asks)
        except MCPCapabilityMissing as exc:  # the client may be told (a proxy's: -32021)
            lacks = getattr(context.caller, "lacks", None)
            if lacks is not None:
                lacks(exc.required)
            raise
        if not has_binary(text):
            return text
        return Content(*parts_of(getattr(text, "blocks", ())))
