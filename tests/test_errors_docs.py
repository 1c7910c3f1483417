"""The errors guide's example runs as written and prints what its comments say."""

from __future__ import annotations

import pytest

from doc_pages import blocks

PAGE = "docs/guide/errors.md"


def test_the_guide_block_prints_what_its_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = blocks(PAGE, "Catching them")
    expected = [line.rsplit("# ", 1)[1].strip() for line in block.splitlines()
                if line.lstrip().startswith("print(")]
    namespace: dict[str, object] = {"__name__": "errors_guide"}
    exec(compile(block, PAGE, "exec", dont_inherit=True), namespace)
    assert capsys.readouterr().out.splitlines() == expected == ["PolicyLoadError", "SessionEnded"]


def test_the_built_in_bases_block_prints_what_its_comment_says(
        capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = blocks(PAGE, "Built-in bases are kept")
    exec(compile(block, PAGE, "exec", dont_inherit=True), {"__name__": "errors_guide"})
    assert capsys.readouterr().out.split() == ["InvalidArgument", "True"]
