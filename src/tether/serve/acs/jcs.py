"""RFC 8785 (JCS) canonical JSON as the ACS wire signs and hashes it, fast where that is provably
the same bytes.

Why a module of its own: the Guardian writes every request (its MAC, its chain entry) and every
answer (its signature) in RFC 8785 form, and the ``rfc8785`` package is pure Python: a tool
call's envelope cost it about 360 thousand instructions, and the canonical forms were most of what
the Guardian added to a call (bench/acs.py, docs/benchmarks.md).

Decision: a value made only of exact ``dict`` (``str`` keys), ``list`` or ``tuple``, ``str``,
``bool``, ``None`` and ``int`` within ±(2**53 - 1), nested no deeper than ``DEPTH``, is written
by the standard library's C JSON encoder, keys sorted and no whitespace. For such a value that
encoder writes what RFC 8785 writes, byte for byte: the same literals, integers in decimal,
strings escaped alike (``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t``, every other control character
as a lower-case ``\\u00xx``, everything else as itself in UTF-8), and keys sorted by code point,
which is RFC 8785's UTF-16 order as long as no key holds a character past U+FFFF. Anything else
— a float (RFC 8785 writes numbers as ECMAScript does, not as Python's ``repr``), a larger
integer, any other type, a non-string key, a character past U+FFFF anywhere in the text, a lone
surrogate, deeper nesting — goes to ``rfc8785.dumps``, which writes it, or refuses it, exactly as
before. tests/test_acs_jcs.py holds the fast path to byte equality with ``rfc8785.dumps``
(hypothesis), and checks that each kind of value it must not take is not taken.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from typing import Any

from tether.errors import WrongType

DEPTH = 64  # deeper values go to rfc8785 (which refuses what nests past Python's recursion)
SAFE = 2**53 - 1  # RFC 8785's integers: IEEE 754 doubles hold them exactly
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # sorted apart by code point and by UTF-16


def _refuse(value: object) -> Any:  # never reached: only plain values are encoded
    raise WrongType(f"{type(value).__name__} is not plain JSON")


def _encoder() -> Callable[[Any], str]:
    """One reused C encoder (building one per call, as ``json.dumps`` does, costs more than
    writing an envelope); the pure-Python one where the interpreter has no C accelerator."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                allow_nan=False, check_circular=False, default=_refuse).encode
    encode = make(None, _refuse, json.encoder.encode_basestring, None, ":", ",", True, False,
                  False)
    return lambda value: "".join(encode(value, 0))


_encode = _encoder()


def plain(value: Any, depth: int = DEPTH) -> bool:
    """Whether ``value`` holds only what the C encoder writes exactly as RFC 8785 does (the
    text's characters are checked after it is written)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        number: int = value
        return -SAFE <= number <= SAFE
    if depth <= 0:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or (type(item) is not str and not plain(item, depth - 1)):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:  # noqa: SIM110 - all() of a generator costs more, on every request
            if type(item) is not str and not plain(item, depth - 1):
                return False
        return True
    return False


def dumps(value: Any) -> bytes:
    """``rfc8785.dumps(value)``, byte for byte, and its errors too (``CanonicalizationError``,
    ``RecursionError``, ``UnicodeEncodeError`` for a lone surrogate in a key)."""
    if plain(value):
        text = _encode(value)
        if text.isascii():
            return text.encode()
        if _ASTRAL.search(text) is None:
            # a lone surrogate cannot be encoded: rfc8785, below, says how it refuses it
            with contextlib.suppress(UnicodeEncodeError):
                return text.encode()
    import rfc8785

    return rfc8785.dumps(value)
