"""Tool selection: from a catalog of hundreds of tools, offer the model the few that fit the turn.

Why: every tool offered is paid for in every request (its name, description and JSON schema are
input tokens), and a model offered five hundred tools chooses worse than one offered ten. With
``Agent(tool_selection=ToolSelection(k=8))`` each model turn is offered the ``always`` tools plus
the ``k`` tools that rank best for the turn; the runtime (``tether.runtime.context.selecting``) does
the rest: it asks the ranker each turn, never offers a tool the policy denies outright, journals
what it offered, and refuses a call to a tool that was not offered exactly like a call to an
unknown one.

Decisions this module embodies:

- **A seam, two protocols.** A ``ToolRanker`` indexes the catalog once, when the Agent is built
  (``index(specs)``); the ``ToolIndex`` it returns ranks the catalog for a query
  (``rank(query, limit)``: ``(name, score)`` pairs, best first). The index is built once per
  recipe and only read afterwards, so the recipe stays immutable and shareable; nothing per run
  lives on it. An embedding ranker plugs in the same way.
- **BM25 by default, in plain Python.** ``BM25`` scores the query against each tool's name
  (counted twice: it is the most telling text), description, and parameter names and
  descriptions, split on case and punctuation, lowercased, stop words dropped and English
  suffixes folded. A catalog of a few hundred tools is searched in well under a millisecond
  without a dependency, and the result is deterministic: ties keep catalog order, so a rerun or
  a resume ranks exactly as the recorded run did.
- **Validated at build.** ``k`` is a whole number ≥ 1; ``always`` names tools the agent has
  (checked by the Agent, where the tools are known).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from tether.errors import InvalidArgument, WrongType
from tether.types import ToolSpec

#: BM25's usual constants: term-frequency saturation and length normalisation.
K1 = 1.5
B = 0.75
NAME_WEIGHT = 2  # a tool's name counts this many times in its document
_WORD = re.compile(r"[A-Z]+s?(?![a-z])|[A-Z]?[a-z]+|\d+")  # URLs, HTTPServer, readFile, 2
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "has",
    "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of",
    "on", "or", "our", "please", "so", "some", "than", "that", "the", "their", "them", "then",
    "there", "these", "this", "to", "up", "us", "was", "we", "what", "when", "where", "which",
    "who", "will", "with", "would", "you", "your"))


@runtime_checkable
class ToolIndex(Protocol):
    def rank(self, query: str, limit: int) -> Sequence[tuple[str, float]]:
        """Up to ``limit`` tool names with their scores, best first. Tools that match nothing
        may be left out."""
        ...


@runtime_checkable
class ToolRanker(Protocol):
    def index(self, specs: Sequence[ToolSpec]) -> ToolIndex:
        """An index of ``specs``, built once when the Agent is built."""
        ...


def words(text: str) -> list[str]:
    """The terms of ``text``: split on case changes, digits and punctuation (``readFile``,
    ``read_file`` and ``read-file`` all give ``read``, ``file``), lowercased, stop words
    dropped, common English suffixes folded (``emails``, ``emailed`` → ``email``)."""
    out = []
    for w in _WORD.findall(text):
        w = w.lower()
        if w not in _STOP:
            out.append(_fold(w))
    return out


def _fold(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix) and not w.endswith("ss"):
            return w[:-len(suffix)]
    return w


def document(spec: ToolSpec) -> list[str]:
    """The terms a tool is found by: name (weighted), description, parameter names and their
    descriptions."""
    terms = words(spec.name) * NAME_WEIGHT + words(spec.description)
    properties = spec.parameters.get("properties")
    if isinstance(properties, Mapping):
        for name, schema in properties.items():
            terms += words(str(name))
            if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
                terms += words(str(schema["description"]))
    return terms


@dataclass(frozen=True, slots=True)
class BM25Index:
    """An inverted index of a catalog: term → ((tool position, term count), ...)."""

    names: tuple[str, ...]
    lengths: tuple[int, ...]
    average: float
    postings: Mapping[str, tuple[tuple[int, int], ...]]
    idf: Mapping[str, float]

    def rank(self, query: str, limit: int) -> list[tuple[str, float]]:
        scores: dict[int, float] = {}
        lengths, average = self.lengths, self.average or 1.0
        for term in dict.fromkeys(words(query)):  # each query term once, in order
            idf = self.idf.get(term)
            if idf is None:
                continue
            for position, count in self.postings[term]:
                norm = K1 * (1 - B + B * lengths[position] / average)
                scores[position] = scores.get(position, 0.0) + idf * count * (K1 + 1) / (
                    count + norm)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:max(limit, 0)]
        return [(self.names[position], score) for position, score in best]


@dataclass(frozen=True, slots=True)
class BM25:
    """The default ranker: Okapi BM25 over each tool's name, description and parameters."""

    def index(self, specs: Sequence[ToolSpec]) -> BM25Index:
        docs = [document(s) for s in specs]
        postings: dict[str, list[tuple[int, int]]] = {}
        for position, terms in enumerate(docs):
            counts: dict[str, int] = {}
            for term in terms:
                counts[term] = counts.get(term, 0) + 1
            for term, count in counts.items():
                postings.setdefault(term, []).append((position, count))
        n = len(docs)
        idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}
        lengths = tuple(len(d) for d in docs)
        return BM25Index(tuple(s.name for s in specs), lengths,
                         sum(lengths) / n if n else 0.0,
                         MappingProxyType({t: tuple(p) for t, p in postings.items()}),
                         MappingProxyType(idf))


@dataclass(frozen=True, slots=True)
class ToolSelection:
    """Offer each model turn the ``always`` tools plus the ``k`` best-ranked others.

    ``ranker`` indexes the catalog (BM25 by default). A tool the policy denies outright is
    never offered, ``always`` or not (``tether.runtime.context.selecting`` says how that is
    decided).
    """

    k: int = 8
    always: Sequence[str] = ()  # kept as a tuple
    ranker: ToolRanker = field(default_factory=BM25)

    def __post_init__(self) -> None:
        if type(self.k) is not int or self.k < 1:
            raise InvalidArgument(f"ToolSelection(k={self.k!r}): k is how many ranked tools each "
                                  "turn is offered, a whole number >= 1")
        always: Any = self.always
        if isinstance(always, str) or not all(isinstance(n, str) for n in always):
            raise WrongType("ToolSelection(always=...) takes tool names, e.g. always=['search']")
        object.__setattr__(self, "always", tuple(dict.fromkeys(always)))
        if not callable(getattr(self.ranker, "index", None)):
            raise WrongType(f"ranker {self.ranker!r} has no index(specs) method; use "
                            "tether.tools.selection.BM25() or implement ToolRanker")
