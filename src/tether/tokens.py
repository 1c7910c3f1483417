"""Text cut into comparable tokens: one tokeniser for every rule that matches words or values.

Why: provenance asks "did this value appear in what the session read?" and request scoping asks
"did the user's request use this word?"; both must agree on what a word is, and both must match
whole tokens, never substrings — "13" must not come from "June 13", "2013" or "id-1301".

Decision: a text is cut at white space, punctuation around a token stripped (so an e-mail
address, an IBAN, a URL, an id or a decimal stays one token), compared case-insensitively.
A day written with its month ("June 13", "13 June") is one date token, so neither part stands
alone. A sentence glued to a host name by its full stop ("www.example.com.They said") is cut
off it: no host name ends in a capitalised word, and the address must match as itself.
Numbers take one canonical form ("100", "100.0" and "1e2" alike), except a number with a
leading zero, which is an identifier ("0532").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

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
    for raw in _unglued(text.split()):
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


def _unglued(words: list[str]) -> Iterator[str]:
    """Each word, a dotted host name and a capitalised word glued to it by a full stop as two
    (string operations, not a regular expression: a long word must not cost quadratic time)."""
    for word in words:
        if "." in word:
            host, _, tail = word.strip(_STRIP).rpartition(".")
            if (len(tail) > 1 and tail.isalpha() and tail[0].isupper() and tail[1:].islower()
                    and "." in host and "/" not in host and "@" not in host):
                yield host
                yield tail
                continue
        yield word


def is_link(token: str) -> bool:
    """A token that names a place to go: a URL, with or without its scheme ("www.x.com")."""
    return "://" in token or token.startswith("www.")
