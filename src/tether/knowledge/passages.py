"""Splitting a Markdown document into passages a retriever can index and a tool result can cite.

Why: a retriever ranks units of text, and a result is only as useful as the unit it returns: a
whole page buries the answer, a sentence loses its context. Headings are where an author already
split a page by topic, so passages follow them.

Decision: a passage is a run of paragraphs under one heading, up to ``max_words`` words (a
paragraph longer than that is its own passage; it is never cut mid-paragraph, and a fenced code
block counts as one paragraph). Each passage starts with its heading, so "Budgets > Hard
limits" is searchable text too, and its id is ``source#n`` (n counts from 1 in page order), so
the same file always gives the same ids.
"""

from __future__ import annotations

import re

from tether.knowledge.retrieval import Document, RetrievalError

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _paragraphs(markdown: str) -> list[tuple[str, str]]:
    """(heading trail, paragraph) pairs in order; code fences kept whole, headings not
    paragraphs."""
    trail: list[str] = []
    found: list[tuple[str, str]] = []
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        text = "\n".join(current).strip()
        if text:
            found.append((" > ".join(t for t in trail if t), text))
        current.clear()

    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            current.append(line)
            continue
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            del trail[level - 1:]
            trail.extend([""] * (level - 1 - len(trail)))
            trail.append(heading.group(2).strip())
        elif not in_fence and not line.strip():
            flush()
        else:
            current.append(line)
    flush()
    return found


def split_markdown(markdown: str, source: str, *, max_words: int = 120,
                   tenant_id: str | None = None) -> list[Document]:
    """The passages of one Markdown document, as Documents ``source#1``, ``source#2``, ..."""
    if max_words < 1:
        raise RetrievalError(f"max_words must be at least 1; got {max_words}")
    passages: list[tuple[str, list[str]]] = []
    words = 0
    for trail, paragraph in _paragraphs(markdown):
        size = len(paragraph.split())
        if not passages or passages[-1][0] != trail or words + size > max_words:
            passages.append((trail, []))
            words = 0
        passages[-1][1].append(paragraph)
        words += size
    return [Document(f"{source}#{n}", "\n\n".join([trail, *body] if trail else body), source,
                     tenant_id)
            for n, (trail, body) in enumerate(passages, start=1)]
