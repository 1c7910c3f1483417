"""Moved to ``tether.serve.proxy``: tether *serving* MCP sits on the serving floor (DESIGN.md),
above the runtime it serves through, while ``tether.mcp`` is the MCP client on the adapters'
floor. This stub keeps the old path working for one release, each use warning
``DeprecationWarning`` (``tether._lazy.moved``); it imports nothing upward.
"""

from __future__ import annotations

from tether._lazy import moved

__getattr__, __dir__ = moved(__name__, "tether.serve.proxy")
