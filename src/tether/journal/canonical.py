"""The canonical JSON text of event data: what the journal hashes and every store keeps.

Why apart from the chain (``journal.chain``): the canonical form is what makes a hash a fact
about the data — every store, every process and every later reader must write a value the same
way — and it is used well beyond the journal (call signatures, fingerprints, exports), by code
that never seals an event.

Decision: sorted keys, no whitespace, Decimals as strings, tether records by their ``to_dict``;
the text is fixed when an event is appended. Data that JSON text cannot carry faithfully is
refused (``JournalValueError``), the same way whatever the store: NaN and infinities, nesting
deeper than ``MAX_NESTING``, and a surrogate pair held as two separate code points (JSON would
read it back as one character). A lone surrogate is written as its JSON escape (``\\udc80``
for U+DC80), which reads back as the same lone surrogate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from tether.errors import UsageError

MAX_NESTING = 256  # deeper event data is refused: every Python can read back what is stored
"""How deep event data may nest: deeper data is refused, so every Python can read back what is
stored."""


class JournalValueError(UsageError, ValueError):
    """Event data that JSON text cannot carry faithfully; nothing was appended."""


def _default(value: Any) -> Any:
    if type(value) is Decimal:  # the commonest case first: spend and costs, several per step
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    return repr(value)


def _canonical_encoder() -> Callable[[Any], str]:
    """The canonical encoder. It runs several times per step (call signatures, sealing), so it
    reuses one C-level encoder instead of building one per call as ``JSONEncoder.encode`` does
    (2.5x faster on a small object). It does not look for reference cycles: event data and tool
    arguments are trees (a cycle ends in RecursionError instead of ValueError)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                allow_nan=False, default=_default).encode
    encode = make(None, _default, json.encoder.encode_basestring, None, ":", ",", True, False,
                  False)
    return lambda value: "".join(encode(value, 0))


_encode = canonical_json = _canonical_encoder()
"""``value`` as canonical JSON text (sorted keys, no spaces, one text per value): what an event's
hash is taken over."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def canonical_text(data: Any) -> str:
    """``data`` as the canonical JSON text the journal hashes and the store keeps, or
    JournalValueError when that text could not give ``data`` back as it is."""
    try:
        text = _encode(data)
    except ValueError as exc:  # the encoder refuses NaN and infinities
        raise JournalValueError(f"{exc}: NaN and infinities have no JSON form; journal a "
                                "finite number or a string instead") from None
    except RecursionError:
        raise JournalValueError(_too_deep()) from None
    if text.count("[") + text.count("{") > MAX_NESTING and _deeper_than(data, MAX_NESTING):
        raise JournalValueError(_too_deep())
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:  # surrogates, which no store can keep as UTF-8
            if _PAIR.search(text):
                raise JournalValueError(
                    "a string holds a surrogate pair as two code points, which JSON reads back "
                    "as one character; join it (s.encode('utf-16', 'surrogatepass')"
                    ".decode('utf-16')) before it is journaled") from None
            text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _too_deep() -> str:
    return (f"the data is nested more than {MAX_NESTING} levels deep; flatten it or journal it "
            "as a string")


def _deeper_than(value: Any, limit: int) -> bool:
    if limit < 0:
        return True
    if isinstance(value, dict):
        return any(_deeper_than(v, limit - 1) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_deeper_than(v, limit - 1) for v in value)
    to_dict = getattr(value, "to_dict", None)
    return callable(to_dict) and _deeper_than(to_dict(), limit)

