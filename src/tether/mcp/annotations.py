"""MCP tool annotations become tether tool metadata, read as untrusted hints.

Why: policies decide on ``ToolMeta`` (side effect, egress, output trust, risk), and the MCP spec
says annotations are hints that clients must not rely on when the server is not trusted. A
server that calls its ``delete_everything`` tool read-only must not get it past a policy that
allows read-only tools.

Decision — a hint that asks for *more* caution is believed from any server; a hint that asks
for *less* only from a server the operator marked ``trusted``:

- side effect: none only if ``readOnlyHint`` is true **and** the server is trusted, or the
  operator named the tool ``read_only`` (``MCPServer.read_only``: the operator's word, not the
  server's) and the server does not call it destructive.
- output trust and egress: trusted output and no egress only if the server is trusted **and**
  ``openWorldHint`` is explicitly false (the spec's default is true); otherwise the output is
  ``untrusted`` (it taints the session) and the tool counts as egress.
- risk: ``high`` if ``destructiveHint`` is true, or absent on a tool not claimed read-only (the
  spec's default is destructive); ``low`` for a tool counted read-only; ``medium`` otherwise.
- idempotent: only if trusted and ``idempotentHint`` is true.
- tags: ``mcp`` and the server's name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from tether.mcp.config import MCPServer
from tether.tools.base import Risk, ToolMeta

MAX_NAME = 64


def _hint(annotations: Mapping[str, Any] | None, key: str) -> bool | None:
    value = (annotations or {}).get(key)
    return value if isinstance(value, bool) else None  # a non-boolean hint is no hint


def tool_meta(server: MCPServer, annotations: Mapping[str, Any] | None,
              tool: str | None = None) -> ToolMeta:
    """The metadata policies see for ``tool`` (its name on the server) of ``server`` with these
    annotations."""
    destructive = _hint(annotations, "destructiveHint")
    vouched = tool is not None and tool in server.read_only and destructive is not True
    read_only_claim = _hint(annotations, "readOnlyHint") is True or vouched
    open_world = _hint(annotations, "openWorldHint")
    read_only = (server.trusted and read_only_claim) or vouched
    closed_world = server.trusted and open_world is False
    risk: Risk
    if destructive is True or (not server.trusted and not vouched) or (
            destructive is None and not read_only_claim):
        risk = "high"  # only a trusted server's hints may lower caution
    elif read_only:
        risk = "low"
    else:
        risk = "medium"
    return ToolMeta(
        tags=frozenset({"mcp", server.name}),
        risk=risk,
        side_effect=not read_only,
        egress=not closed_world,
        output_trust="trusted" if closed_world else "untrusted",
        timeout=server.call_timeout,
        idempotent=server.trusted and _hint(annotations, "idempotentHint") is True,
    )


def tool_name(server: MCPServer, mcp_name: str) -> str:
    """The name the model sees: ``<prefix><separator><tool>``, limited to [A-Za-z0-9_-] and 64
    characters so that every provider accepts it. A name that had to be shortened keeps a short
    hash of the original, so two long names do not collide."""
    prefix = server.tool_prefix
    raw = f"{prefix}{server.separator}{mcp_name}" if prefix else mcp_name
    name = re.sub(r"[^A-Za-z0-9_-]", "_", raw)
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    return name
