"""The compaction guide's example and examples/compaction.py run as written and print what
they promise (the block runs as pasted, in tests/doc_blocks.py's runner)."""

from __future__ import annotations

import os
import subprocess
import sys

from doc_blocks import ROOT, find, printed, promised

PAGE = "docs/guide/compaction.md"


def test_the_guide_block_prints_what_its_comments_say() -> None:
    block = find(PAGE, "Compacting a long conversation")
    expected = [line.rsplit("# ", 1)[1].strip() for line in block.code.splitlines()
                if line.startswith("print(")]
    assert printed(block) == expected == promised(block.code)


def test_the_example_runs_and_its_reruns_match() -> None:
    path = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "compaction.py")], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "without compaction: 26148 tokens"
    assert "summarise: The report is lorem ipsum throughout. (18938 tokens)" in lines
    assert any("compacted: turns 1-6 summarised (messages 2-14" in line for line in lines)
    assert any("compacted: turns 1-6 dropped" in line for line in lines)
    assert lines.count("  rerun matches: True") == 2
