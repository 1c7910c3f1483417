"""Confidentiality labels: which arguments of a call carry private data the session read.

Why: provenance asks where a value came from, to stop an injected *destination*; it says nothing
about *what* leaves. An injection that knows the policy sends the user's passport number to the
wife the user named, in the body of an e-mail the user asked for: every party vetted, every word
asked for. A tool that reads private data declares which fields of its result are private and
what kind they are (``ToolMeta.private``: ``{"passport_number": "passport", "*": "balance"}``);
the result journals the declaration with it (like ``trusted_fields``), so a resumed run, a
rerun and a what-if read the same labels.

Decision: labels follow values through the model's composition as whole-token runs, the way
provenance does: an argument carries a kind when it contains one of that kind's private values —
a short value (at most ``SHINGLE`` tokens) whole, a longer one (a message) by any run of
``SHINGLE`` of its tokens. A value of fewer than ``MIN_CHARS`` characters (a balance of 1810, a
city) is too common to follow and is not labelled. A URL is one token, so an argument is also
read cut at a URL's delimiters and decoded: a passport number in a fetched URL's query leaves
as surely as in an e-mail's body, through an egress tool with no side effect. Computed only
when a policy reads it (``ArgumentLabels``), and recorded with the decision then.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote_plus

from tether.tokens import tokens
from tether.vouched import leaves, split_vouched

SHINGLE = 4  # tokens: a longer private text is followed by any run of this many
MIN_CHARS = 6  # a private value shorter than this (spacing aside) is not followed
_URL_PARTS = re.compile(r"[/?&=#+:;@%]")  # what a URL is cut at, after decoding, to find values


class PrivateValues:
    """The private values a session read, by kind: folded from each ``tool.result`` that
    declares ``private`` fields."""

    __slots__ = ("lengths", "runs")

    def __init__(self) -> None:
        self.runs: dict[tuple[str, ...], set[str]] = {}  # token run -> kinds
        self.lengths: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self.runs)

    def add(self, content: str, private: Mapping[str, str]) -> None:
        """Read the private values of a result as the model saw it."""
        for value, kind in _values(content, private):
            words = tuple(tokens(value))
            if len("".join(words)) < MIN_CHARS:  # as compared: 1810.0 is 1810
                continue
            runs = [words] if len(words) <= SHINGLE else [
                words[i:i + SHINGLE] for i in range(len(words) - SHINGLE + 1)]
            for run in runs:
                self.runs.setdefault(run, set()).add(kind)
                self.lengths.add(len(run))

    def kinds_in(self, value: Any) -> frozenset[str]:
        """The kinds of private data ``value`` (any JSON-like value) carries: its text as
        written, and — where that differs — cut at a URL's delimiters and decoded, since a
        URL is one token and a value leaves in its path or query as well as in a body."""
        found: set[str] = set()
        for leaf in leaves(value):
            words = tuple(tokens(leaf))
            found |= self._runs_in(words)
            cut = _URL_PARTS.sub(" ", unquote_plus(leaf)) if _URL_PARTS.search(leaf) else leaf
            if cut != leaf:
                found |= self._runs_in(tuple(tokens(cut)))
        return frozenset(found)

    def _runs_in(self, words: tuple[str, ...]) -> set[str]:
        found: set[str] = set()
        for length in self.lengths:
            for i in range(len(words) - length + 1):
                found |= self.runs.get(words[i:i + length], set())
        return found


def _values(content: str, private: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    whole = private.get("*")
    if whole is not None:
        try:
            parsed = json.loads(content)
        except ValueError:
            yield content, whole
        else:
            for leaf in leaves(parsed):
                yield leaf, whole
    fields = [f for f in private if f != "*"]
    for field in fields:
        for value in split_vouched(content, [field])[0]:
            yield value, private[field]


class ArgumentLabels(Mapping[str, frozenset[str]]):
    """Each argument's kinds of private data, worked out on first read (``read`` returns what a
    policy read, for the decision's record, or None)."""

    __slots__ = ("_arguments", "_labels", "_values")

    def __init__(self, arguments: Mapping[str, Any], values: PrivateValues) -> None:
        self._arguments = arguments
        self._values = values
        self._labels: dict[str, frozenset[str]] | None = None

    def _all(self) -> dict[str, frozenset[str]]:
        if self._labels is None:
            self._labels = {} if not self._values else {
                name: kinds for name, value in self._arguments.items()
                if (kinds := self._values.kinds_in(value))}
        return self._labels

    def __getitem__(self, name: str) -> frozenset[str]:
        return self._all().get(name, frozenset())

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def read(self) -> dict[str, list[str]] | None:
        if self._labels is None or not self._labels:
            return None
        return {name: sorted(kinds) for name, kinds in self._labels.items()}
