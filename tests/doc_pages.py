"""Code blocks read from the documentation, by page and heading, for the tests that run them.

The guide lives in docs/ (one page per topic) and the README is the landing page; a test names
the page and the ``## `` heading its blocks sit under, so moving a section to another page is a
one-line change in its test, and a block can never drift out of every test unnoticed. Headings
are read outside fenced code only (a ``# comment`` line in a shell block is not a heading).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^\s*```")
HEADING = re.compile(r"^(#{1,6}) (.*)$")


def section(page: str, title: str) -> str:
    """The text under the heading ``title`` of ``page`` (relative to the repository's root), up to
    the next heading of the same or a higher level."""
    lines = (ROOT / page).read_text().splitlines(keepends=True)
    in_fence, level, taken = False, 0, []
    for line in lines:
        heading = None if in_fence else HEADING.match(line.rstrip("\n"))
        if FENCE.match(line):
            in_fence = not in_fence
        if heading and level and len(heading.group(1)) <= level:
            break
        if level:
            taken.append(line)
        elif heading and heading.group(2).strip() == title:
            level = len(heading.group(1))
    assert level, f"{page} has no heading {title!r}"
    return "".join(taken)


def blocks(page: str, title: str, language: str = "python") -> list[str]:
    """The fenced ``language`` blocks under ``title`` in ``page``, in order (a fence may carry
    attributes: ```` ```python title="..." ````)."""
    return re.findall(rf"^```{language}(?: [^\n]*)?\n(.*?)^```", section(page, title),
                      re.S | re.M)
