"""The tool-selection guide's block runs as pasted (tests/doc_blocks.py) and prints what its
comments say."""

from __future__ import annotations

from doc_blocks import find, printed

PAGE = "docs/guide/tool-selection.md"


def test_the_offer_a_few_tools_block_prints_what_it_says() -> None:
    assert printed(find(PAGE, "Offer a few tools per turn")) == [
        "Sunny in Paris.",
        "[['send_email', 'get_weather'], ['send_email', 'get_weather']]",
        "Error: unknown tool 'stock_7'. Available tools: send_email, get_weather.",
    ]
