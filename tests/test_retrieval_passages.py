"""Markdown split into passages: by heading, whole paragraphs and code blocks, stable ids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.knowledge.passages import split_markdown
from tether.knowledge.retrieval import RetrievalError

PAGE = """# Budgets

Every call is budgeted.

## Hard limits

A call that does not fit is not made.

```python
# a comment, not a heading

budget = Budget(max_steps=3)
```

### Deeper

Text under a third-level heading.

## Soft limits

one two three four five six

seven eight nine ten
"""


def test_passages_follow_headings_and_keep_paragraphs_and_code_whole() -> None:
    docs = split_markdown(PAGE, "budgets.md", max_words=8, tenant_id="acme")
    assert [d.doc_id for d in docs] == [f"budgets.md#{n}" for n in range(1, 7)]
    assert {(d.source, d.tenant_id) for d in docs} == {("budgets.md", "acme")}
    assert docs[0].text == "Budgets\n\nEvery call is budgeted."
    assert docs[1].text == "Budgets > Hard limits\n\nA call that does not fit is not made."
    assert docs[2].text.startswith("Budgets > Hard limits\n\n```python\n# a comment")
    assert "budget = Budget(max_steps=3)\n```" in docs[2].text  # the fence is one paragraph
    assert docs[3].text == "Budgets > Hard limits > Deeper\n\nText under a third-level heading."
    assert docs[4].text == "Budgets > Soft limits\n\none two three four five six"
    assert docs[5].text == "Budgets > Soft limits\n\nseven eight nine ten"  # 6 + 4 > 8 words
    joined = split_markdown(PAGE, "budgets.md")  # room for both paragraphs
    assert joined[-1].text == ("Budgets > Soft limits\n\none two three four five six\n\n"
                               "seven eight nine ten")


def test_odd_input() -> None:
    assert split_markdown("", "x.md") == []
    assert [d.text for d in split_markdown("no heading at all", "x.md")] == ["no heading at all"]
    assert split_markdown("### Only deep\n\ntext", "x.md")[0].text == "Only deep\n\ntext"
    with pytest.raises(RetrievalError, match="max_words"):
        split_markdown("text", "x.md", max_words=0)


BODY = {"word", "two", "words", "x", "y", "z", "```"}  # the words that are not headings


@given(st.lists(st.sampled_from(["# A", "## B", "word", "two words", "", "```", "x y z"]),
                max_size=30), st.integers(1, 10))
def test_every_body_word_lands_in_exactly_one_passage(lines: list[str], size: int) -> None:
    docs = split_markdown("\n".join(lines), "p.md", max_words=size)
    assert len({d.doc_id for d in docs}) == len(docs)
    given_words = sorted(w for line in lines for w in line.split() if w in BODY)
    found = sorted(w for d in docs for w in d.text.split() if w in BODY)
    assert found == given_words
