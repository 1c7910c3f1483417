"""The getting-started page's local-model block and `make demo-local`'s example run as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from doc_pages import blocks

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_local_model_block_runs(capsys: object) -> None:
    (block,) = blocks("docs/getting-started.md", "A real model with no API key")
    namespace: dict[str, object] = {}
    exec(block, namespace)
    result = namespace["result"]
    assert result.usage.total_tokens <= 3000  # type: ignore[attr-defined]
    assert result.stop_reason in ("finished", "step_budget")  # type: ignore[attr-defined]


def test_the_local_model_example_runs_and_its_journal_verifies() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "local_model.py")],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert "tool.result" in out and "chain intact: True" in out
