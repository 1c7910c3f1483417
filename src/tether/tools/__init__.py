"""Tools: the ``@tool`` decorator, the Tool protocol and metadata, a registry, the Calculator,
and tool selection for large catalogs (``ToolSelection``, ranked by ``BM25``).

Imports are lazy so ``import tether`` does not pay for pydantic until a tool is declared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.tools.base import Tool, ToolArgumentError, ToolContext, ToolMeta
    from tether.tools.calculator import Calculator
    from tether.tools.decorator import FunctionTool, ToolDefinitionError, tool
    from tether.tools.registry import ToolRegistry
    from tether.tools.selection import BM25, ToolSelection

_WHERE = {
    "Tool": "base", "ToolArgumentError": "base", "ToolContext": "base", "ToolMeta": "base",
    "Calculator": "calculator", "FunctionTool": "decorator", "ToolDefinitionError": "decorator",
    "tool": "decorator", "ToolRegistry": "registry", "BM25": "selection",
    "ToolSelection": "selection",
}
__all__ = [
    "BM25",
    "Calculator",
    "FunctionTool",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolMeta",
    "ToolRegistry",
    "ToolSelection",
    "tool",
]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
