"""An upstream MCP server (bare SDK, stdio) that refuses calls for want of a client capability
(-32021, MissingRequiredClientCapabilityError), for tests/test_mcp_missing_capability.py:
``needs_roots`` names ``{"roots": {}}`` (which tether's proxy never declares); ``bad_data``
names a capability whose value is not an object (no ``ClientCapabilities``); ``odd_data``
names roots and a capability MCP does not define; ``echo`` answers."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [types.Tool(name=name, description=f"{name}.", input_schema=EMPTY)
         for name in ("needs_roots", "bad_data", "odd_data", "echo")]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "needs_roots":
        raise MCPError(code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                       message="this tool needs the roots capability",
                       data={"requiredCapabilities": {"roots": {}}})
    if params.name == "bad_data":
        raise MCPError(code=types.MISSING_REQUIRED_CLIENT_CAPABILITY, message="needs things",
                       data={"requiredCapabilities": {"sampling": "yes"}})
    if params.name == "odd_data":
        raise MCPError(code=types.MISSING_REQUIRED_CLIENT_CAPABILITY, message="needs things",
                       data={"requiredCapabilities": {"roots": {}, "madeUp": {"x": "y" * 99}}})
    return types.CallToolResult(content=[types.TextContent(text="echo")])


async def main() -> None:
    server = Server("capability-upstream", version="0", on_list_tools=list_tools,
                    on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
