"""Value-level provenance: where each argument of a call could have come from.

Why: a session-wide taint bit cannot tell "send the report to the address the user gave" from
"send it to the address a web page suggested", so it either lets both through or blocks both.
The runtime knows every value that entered the session — the user's request and each tool result
with its tool's declared output trust — so for each argument it can say which of them the value
appears in: ``user``, ``trusted`` (a tool declared trusted), ``untrusted``, or ``nowhere`` (the
model made it up). Policies read it as ``context.provenance[arg]``.

Decision: matching is on whole values and tokens, never substrings (``tether.tokens``: an
e-mail address, an IBAN, a URL or an id stays one token, numbers match as numbers, a date
takes one form however it was written); a value matches a source when its tokens appear there as
a contiguous run. A date with a year ("2025-01-11") also matches a day its source named without
one ("January 11th") when that source gives no year, or gives that year elsewhere — never when
the day there has another year (``tether.tokens.undated``). A
text found nowhere (the model composed it) also carries the origins of the links inside it: a
message the model wrote around a link a web page planted is where a phishing link travels. A
list or mapping is the union of its leaves' origins; booleans and None carry none. A JSON
result is seen leaf by leaf (a run never spans two fields).

Trusted fields: an untrusted result often mixes text a third party wrote (an e-mail's body)
with values the system wrote (the e-mail's id, its authenticated sender). A tool that declares
``trusted_fields`` has those keys' values seen as ``trusted`` and the rest as ``untrusted``;
the journal records the field names with the result, so resume and what-if see the same. This
lets "reschedule my dental check-up" use the id the calendar assigned, while "delete file 13"
in a file's text still comes from ``untrusted`` too — ``contain_untrusted_flows`` makes a party
of a high-risk tool that untrusted text also names wait.

Echoes: a trusted source can return what the agent itself wrote (a message it posted). What a
side-effecting call sent keeps, read back whole, the origins it had when sent.

Memory: a long-lived session (a gateway, ``SessionState(window=...)``) keeps only its most
recent results (``SightingLog``) and echoes of what those wrote. The tokens of the untrusted
results and echoes it forgets go into filters of fixed size
(``tether.runtime.provenance.forgotten``): a value that may have come from them also has their
origins (fail closed). The journal still holds every result; a what-if or audit replays the whole
session.

Cost: nothing unless a policy reads ``context.provenance`` — the mapping is computed when first
read, and only then are new tool results tokenised (once each).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from tether.runtime.provenance.forgotten import Forgotten
from tether.tokens import is_link, is_year, tokens, undated
from tether.vouched import leaves, split_vouched

USER, TRUSTED, UNTRUSTED, NOWHERE = "user", "trusted", "untrusted", "nowhere"
ORIGINS = (USER, TRUSTED, UNTRUSTED, NOWHERE)


_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_ESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] == "u":
        return chr(int(code[1:], 16))
    return _ESCAPED.get(code, code)


def _texts(content: str) -> Iterator[str]:
    """What a result says, piece by piece: a JSON result's keys and leaves each on its own (so
    a run never matches across two fields, and escapes such as \\n do not glue words
    together); JSON cut short by the size limit whole, its escapes undone; any other text
    whole."""
    if content[:1] in ("{", "["):
        try:
            value = json.loads(content)
        except ValueError:
            yield _ESCAPE.sub(_unescape, content)
            return
        stack = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, Mapping):
                stack.extend(node.values())
                yield from (str(key) for key in node)
            elif isinstance(node, list):
                stack.extend(node)
            elif node is not None and not isinstance(node, bool):
                yield str(node)
        return
    yield content


class Ledger:
    """The values a session has seen, by origin, indexed by token for run matching."""

    __slots__ = ("_index", "_sources", "forgotten")

    def __init__(self, forgotten: Forgotten | None = None) -> None:
        self._sources: list[tuple[str, list[str]]] = []  # (origin, tokens)
        self._index: dict[str, list[tuple[int, int]]] = {}  # token -> (source, position)
        self.forgotten = forgotten  # untrusted text no longer indexed, if any

    def see(self, origin: str, text: str, found: list[str] | None = None) -> None:
        """``text`` came from ``origin`` (``found``: its tokens, if the caller has them)."""
        if found is None:
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
        forgotten = set() if self.forgotten is None else self.forgotten.origins_of(wanted)
        dated = undated(wanted)
        if dated is not None:  # a day given without its year ("on January 11th")
            found |= self._undated(*dated, found)
            if self.forgotten is not None:
                forgotten |= self.forgotten.origins_of(dated[0])
        if found:
            return frozenset(found | forgotten)
        # text the model composed: a link inside it still came from where the link was seen
        for token in wanted:
            if is_link(token):
                found.update(self._sources[number][0] for number, _ in self._index.get(token, ()))
        return frozenset({NOWHERE, *found, *forgotten})

    def _undated(self, run: list[str], years: list[tuple[int, str]],
                 found: set[str]) -> set[str]:
        """The origins (not in ``found``) of a source holding ``run`` — a value's tokens with the
        years of its dates left out — where each of those dates is a day named without a year
        (no year follows it) in a text that gives no year or gives that one elsewhere."""
        more: set[str] = set()
        for number, position in self._index.get(run[0], ()):
            origin, source = self._sources[number]
            if origin in found or origin in more or source[position:position + len(run)] != run:
                continue
            given: set[str] | None = None
            for at, year in years:
                after = position + at + 1
                if after < len(source) and is_year(source[after]):
                    break  # that day has a year of its own, and not this one
                if given is None:
                    given = {token for token in source if is_year(token)}
                if given and year not in given:
                    break  # the text gives a year, and not this one
            else:
                more.add(origin)
        return more

    def origins(self, value: Any) -> frozenset[str]:
        """Where ``value`` could have come from: the union over its leaves."""
        out: set[str] = set()
        for leaf in leaves(value):
            out |= self.origins_of_text(leaf)
        return frozenset(out)


class Sighting(NamedTuple):
    """A result of a tool that ran, as provenance sees it."""

    untrusted: bool  # its tool declared its output untrusted
    content: str  # what the model read
    trusted_fields: tuple[str, ...] = ()  # keys of an untrusted result the system writes
    sent: Mapping[str, Any] | None = None  # a side-effecting call's arguments: what it wrote


class SightingLog(list[Sighting]):
    """The results provenance matches against, of which a long-lived session (a gateway) keeps
    only the most recent: ``forget`` drops the oldest, counting them, and keeps the tokens of
    the untrusted ones, and of what side-effecting calls wrote, in filters of fixed size
    (``text``), by the origins they had."""

    __slots__ = ("forgotten", "indexer", "text")

    def __init__(self, results: Iterable[Sighting] = ()) -> None:
        super().__init__(results)
        self.forgotten = 0  # how many of the oldest results were dropped
        self.text = Forgotten((UNTRUSTED, NOWHERE))  # what they said, by origin
        self.indexer: Sightings | None = None  # the provenance reading this log, once one does

    def forget(self, count: int) -> None:
        """Drop the ``count`` oldest results. What they wrote keeps the origins provenance gave
        it (brought up to date first); if provenance was never read, it is kept as both
        ``untrusted`` and ``nowhere`` — its origins were never worked out (fail closed)."""
        if self.indexer is not None:
            self.indexer.ledger()
        dropped = self[:count]
        del self[:count]
        self.forgotten += len(dropped)
        for sighting in dropped:
            if sighting.untrusted:
                content = sighting.content  # but the fields the system wrote, as the ledger
                if sighting.trusted_fields:
                    content = split_vouched(content, sighting.trusted_fields)[1]
                for text in _texts(content):
                    self.text.add((UNTRUSTED,), tokens(text))
            if sighting.sent and self.indexer is None:
                for leaf in leaves(sighting.sent):
                    self.text.add((UNTRUSTED, NOWHERE), tokens(leaf))


class Sightings:
    """What a session has seen so far — its request, then each result of a tool that ran, marked
    untrusted when its tool declared its output so — fed to a ledger lazily, each result once.

    What a side-effecting call wrote is remembered with the origins its values had then: read
    back from a trusted source (a message the agent posted, a file it wrote), such a value —
    whole — is seen with those origins, not as the source's own (two calls must not launder an
    attacker's link)."""

    __slots__ = ("_echoes", "_forgotten", "_ledger", "_request", "_results", "_seen")

    def __init__(self, request: str, results: Sequence[Sighting]) -> None:
        self._request = request
        self._results = results  # in order; grows as the session runs
        self._ledger: Ledger | None = None
        self._echoes: dict[tuple[str, ...], frozenset[str]] = {}  # what the session wrote
        self._seen = 0
        self._forgotten = 0  # the log's ``forgotten`` when the ledger was built

    def ledger(self) -> Ledger:
        ledger = self._ledger
        results = self._results
        if isinstance(results, SightingLog) and results.forgotten != self._forgotten:
            # the oldest results were dropped: index what is left afresh, echoes included
            # (those of the results kept are found again); the others are forgotten too
            self._forgotten, self._seen, ledger = results.forgotten, 0, None
            for key, origins in self._echoes.items():
                results.text.add(origins, key)
            self._echoes = {}
        if ledger is None:
            forgotten = None
            if isinstance(results, SightingLog):
                results.indexer, forgotten = self, results.text
            ledger = self._ledger = Ledger(forgotten)
            if self._request:
                ledger.see(USER, self._request)
        for untrusted, content, fields, sent in results[self._seen:]:
            if sent:
                self._remember(ledger, sent)
            if untrusted and fields:
                vouched, content = split_vouched(content, fields)
                for value in vouched:
                    self._see_trusted(ledger, value)
            for text in _texts(content):
                if untrusted:
                    ledger.see(UNTRUSTED, text)
                else:
                    self._see_trusted(ledger, text)
        self._seen = len(results)
        return ledger

    def _remember(self, ledger: Ledger, sent: Mapping[str, Any]) -> None:
        echoes = self._echoes
        for leaf in leaves(sent):
            key = tuple(tokens(leaf))
            if key:
                echoes[key] = echoes.get(key, frozenset()) | ledger.origins_of_text(leaf)

    def _see_trusted(self, ledger: Ledger, text: str) -> None:
        if not self._echoes:
            ledger.see(TRUSTED, text)
            return
        found = tokens(text)  # once, for the lookup and the ledger alike
        for origin in self._echoes.get(tuple(found)) or (TRUSTED,):
            ledger.see(origin, text, found)


class ArgumentProvenance(Mapping[str, frozenset[str]]):
    """``context.provenance``: each argument's origins, computed when first read."""

    __slots__ = ("_arguments", "_computed", "_sightings")

    def __init__(self, arguments: Mapping[str, Any], sightings: Sightings) -> None:
        self._arguments = arguments
        self._sightings = sightings
        self._computed: dict[str, frozenset[str]] | None = None

    def compute(self) -> None:
        """Work the origins out now, if no policy read them: what the call's result inherits
        rests on them (``tether.runtime.provenance.inherited``)."""
        self._all()

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
