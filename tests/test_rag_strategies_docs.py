"""The retrieval strategies guide's blocks run as pasted (tests/doc_blocks.py: CRAG after the
Adaptive-RAG block it continues) and print exactly what their trailing comments say."""

from __future__ import annotations

from doc_blocks import find, printed

PAGE = "docs/guide/rag-strategies.md"


def expected(block: str) -> list[str]:
    """The lines a block's trailing comments say it prints."""
    tail = [line for line in block.splitlines() if line.startswith("# ")]
    return [line[2:] for line in tail if not line.startswith("# continues ")]


def test_the_adaptive_rag_and_crag_blocks_print_what_they_say() -> None:
    adaptive = find(PAGE, "Adaptive-RAG: no retrieval, one, or several")
    crag = find(PAGE, "CRAG: grade what came back, and correct course")
    assert printed(adaptive) == expected(adaptive.code)
    assert printed(crag) == expected(crag.code)


def test_the_readme_block_prints_what_its_comments_say() -> None:
    block = find("docs/tour.md", "Retrieval, routing and tool selection")
    assert printed(block) == expected(block.code)
