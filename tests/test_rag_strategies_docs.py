"""The retrieval strategies guide's blocks run as written and print what their comments say."""

from __future__ import annotations

from typing import Any

from doc_pages import blocks

PAGE = "docs/guide/rag-strategies.md"


def expected(block: str) -> list[str]:
    """The lines a block's trailing comments say it prints."""
    tail = [line for line in block.splitlines() if line.startswith("# ")]
    return [line[2:] for line in tail]


def test_the_adaptive_rag_and_crag_blocks_print_what_they_say(capsys: Any) -> None:
    (adaptive,) = blocks(PAGE, "Adaptive-RAG: no retrieval, one, or several")
    (crag,) = blocks(PAGE, "CRAG: grade what came back, and correct course")
    namespace: dict[str, Any] = {"__name__": "rag_strategies"}
    exec(compile(adaptive, PAGE, "exec", dont_inherit=True), namespace)
    assert capsys.readouterr().out.splitlines() == expected(adaptive)
    exec(compile(crag, PAGE, "exec", dont_inherit=True), namespace)
    assert [line.rstrip() for line in capsys.readouterr().out.splitlines()] == expected(crag)


def test_the_readme_block_prints_what_its_comments_say(capsys: Any) -> None:
    (block,) = blocks("README.md", "Retrieval, routing and tool selection")
    exec(compile(block, "README.md", "exec", dont_inherit=True), {"__name__": "readme"})
    assert capsys.readouterr().out.splitlines() == expected(block)
