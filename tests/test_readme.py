"""The README's quickstart and the example it names run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_quickstart_block_runs(capsys: object) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    namespace: dict[str, object] = {}
    exec(blocks[0], namespace)
    result = namespace["result"]
    assert result.answer == "391"  # type: ignore[attr-defined]


def test_quickstart_example_runs() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                         capture_output=True, text=True, check=True).stdout
    assert "answer:      391" in out and "stop reason: finished" in out
    assert "chain intact: True" in out
