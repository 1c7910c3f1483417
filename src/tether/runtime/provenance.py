"""Value-level provenance: where each argument of a call could have come from.

Why: a session-wide taint bit cannot tell "send the report to the address the user gave" from
"send it to the address a web page suggested", so it either lets both through or blocks both.
The runtime knows every value that entered the session — the user's request and each tool result
with its tool's declared output trust — so for each argument it can say which of them the value
appears in: ``user``, ``trusted`` (a tool declared trusted), ``untrusted``, or ``nowhere`` (the
model made it up). Policies read it as ``context.provenance[arg]``.

Decision: matching is on whole values and tokens, never substrings. A text is cut into tokens at
white space, with surrounding punctuation stripped (so an e-mail address, an IBAN, a URL, an id
or a decimal stays one token); a value matches a source when its tokens appear there as a
contiguous run, compared case-insensitively. A day written with its month ("June 13", "13 June")
is one date token, so the number 13 does not come "from" a date, and "2013" never matches "13".
Numbers match as numbers (``100`` matches "100" and "100.0"). A list or mapping is the union of
its leaves' origins; booleans and None carry none.

Cost: nothing unless a policy reads ``context.provenance`` — the mapping is computed when first
read, and only then are new tool results tokenised (once each).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

USER, TRUSTED, UNTRUSTED, NOWHERE = "user", "trusted", "untrusted", "nowhere"
ORIGINS = (USER, TRUSTED, UNTRUSTED, NOWHERE)
_STRIP = ".,;:!?()[]{}<>\"'`*"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
           "dec", "january", "february", "march", "april", "june", "july", "august",
           "september", "october", "november", "december")
_DAY = re.compile(r"^\d{1,2}(st|nd|rd|th)?$")


def _number(token: str) -> str | None:
    """A numeric token in one canonical form ("100", "100.0" and "1e2" alike), else None."""
    if not token or not (token[0].isdigit() or token[0] in "+-."):
        return None
    if len(token) > 1 and token[0] == "0" and token[1].isdigit():
        return None  # "0532" is an identifier, not the number 532
    try:
        value = Decimal(token)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    return format(value.normalize(), "f")


def tokens(text: str) -> list[str]:
    """``text`` as comparable tokens: lower case, punctuation around them stripped, numbers in
    one form, a month and its day joined into one date token."""
    out: list[str] = []
    for raw in text.split():
        token = raw.strip(_STRIP).casefold()
        if not token:
            continue
        number = _number(token)
        if out and ((token in _MONTHS and _DAY.match(out[-1]))
                    or (out[-1] in _MONTHS and _DAY.match(token))):
            out[-1] = f"{out[-1]} {token}"  # a date: neither part stands alone
            continue
        out.append(number if number is not None else token)
    return out


def _leaves(value: Any) -> Iterator[str]:
    """The scalar leaves of an argument value, as text (booleans and None carry no origin)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _leaves(item)
    else:
        yield str(value)


class Ledger:
    """The values a session has seen, by origin, indexed by token for run matching."""

    __slots__ = ("_index", "_sources")

    def __init__(self) -> None:
        self._sources: list[tuple[str, list[str]]] = []  # (origin, tokens)
        self._index: dict[str, list[tuple[int, int]]] = {}  # token -> (source, position)

    def see(self, origin: str, text: str) -> None:
        found = tokens(text)
        number = len(self._sources)
        self._sources.append((origin, found))
        for position, token in enumerate(found):
            self._index.setdefault(token, []).append((number, position))

    def origins_of_text(self, text: str) -> frozenset[str]:
        wanted = tokens(text)
        if not wanted:
            return frozenset()
        found: set[str] = set()
        for number, position in self._index.get(wanted[0], ()):
            origin, source = self._sources[number]
            if origin not in found and source[position:position + len(wanted)] == wanted:
                found.add(origin)
        return frozenset(found) or frozenset({NOWHERE})

    def origins(self, value: Any) -> frozenset[str]:
        """Where ``value`` could have come from: the union over its leaves."""
        out: set[str] = set()
        for leaf in _leaves(value):
            out |= self.origins_of_text(leaf)
        return frozenset(out)


class Sightings:
    """What a session has seen so far — its request, then each result of a tool that ran, marked
    untrusted when its tool declared its output so — fed to a ledger lazily, each result once."""

    __slots__ = ("_ledger", "_request", "_results", "_seen")

    def __init__(self, request: str, results: Sequence[tuple[bool, str]]) -> None:
        self._request = request
        self._results = results  # (untrusted?, content), in order; grows as the session runs
        self._ledger: Ledger | None = None
        self._seen = 0

    def ledger(self) -> Ledger:
        ledger = self._ledger
        if ledger is None:
            ledger = self._ledger = Ledger()
            if self._request:
                ledger.see(USER, self._request)
        results = self._results
        for untrusted, content in results[self._seen:]:
            ledger.see(UNTRUSTED if untrusted else TRUSTED, content)
        self._seen = len(results)
        return ledger


class ArgumentProvenance(Mapping[str, frozenset[str]]):
    """``context.provenance``: each argument's origins, computed when first read."""

    __slots__ = ("_arguments", "_computed", "_sightings")

    def __init__(self, arguments: Mapping[str, Any], sightings: Sightings) -> None:
        self._arguments = arguments
        self._sightings = sightings
        self._computed: dict[str, frozenset[str]] | None = None

    def _all(self) -> dict[str, frozenset[str]]:
        if self._computed is None:
            ledger = self._sightings.ledger()
            self._computed = {name: ledger.origins(value)
                              for name, value in self._arguments.items()}
        return self._computed

    def __getitem__(self, name: str) -> frozenset[str]:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arguments)

    def __len__(self) -> int:
        return len(self._arguments)

    def read(self) -> dict[str, list[str]] | None:
        """What was computed, for the journal (None if no policy read it)."""
        if self._computed is None:
            return None
        return {name: sorted(origins) for name, origins in self._computed.items()}
