"""One line of text from a value: what every readable view cuts long text with, and the small
pieces every timeline line is made of (a time, a call, an estimate's error).

Why its own module: the timeline and the views it draws on (a strategy's tree, the request
plan, the line renderers of each event family) all write these the same way, and the timeline
imports them, so the pieces live below all of them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

EXCERPT = 100

Renderer = Callable[[Any], list[str]]  # given its event's payload (tether.journal.payloads)


def excerpt(text: object, limit: int = EXCERPT) -> str:
    """One line of at most ``limit`` characters, whitespace collapsed, cut with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def when(timestamp: float) -> str:
    """A wall-clock timestamp as UTC, to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(timestamp))


def call_text(tool: str, arguments: object, limit: int = 80) -> str:
    """A call as one line, ``tool(key=value, ...)`` with the arguments in sorted order, cut to
    ``limit`` characters."""
    if isinstance(arguments, Mapping):
        args = ", ".join(f"{k}={json.dumps(arguments[k], ensure_ascii=False)}"
                         for k in sorted(arguments))  # sorted: the same text from every store
    else:
        args = json.dumps(arguments, ensure_ascii=False)
    return f"{tool}({excerpt(args, limit)})"


def off_by(estimate: int, actual: int) -> str:
    return f"{100 * (estimate - actual) / actual:+.0f}%"
