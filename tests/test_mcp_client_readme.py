"""The README's MCP example runs as written (against the npm filesystem server)."""

from __future__ import annotations

import re
import subprocess
import sys

from mcp_servers import ROOT, npm_bin


def test_readme_mcp_example_runs() -> None:
    npm_bin("mcp-server-filesystem")  # installs the pinned npm servers if they are missing
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (example,) = [b for b in blocks if "mcp-server-filesystem" in b]
    out = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.rstrip().splitlines() == ["('fs_read_file', 'fs_read_text_file')", "buy milk"]
