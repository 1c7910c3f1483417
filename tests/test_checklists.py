"""docs/checklists.md maps tether to AARM v1.0 and the OWASP Agentic Top 10, each line with the
tests that show it: this keeps the page complete and its links true.

Decision: the page links tests by ``FILE::FUNCTION`` (link text) into ``tests/`` (link target), and
this test reads both back: every AARM requirement R1–R9 and every ASI01–ASI10 has a section with a
guarantee, at least one test and what tether does not do; every linked test function exists, at
module level, in the file the link opens. Renaming or deleting a test a checklist cites fails here.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from doc_pages import ROOT

PAGE = ROOT / "docs" / "checklists.md"
LINK = re.compile(r"\[(test_\w+\.py)::(\w+)\]\(https://github\.com/tether-dev/tether/blob/main/"
                  r"tests/([\w/]+\.py)\)")
LINES = [f"R{n}" for n in range(1, 10)] + [f"ASI{n:02d}" for n in range(1, 11)]


def sections() -> dict[str, str]:
    parts = re.split(r"^### ", PAGE.read_text(), flags=re.MULTILINE)[1:]
    return {part.split(" ", 1)[0]: part for part in parts}


@cache
def functions(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text())
    return frozenset(node.name for node in tree.body
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


def test_every_line_of_both_checklists_has_a_guarantee_tests_and_a_limit() -> None:
    found = sections()
    assert list(found) == LINES
    for line, text in found.items():
        for field in ("**Guarantee.**", "**Tests.**", "**Does not.**"):
            assert field in text, f"{line} has no {field}"
        tests = text.split("**Tests.**", 1)[1].split("**Does not.**", 1)[0]
        assert LINK.search(tests), f"{line} links no test"


@pytest.mark.parametrize("line", LINES)
def test_every_linked_test_exists_in_the_file_the_link_opens(line: str) -> None:
    links = LINK.findall(sections()[line])
    assert links
    for text_file, function, target in links:
        path = ROOT / "tests" / target
        assert Path(target).name == text_file, f"{line}: {text_file} links to {target}"
        assert path.is_file(), f"{line}: {target} is not in tests/"
        assert function in functions(path), f"{line}: {target} has no test {function}"


def test_no_link_into_tests_is_malformed() -> None:
    text = PAGE.read_text()
    every = re.findall(r"\]\(https://github\.com/tether-dev/tether/blob/main/tests/[^)]*\)", text)
    assert len(every) == len(LINK.findall(text))
