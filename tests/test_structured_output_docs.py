"""The structured-output guide runs as written: its blocks, each as pasted (tests/doc_blocks.py:
the grading block after the one it continues), print what their comments say (the real-model
block runs in tests/real_model/)."""

from __future__ import annotations

from doc_blocks import find, printed

PAGE = "docs/guide/structured-output.md"


def promised(block: str) -> list[str]:
    return [line.rsplit("# ", 1)[1].strip() for line in block.splitlines()
            if line.startswith("print(")]


def test_the_guide_runs_as_written() -> None:
    for title in ("An answer as data", "Grading on the output"):
        block = find(PAGE, title)
        assert printed(block) == promised(block.code)
