"""Text cut into comparable tokens: one tokeniser for every rule that matches words or values.

Why: provenance asks "did this value appear in what the session read?" and request scoping asks
"did the user's request use this word?"; both must agree on what a word is, and both must match
whole tokens, never substrings — "13" must not come from "June 13", "2013" or "id-1301".

Decision: a text is cut at white space, punctuation around a token stripped (so an e-mail
address, an IBAN, a URL, an id or a decimal stays one token), compared case-insensitively.
A sentence glued to a host name by its full stop ("www.example.com.They said") is cut off it:
no host name ends in a capitalised word, and the address must match as itself. Numbers take
one canonical form ("100", "100.0" and "1e2" alike), except a number with a leading zero, which
is an identifier ("0532"). A web link takes one form too: "https://www.x.com/" is "www.x.com",
the link a user wrote, whatever scheme or final slash a model adds to it.

Dates: a user writes "January 11th 2025" and a model passes "2025-01-11" to a tool; the two
must be one value, or the user's own day counts as made up. So a date takes one form whatever
way it was written: its month and day one token ("january 11" — from "Jan 11", "11th January",
"the 11th of January", "2025-01-11"; neither part stands alone, so "11" never comes from a
date), then its year as the next token ("2025", as a written-out date always had it), then an
ISO time if it had one ("2025-01-11T14:00" gives "14:00"). An impossible day ("February 30")
keeps the old form (month and day joined as written). Numeric dates: year first ("2025-01-11",
"2025/01/11") is never ambiguous; day and month with the year last ("01/11/2025") are January
11th in the US and November 1st elsewhere, so such a date is read only when one order is
impossible ("13/01/2025") or both agree ("05/05/2025") — otherwise it stays one token, which
matches itself and nothing else (a wrong guess would make another day the user's).

A day without a year ("11th of January") matches that day in the year a value names only under
a rule of its own (``undated``, used by provenance): when the text that named the day gives no
year at all, or gives that year elsewhere ("in 2024 ... on January 11th"). The year is not taken
from the clock: a what-if or audit run next year must see the same origins.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from decimal import Decimal, InvalidOperation

_STRIP = ".,;:!?()[]{}<>\"'`*"
_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH = {**{name: i for i, name in enumerate(_NAMES, 1)},
          **{name[:3]: i for i, name in enumerate(_NAMES, 1)}, "sept": 9}
_LAST = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # last day of each month, leap years
_MONTH_DAYS = frozenset(f"{name} {day}" for name, last in zip(_NAMES, _LAST, strict=True)
                        for day in range(1, last + 1))
_DAY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?")
_YEAR = re.compile(r"(?:19|20)\d\d")  # a year a text gives: 1900 to 2099
_YEAR_FIRST = re.compile(r"([1-9]\d{3})([-/.])(\d{1,2})\2(\d{1,2})"
                         r"(?:t(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?))?")
_YEAR_LAST = re.compile(r"(\d{1,2})([-/.])(\d{1,2})\2([1-9]\d{3})")


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


_SCHEMES = ("http://", "https://")


def link_form(token: str) -> str:
    """A web link (a lower-case token) in one form: "https://www.x.com/" is "www.x.com" (the
    scheme a model adds, or the slash it ends a host with, does not make the user's link
    another one); a link without "www." keeps its scheme, which is what says it is a link."""
    for scheme in _SCHEMES:
        if token.startswith(scheme + "www."):
            token = token[len(scheme):]
            break
    if token.endswith("/") and token.split("://", 1)[-1].count("/") == 1:  # a host's slash
        token = token[:-1]
    return token


def _month_day(month: int, day: int) -> str | None:
    """The one form of a month and day ("january 11"), or None for a day no year has."""
    if not 1 <= month <= 12:
        return None
    found = f"{_NAMES[month - 1]} {day}"
    return found if found in _MONTH_DAYS else None


def _numeric_date(token: str) -> list[str] | None:
    """A numeric date's tokens (month and day, year, ISO time), or None: not a date, an
    impossible one, or one whose order of day and month would be a guess."""
    match = _YEAR_FIRST.fullmatch(token)
    if match is not None:
        year, _, month, day, time = match.groups()
        found = _month_day(int(month), int(day))
        if found is None:
            return None
        return [found, year] if time is None else [found, year, time]
    match = _YEAR_LAST.fullmatch(token)
    if match is None:
        return None
    first, _, second, year = match.groups()
    day_first = _month_day(int(second), int(first))
    month_first = _month_day(int(first), int(second))
    if day_first is not None and month_first is not None and day_first != month_first:
        return None  # 01/11/2025: January 11th or November 1st — not guessed
    found = day_first or month_first
    return None if found is None else [found, year]


def _joined(month: str, day: str) -> str:
    """A month word and a day word as one date token: the one form when the day exists."""
    number = _DAY.fullmatch(day)
    found = _month_day(_MONTH[month], int(number.group(1))) if number is not None else None
    return found if found is not None else f"{month} {day}"


def tokens(text: str) -> list[str]:
    """``text`` as comparable tokens: lower case, punctuation around them stripped, numbers in
    one form, a date as its month and day (one token) and its year."""
    out: list[str] = []
    for raw in _unglued(text.split()):
        token = raw.strip(_STRIP).casefold()
        if not token:
            continue
        if token.startswith(_SCHEMES) or token.startswith("www."):
            token = link_form(token)
        number = _number(token)
        if number is None and len(token) >= 8 and token[0].isdigit():
            date = _numeric_date(token)
            if date is not None:
                out.extend(date)
                continue
        if out:
            last = out[-1]
            if token in _MONTH:
                if _DAY.fullmatch(last):
                    out[-1] = _joined(token, last)  # a date: neither part stands alone
                    continue
                if last == "of" and len(out) > 1 and _DAY.fullmatch(out[-2]):
                    del out[-1]  # "the 11th of January"
                    out[-1] = _joined(token, out[-1])
                    continue
            elif last in _MONTH and _DAY.fullmatch(token):
                out[-1] = _joined(last, token)
                continue
        out.append(number if number is not None else token)
    return out


def undated(wanted: Sequence[str]) -> tuple[list[str], list[tuple[int, str]]] | None:
    """``wanted`` with the year of each date in it left out, and where each was (the index of
    its month and day in the shorter run, the year), for matching a day a text named without a
    year; None when no date in ``wanted`` has a year."""
    if len(wanted) < 2 or not any(token in _MONTH_DAYS for token in wanted[:-1]):
        return None
    run: list[str] = []
    years: list[tuple[int, str]] = []
    position = 0
    while position < len(wanted):
        token = wanted[position]
        run.append(token)
        following = wanted[position + 1] if position + 1 < len(wanted) else ""
        if token in _MONTH_DAYS and _YEAR.fullmatch(following):
            years.append((len(run) - 1, following))
            position += 1
        position += 1
    return (run, years) if years else None


def is_year(token: str) -> bool:
    """A token a text gives as a year: a whole number from 1900 to 2099 (an amount of 2000
    reads as one too, which only ever makes a day without a year match less)."""
    return _YEAR.fullmatch(token) is not None


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
