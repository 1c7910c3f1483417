"""MCP client: the tools of Model Context Protocol servers as governed tether tools.

``connect(MCPServer.stdio(...))`` opens a server (stdio or streamable HTTP) with the official
``mcp`` SDK and yields an ``MCPToolset`` whose tools go through the same chokepoint as any other:
validated against the server's schema, decided by the policy, bounded by a timeout, journaled.
Annotations are untrusted hints (``tether.mcp.annotations``); tool definitions are pinned
(``tether.mcp.pins``); a server behind OAuth takes ``auth=`` (``tether.mcp.oauth``). A server's
sampling and elicitation requests during a call go to the calling session, declined unless its
``MCPServer`` says otherwise (``tether.mcp.requests``). The SDK is an extra (``mcp``) imported
only when a connection opens, so ``import tether`` and ``import tether.mcp`` never import it.

This is the client side, on the adapters' floor (DESIGN.md): it never imports the runtime; what
a server may ask of the calling session is the seam ``tether.tools.asking``, which the runtime
fills. tether *serving* MCP (``tether mcp serve``, ``tether mcp proxy``) is ``tether.serve``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.mcp.annotations import tool_meta, tool_name
    from tether.mcp.config import MCPServer
    from tether.mcp.errors import (
        MCPConnectionError,
        MCPError,
        MCPToolBlocked,
        MCPToolError,
        PinError,
    )
    from tether.mcp.oauth import (
        AuthorizationCode,
        ClientCredentials,
        PrivateKeyJWT,
        TokenStore,
        loopback_authorize,
    )
    from tether.mcp.pins import JSONFilePinStore, MemoryPinStore, Pin, PinStore, fingerprint
    from tether.mcp.requests import Question, accept_defaults
    from tether.mcp.tool import MCPTool
    from tether.mcp.toolset import MCPToolset, connect

_WHERE = {
    "tool_meta": "annotations", "tool_name": "annotations", "MCPServer": "config",
    "MCPConnectionError": "errors", "MCPError": "errors", "MCPToolBlocked": "errors",
    "MCPToolError": "errors", "PinError": "errors", "JSONFilePinStore": "pins",
    "MemoryPinStore": "pins", "Pin": "pins", "PinStore": "pins", "fingerprint": "pins",
    "MCPTool": "tool", "MCPToolset": "toolset", "connect": "toolset",
    "AuthorizationCode": "oauth", "ClientCredentials": "oauth", "PrivateKeyJWT": "oauth",
    "TokenStore": "oauth", "loopback_authorize": "oauth",
    "Question": "requests", "accept_defaults": "requests",
}
__all__ = [
    "AuthorizationCode",
    "ClientCredentials",
    "JSONFilePinStore",
    "MCPConnectionError",
    "MCPError",
    "MCPServer",
    "MCPTool",
    "MCPToolBlocked",
    "MCPToolError",
    "MCPToolset",
    "MemoryPinStore",
    "Pin",
    "PinError",
    "PinStore",
    "PrivateKeyJWT",
    "Question",
    "TokenStore",
    "accept_defaults",
    "connect",
    "fingerprint",
    "loopback_authorize",
    "tool_meta",
    "tool_name",
]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
