"""What a long-lived session forgot of untrusted text, in a fixed amount of memory.

Why: provenance (``tether.runtime.provenance.values``) matches a call's arguments against every
result the session has seen. A gateway lives for weeks, so it keeps only its most recent results;
but an address an untrusted page planted a thousand calls ago must not come back as "found nowhere"
(the model made it up) once that page is forgotten — a policy that refuses untrusted recipients
would then let it through.

Decision: the tokens of every untrusted result a session forgets go into a Bloom filter of fixed
size, one per origin that only ever tightens a policy's view (``untrusted``, ``nowhere``; never
``user`` or ``trusted``). What a side-effecting call wrote (an echo) is forgotten the same way,
under the origins it had. Any value is then also reported with such an origin when the filter
may hold all its tokens, or any link in it (the rule the ledger applies to links) — at least
wherever the session would have reported it had it kept everything (a value in a trusted result
that also was in untrusted text has both origins; an echo counts wherever its tokens appear, not
only read back whole). A Bloom filter never misses what it was given, so the
answer fails closed: wrong only by adding such an origin to a value, at a rate that grows as the
filter fills (about 0.3% of one-token values after 100,000 distinct forgotten tokens, 5% after
300,000). The tokens are hashed with Python's ``hash``: salted per process, which is fine for a
filter that lives and dies with its session.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from tether.tokens import is_link

BITS = 1 << 21  # 256 KiB: about 100,000 distinct tokens at a 0.3% false-positive rate
_MASK = BITS - 1


class ForgottenTokens:
    """A Bloom filter (three probes in 2**21 bits) of the tokens of forgotten untrusted text."""

    __slots__ = ("_bits", "added")

    def __init__(self) -> None:
        self._bits = bytearray(BITS // 8)
        self.added = 0  # tokens added, duplicates included

    def add(self, tokens: Iterable[str]) -> None:
        bits = self._bits
        added = 0
        for token in tokens:
            h = hash(token)
            a, b, c = h & _MASK, (h >> 21) & _MASK, (h >> 42) & _MASK
            bits[a >> 3] |= 1 << (a & 7)
            bits[b >> 3] |= 1 << (b & 7)
            bits[c >> 3] |= 1 << (c & 7)
            added += 1
        self.added += added

    def __contains__(self, token: object) -> bool:
        if not isinstance(token, str):
            return False
        bits = self._bits
        return all(bits[probe >> 3] & (1 << (probe & 7)) for probe in _probes(token))

    def may_hold(self, wanted: Sequence[str]) -> bool:
        """Whether text with these tokens may have come from forgotten untrusted text: every
        token of it, or any link in it, was (probably) there."""
        if not wanted:
            return False
        return all(t in self for t in wanted) or any(is_link(t) and t in self for t in wanted)


class Forgotten:
    """The filters of a session's forgotten text, by the origin it had."""

    __slots__ = ("_filters", "_kept")

    def __init__(self, kept: Collection[str]) -> None:
        self._kept = frozenset(kept)  # the origins kept: those that only tighten a policy
        self._filters: dict[str, ForgottenTokens] = {}  # made when first needed (256 KiB)

    def add(self, origins: Iterable[str], tokens: Sequence[str]) -> None:
        """Text with these ``tokens`` and ``origins`` is forgotten (origins not kept — the
        ones that would loosen a policy — are dropped)."""
        for origin in origins:
            if origin in self._kept and tokens:
                found = self._filters.get(origin)
                if found is None:
                    found = self._filters[origin] = ForgottenTokens()
                found.add(tokens)

    def origins_of(self, wanted: Sequence[str]) -> set[str]:
        """The origins forgotten text with these tokens may have had."""
        if not self._filters:
            return set()
        return {origin for origin, found in self._filters.items() if found.may_hold(wanted)}


def _probes(token: str) -> tuple[int, int, int]:
    h = hash(token)  # negative hashes too: & keeps the low bits of the two's complement
    return h & _MASK, (h >> 21) & _MASK, (h >> 42) & _MASK
