"""The guide's MCP example runs as written (against the npm filesystem server)."""

from __future__ import annotations

import subprocess
import sys

from doc_pages import blocks
from mcp_servers import ROOT, npm_bin


def test_readme_mcp_example_runs() -> None:
    npm_bin("mcp-server-filesystem")  # installs the pinned npm servers if they are missing
    (example,) = [b for b in blocks("docs/guide/mcp.md", "MCP tools")
                  if "mcp-server-filesystem" in b]
    out = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.rstrip().splitlines() == ["('fs_read_file', 'fs_read_text_file')", "buy milk"]
