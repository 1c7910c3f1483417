"""One line of text from a value: what every readable view cuts long text with.

Why its own module: the timeline and the views it draws on (a strategy's tree, the request
plan) all cut text the same way, and the timeline imports them, so the cut lives below all of
them.
"""

from __future__ import annotations

EXCERPT = 100


def excerpt(text: object, limit: int = EXCERPT) -> str:
    """One line of at most ``limit`` characters, whitespace collapsed, cut with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"
