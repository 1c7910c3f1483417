"""The tool-selection guide's block runs as written and prints what its comments say."""

from __future__ import annotations

from typing import Any

from doc_pages import blocks

PAGE = "docs/guide/tool-selection.md"


def test_the_offer_a_few_tools_block_prints_what_it_says(capsys: Any) -> None:
    (block,) = blocks(PAGE, "Offer a few tools per turn")
    exec(compile(block, PAGE, "exec", dont_inherit=True), {"__name__": "selection"})
    assert capsys.readouterr().out.splitlines() == [
        "Sunny in Paris.",
        "[['send_email', 'get_weather'], ['send_email', 'get_weather']]",
        "Error: unknown tool 'stock_7'. Available tools: send_email, get_weather.",
    ]
