"""What a journal keeps out of the events it seals: secrets, masked values, hidden arguments.

Why a module of its own: redaction is applied when events are sealed, to the values of their
data, and never to the encoded text — so it cannot corrupt the envelope (seq, timestamp, keys)
whatever the redacted value looks like. The journal collects what to redact as a run goes
(a decision's masked fields, a credential token's scrubber); this module is how it is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"
MIN_REDACTED_CHARS = 4  # shorter values would blank out unrelated text


Scrubber = Callable[[str], str]


@dataclass(slots=True)
class Redactions:
    """What a journal must keep out of every event it seals from now on: text (a secret, a
    masked value, wherever it appears in a string) and named arguments of named calls (the
    model's own tool calls, whatever the values' type)."""

    scrubbers: list[Scrubber] = field(default_factory=list)
    arguments: dict[str, set[str]] = field(default_factory=dict)  # call id -> field names

    def __bool__(self) -> bool:
        return bool(self.scrubbers or self.arguments)



def scrub(value: Any, scrubbers: Sequence[Scrubber]) -> Any:
    """``value`` with every scrubber applied to each string in it."""
    if isinstance(value, str):
        for one in scrubbers:
            value = one(value)
        return value
    if isinstance(value, list):
        return [scrub(v, scrubbers) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, scrubbers) for k, v in value.items()}
    return value


def hide_arguments(type: str, plain: Any, hidden: Mapping[str, set[str]]) -> None:
    """Blank, in place, the named arguments of the named calls in an event's plain data."""
    if not hidden:
        return
    if type == "model.response":
        calls = plain["response"]["tool_calls"]
    elif type == "client.call":
        calls = [plain["call"]]
    else:
        return
    for call in calls:
        names = hidden.get(call["id"])
        if names and isinstance(call["arguments"], dict):
            for name in names & call["arguments"].keys():
                call["arguments"][name] = REDACTED
