"""The reasoning guide's blocks run as pasted (tests/doc_blocks.py, with the planning extra
their page states) and print exactly what their trailing comments say."""

from __future__ import annotations

import pytest

from doc_blocks import find, printed

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
def test_each_block_prints_what_it_says(heading: str) -> None:
    block = find(PAGE, heading)
    assert printed(block) == expected(block.code)


def test_the_readme_block_prints_what_its_comment_says() -> None:
    assert printed(find("docs/tour.md", "Strategies that plan and reflect")) == [
        "Done. {'a': 'table', 'c': 'a', 'b': 'c'}", "4 - 3 model calls"]
