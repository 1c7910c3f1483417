"""Snapshot the npm reference MCP servers' tools into bench/tool_catalog.json:
python bench/tool_catalog.py BIN_DIR [BIN_DIR ...]

Why a snapshot: the tool-selection bench (bench/tool_selection.py) must run without node. This
starts each reference server found in the given ``node_modules/.bin`` directories (``make
mcp-deps`` installs server-everything and server-filesystem under tests/mcp; server-memory and
server-sequential-thinking install the same way) through tether's own MCP client, and writes
each tool's name, description and input schema exactly as an agent would be offered them.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tether.mcp import MCPServer, connect

SERVERS = {  # executable -> (tether's prefix for its tools, extra arguments)
    "mcp-server-everything": ("everything", ()),
    "mcp-server-filesystem": ("fs", ("{root}",)),
    "mcp-server-memory": ("memory", ()),
    "mcp-server-sequential-thinking": ("thinking", ()),
}
OUT = Path(__file__).with_name("tool_catalog.json")


def main() -> None:
    tools = []
    with tempfile.TemporaryDirectory() as root:
        for directory in sys.argv[1:]:
            for exe, (prefix, extra) in SERVERS.items():
                path = Path(directory) / exe
                if not path.exists():
                    continue
                args = [a.format(root=root) for a in extra]
                with connect(MCPServer.stdio(prefix, str(path), *args)) as toolset:
                    for tool in toolset:
                        spec = tool.spec
                        tools.append({"server": exe, "name": spec.name,
                                      "description": spec.description,
                                      "parameters": spec.parameters})
                print(f"{exe}: {sum(t['server'] == exe for t in tools)} tools")
    OUT.write_text(json.dumps(tools, indent=1, sort_keys=True) + "\n")
    print(f"{len(tools)} tools written to {OUT}")


if __name__ == "__main__":
    main()
