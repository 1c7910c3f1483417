"""The compaction guide's example and examples/compaction.py run as written and print what
they promise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from doc_pages import ROOT, blocks

PAGE = "docs/guide/compaction.md"


def test_the_guide_block_prints_what_its_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = blocks(PAGE, "Compacting a long conversation")
    expected = [line.rsplit("# ", 1)[1].strip() for line in block.splitlines()
                if line.startswith("print(")]
    namespace: dict[str, object] = {"__name__": "compaction_guide"}
    exec(compile(block, PAGE, "exec", dont_inherit=True), namespace)
    assert capsys.readouterr().out.splitlines() == expected


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
