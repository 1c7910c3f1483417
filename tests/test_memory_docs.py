"""The memory guide's blocks run as pasted (tests/doc_blocks.py: "Forget me" after the block it
continues, with only the knowledge extra its page states) and print what their comments say."""

from __future__ import annotations

from doc_blocks import find, printed

PAGE = "docs/guide/memory.md"


def test_the_two_sessions_and_forget_me_blocks_print_what_they_say() -> None:
    assert printed(find(PAGE, "Two sessions that remember")) == [
        "Earlier you said: ['My name is Ada.']",
        "Nice to meet you, Ada.",
        "['My name is Ada.', 'What is my name?']",
        "['What is my name?', 'My name is Ada.']",
    ]
    assert printed(find(PAGE, "Forget me")) == ["2", "[]"]


def test_the_readme_block_prints_what_its_comments_say() -> None:
    assert printed(find("docs/tour.md", "Answers as data, conversations that remember")) == [
        "number='INV-7' total=12.5", "4 messages so far", "What is my name?", "2",
        "It is lorem ipsum.", "[6]"]
