"""An event's hash, and sealing: how an appended record becomes a link of the hash chain.

Why apart from the journal object (``journal.chain``): a hash is a pure function of the
previous hash and the event's canonical text, so it is computed the same way by the journal
that seals, by the checks of a stored chain (``journal.verify``, ``journal.tamper``) and by
anyone re-deriving one (``journal.erasure``, a test); none of them needs a journal to do it.

Decision: an event's hash is SHA-256 of the previous hash followed by ``[seq, type,
session_id, timestamp, data]`` in canonical JSON (``journal.canonical``), built around the data
text already encoded, so sealing encodes the data once. Redaction happens here, on the data's
values before hashing, never on the encoded text, so it cannot corrupt the envelope.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from tether.journal.canonical import canonical_json as _encode
from tether.journal.canonical import canonical_text
from tether.journal.fingerprints import FINGERPRINT_TYPE
from tether.journal.redaction import Redactions, Scrubber, hide_arguments, scrub
from tether.types import Event

GENESIS = "0" * 64
"""The previous hash of a session's first event."""

Record = tuple[int, str, float, Mapping[str, Any]]
"""An event not yet sealed: ``(seq, type, timestamp, data)``."""
Pending = tuple[int, str, float, str]  # seq, type, timestamp, data as canonical JSON text
"""An event not yet sealed, its data encoded: ``(seq, type, timestamp, data as canonical JSON
text)``."""

_quote = json.encoder.encode_basestring  # how the canonical encoder writes a string
_sha256 = hashlib.sha256


def event_hash(prev_hash: str, seq: int, kind: str, session_id: str, timestamp: float,
               data_json: str) -> str:
    """An event's hash: SHA-256 of the previous hash followed by ``[seq, type, session_id,
    timestamp, data]`` in canonical JSON, built around the data already encoded (so sealing
    encodes the data once)."""
    if type(seq) is int and type(timestamp) is float and math.isfinite(timestamp):
        body = f"{prev_hash}[{seq},{_quote(kind)},{_quote(session_id)},{timestamp!r},{data_json}]"
    else:
        body = f"{prev_hash}{_encode([seq, kind, session_id, timestamp])[:-1]},{data_json}]"
    return _sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def seal(prev_hash: str, session_id: str, record: Record,
         scrubbers: Sequence[Scrubber] = ()) -> Event:
    """Turn a record into a chained Event with plain-JSON data, every scrubber applied to each
    string in the event's data (so a redacted value is blanked wherever it appears)."""
    seq, type, timestamp, data = record
    pending = (seq, type, timestamp, canonical_text(data))
    return seal_text(prev_hash, session_id, pending, Redactions(list(scrubbers)) or None)[0]


def seal_text(prev_hash: str, session_id: str, record: Pending,
              redactions: Redactions | None) -> tuple[Event, str]:
    """The sealed event and its data as JSON text (so a store need not encode it again).
    Redaction works on the data's values, never on the encoded text, so it cannot corrupt the
    envelope (seq, timestamp, keys) whatever the redacted value looks like."""
    seq, type, timestamp, data_json = record
    if redactions is not None and type != FINGERPRINT_TYPE:  # a digest is no value's text
        plain = json.loads(data_json)
        hide_arguments(type, plain, redactions.arguments)
        data_json = canonical_text(scrub(plain, redactions.scrubbers, redactions.values))
    digest = event_hash(prev_hash, seq, type, session_id, timestamp, data_json)
    return Event.from_json(seq, type, session_id, timestamp, data_json, prev_hash,
                           digest), data_json
