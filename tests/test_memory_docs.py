"""The memory guide's blocks run as written and print what their comments say."""

from __future__ import annotations

from typing import Any

from doc_pages import blocks

PAGE = "docs/guide/memory.md"


def test_the_two_sessions_and_forget_me_blocks_print_what_they_say(capsys: Any) -> None:
    (remember,) = blocks(PAGE, "Two sessions that remember")
    (forget,) = blocks(PAGE, "Forget me")
    exec(compile(remember + forget, PAGE, "exec", dont_inherit=True), {"__name__": "memory"})
    assert capsys.readouterr().out.splitlines() == [
        "Earlier you said: ['My name is Ada.']",
        "Nice to meet you, Ada.",
        "['My name is Ada.', 'What is my name?']",
        "['What is my name?', 'My name is Ada.']",
        "2",
        "[]",
    ]


def test_the_readme_block_prints_what_its_comments_say(capsys: Any) -> None:
    (block,) = blocks("README.md", "Answers as data, conversations that remember")
    exec(compile(block, "README.md", "exec", dont_inherit=True), {"__name__": "readme"})
    assert capsys.readouterr().out.splitlines() == [
        "number='INV-7' total=12.5", "4 messages so far", "What is my name?", "2",
        "It is lorem ipsum.", "[6]"]
