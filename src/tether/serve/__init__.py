"""tether serving MCP: its tools as a governed MCP server, or another server's behind a proxy.

Why a package of its own: serving is the runtime's *client* — every ``tools/call`` a connected
MCP client makes is ``Gateway.call`` for that client (``tether.serve.clients``), decided,
bounded and journaled — so it stands on the serving floor (DESIGN.md), beside the framework
integrations, above the runtime it serves through. ``tether.mcp`` is the other direction, the
MCP client (connections, OAuth, pins, MCP tools as tether tools) on the adapters' floor, which
the runtime calls and therefore must not import. ``serve`` (``tether mcp serve``) serves tether
tools; ``proxy`` (``tether mcp proxy``) serves an upstream server's tools through the same
gateways. ``OAuth`` (with ``Claims``) in ``Governance`` makes either an OAuth 2.1 resource
server over HTTP (``tether.serve.oauth``; ``JWTVerifier`` and ``KeySet`` check tokens on their
own). The SDK (the ``mcp`` extra) is imported when a name here is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.serve.clients import ClientExpired, Governance
    from tether.serve.jwks import KeySet
    from tether.serve.oauth import Claims, Identity, JWTVerifier, OAuth, identity_of
    from tether.serve.proxy import proxy, upstream_server
    from tether.serve.server import check_served_names, serve

_WHERE = {
    "ClientExpired": "clients", "Governance": "clients", "proxy": "proxy",
    "upstream_server": "proxy", "check_served_names": "server", "serve": "server",
    "Claims": "oauth", "Identity": "oauth", "OAuth": "oauth", "JWTVerifier": "oauth",
    "identity_of": "oauth", "KeySet": "jwks",
}
__all__ = ["Claims", "ClientExpired", "Governance", "Identity", "JWTVerifier", "KeySet", "OAuth",
           "check_served_names", "identity_of", "proxy", "serve", "upstream_server"]

__getattr__, __dir__ = exports(__name__, _WHERE, globals())
