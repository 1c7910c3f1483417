"""What a journal keeps out of the events it seals: secrets, masked values, hidden arguments.

Why a module of its own: redaction is applied when events are sealed, to the values of their
data, and never to the encoded text — so it cannot corrupt the envelope (seq, timestamp, keys)
whatever the redacted value looks like. The journal collects what to redact as a run goes
(a decision's masked fields, a credential token's scrubber); this module is how it is applied.

Decision: a value a decision hides is written ``[masked]`` wherever it appears, whatever its
length. A value of 4 characters or more is blanked wherever it occurs in a string. A shorter one
("737", "7") is blanked where it stands as a whole token — not preceded or followed by a letter,
digit or underscore, nor part of a number such as ``1.7`` or ``3,737`` — so ``cvv 737`` and
``code: 7.`` lose it while ``1737``, ``v7`` and ``1.7`` keep their digits (blanking every "7"
would destroy unrelated text, and a "7" inside another number is not the value). The journal's
own identifiers and names (call ids, tool names, statuses, roles, the subject) are left as they
are, since resuming and auditing read them; inside a call's arguments everything is free text,
and a number equal to a hidden value is blanked too.
Journals written before this wrote ``[redacted]``; ``HIDDEN_MARKERS`` recognises both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tether.vocabulary import EventType

MASKED = "[masked]"
LEGACY_MASKED = "[redacted]"  # what journals wrote for a hidden value before "[masked]"
HIDDEN_MARKERS = (MASKED, LEGACY_MASKED)
MIN_SUBSTRING_CHARS = 4  # shorter hidden values are blanked as whole tokens only

#: Keys whose string values are the journal's own identifiers and enumerations, outside a
#: call's arguments (and any key ending in ``_id``): a short hidden value standing as a token in
#: one of them leaves it intact.
STRUCTURAL_KEYS = frozenset({
    "id", "name", "tool", "tools", "status", "type", "role", "effect", "signature", "call_hash",
    "hash", "head", "recipe", "stop_reason", "finish_reason", "kind", "fields", "mask_in",
    "model", "agent", "roles",
})

Scrubber = Callable[[str], str]
# a whole token: not next to a letter, digit or underscore, nor to a digit across "." or ","
NOT_AFTER, NOT_BEFORE = r"(?<!\w)(?<!\d[.,])", r"(?!\w)(?![.,]\d)"


class Known(Protocol):
    """Values known some other way than by their text (``tether.journal.fingerprints``)."""

    def __bool__(self) -> bool: ...

    def blank(self, text: str, *, tokens: bool = True) -> str: ...

    def hides_number(self, value: int | float) -> bool: ...


class HiddenValues:
    """The texts of values decisions hid: how to blank them in a string or a number. ``known``:
    values a loaded session knows only by fingerprint, blanked the same way."""

    __slots__ = ("_long", "_pattern", "_short", "known")

    def __init__(self, values: Sequence[str] = (), known: Known | None = None) -> None:
        self._long: list[str] = []
        self._short: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.known = known
        for value in values:
            self.add(value)

    def __bool__(self) -> bool:
        return bool(self._long or self._short or self.known)

    def add(self, value: str) -> None:
        if not value:
            return
        if len(value) >= MIN_SUBSTRING_CHARS:
            if value not in self._long:
                self._long.append(value)
        elif value not in self._short:
            self._short.add(value)
            words = "|".join(map(re.escape, sorted(self._short, key=len, reverse=True)))
            self._pattern = re.compile(rf"{NOT_AFTER}(?:{words}){NOT_BEFORE}")

    def blank(self, text: str, *, tokens: bool = True) -> str:
        """``text`` with every hidden value in it written ``[masked]`` (short ones as whole
        tokens, and only when ``tokens``)."""
        for value in self._long:
            if value in text:
                text = text.replace(value, MASKED)
        if tokens and self._pattern is not None:
            text = self._pattern.sub(MASKED, text)
        if self.known:
            text = self.known.blank(text, tokens=tokens)
        return text

    def hides_number(self, value: int | float) -> bool:
        text = json.dumps(value)
        if text in self._short or text in self._long:
            return True
        return self.known is not None and self.known.hides_number(value)


@dataclass(slots=True)
class Redactions:
    """What a journal must keep out of every event it seals from now on: secrets (a credential
    token's scrubber, applied to every string), values decisions hid (``HiddenValues``), and
    named arguments of named calls (the model's own tool calls, whatever the values' type)."""

    scrubbers: list[Scrubber] = field(default_factory=list)
    arguments: dict[str, set[str]] = field(default_factory=dict)  # call id -> field names
    values: HiddenValues = field(default_factory=HiddenValues)

    def __bool__(self) -> bool:
        return bool(self.scrubbers or self.arguments or self.values)


def scrub(value: Any, scrubbers: Sequence[Scrubber], hidden: HiddenValues | None = None,
          key: str = "", free: bool = False) -> Any:
    """``value`` with every scrubber applied to each string in it, and every hidden value
    blanked (``key``: the key it is the value of; ``free``: inside a call's arguments)."""
    if isinstance(value, str):
        for one in scrubbers:
            value = one(value)
        if hidden:
            value = hidden.blank(value, tokens=free or not _structural(key))
        return value
    if isinstance(value, list):
        return [scrub(v, scrubbers, hidden, key, free) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, scrubbers, hidden, k, free or k == "arguments")
                for k, v in value.items()}
    if (free and hidden and isinstance(value, int | float) and not isinstance(value, bool)
            and hidden.hides_number(value)):
        return MASKED
    return value


def _structural(key: str) -> bool:
    return key in STRUCTURAL_KEYS or key.endswith("_id")


def hide_arguments(type: str, plain: Any, hidden: Mapping[str, set[str]]) -> None:
    """Blank, in place, the named arguments of the named calls in an event's plain data."""
    if not hidden:
        return
    if type in (EventType.MODEL_RESPONSE, EventType.BRANCH_RESPONSE):
        calls = plain["response"]["tool_calls"]
    elif type == EventType.BRANCH_REQUEST:  # a branch's earlier turns, sent again
        calls = [c for m in plain["messages"] for c in m.get("tool_calls") or ()]
    elif type == EventType.CLIENT_CALL:
        calls = [plain["call"]]
    elif type == EventType.STRATEGY_CALLS:
        calls = plain["calls"]
    else:
        return
    for call in calls:
        names = hidden.get(call["id"])
        if names and isinstance(call["arguments"], dict):
            for name in names & call["arguments"].keys():
                call["arguments"][name] = MASKED
