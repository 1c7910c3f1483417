"""The errors guide's examples run as pasted (tests/doc_blocks.py) and print what their comments
say."""

from __future__ import annotations

from doc_blocks import find, printed, promised

PAGE = "docs/guide/errors.md"


def test_the_guide_block_prints_what_its_comments_say() -> None:
    block = find(PAGE, "Catching them")
    assert printed(block) == promised(block.code) == ["PolicyLoadError", "SessionEnded"]


def test_the_built_in_bases_block_prints_what_its_comment_says() -> None:
    assert printed(find(PAGE, "Built-in bases are kept")) == ["InvalidArgument True"]
