"""The reasoning guide's blocks run as written and print what their comments say."""

from __future__ import annotations

from typing import Any

import pytest

from doc_pages import blocks

PAGE = "docs/guide/reasoning.md"


def expected(block: str) -> list[str]:
    """The lines a block's trailing comments say it prints."""
    return [line[2:] for line in block.splitlines() if line.startswith("# ")]


@pytest.mark.parametrize("heading", [
    "Reflexion: attempt, evaluate, reflect, retry",
    "LATS: a tree search where greedy fails",
    "LLM+P: the model writes the problem, a real planner plans",
    "Router: one strategy per task",
])
def test_each_block_prints_what_it_says(heading: str, capsys: Any) -> None:
    (block,) = blocks(PAGE, heading)
    exec(compile(block, PAGE, "exec", dont_inherit=True), {"__name__": "reasoning_guide"})
    assert [line.rstrip() for line in capsys.readouterr().out.splitlines()] == expected(block)


def test_the_readme_block_prints_what_its_comment_says(capsys: Any) -> None:
    (block,) = blocks("README.md", "Strategies that plan and reflect")
    exec(compile(block, "README.md", "exec", dont_inherit=True), {"__name__": "readme"})
    assert capsys.readouterr().out.splitlines() == [
        "Done. {'a': 'table', 'c': 'a', 'b': 'c'}", "4 - 3 model calls"]
