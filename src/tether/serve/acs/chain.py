"""The ACS session chain (§8.2): the head the Guardian publishes, as the spec computes it.

Why apart from tether's own journal chain: tether's journal is hash-chained in its own canonical
form (``tether.journal``), which an ACS peer cannot recompute. ACS fixes its own rule — each
ContextEntry hashed in RFC 8785 form without ``entry_hash`` and ``previous_hash``, followed by
the raw 32 bytes of the previous hash — so a peer that recorded the traffic can check the heads
it was shown. Decision: the Guardian keeps that chain beside the journal, writes each entry (and
its hash) into the journal's ``acs.hook`` event, and publishes the head as ``chain_hash`` in the
signed response of every content-bearing step; after a restart the head is read back from the
journal, so the chain goes on where it stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from tether.serve.acs.wire import canonical


def entry_hash(entry: Mapping[str, Any], previous: str | None) -> str:
    """§8.2: hex SHA-256 of the canonical entry (without its hashes) and the previous hash."""
    content = {k: v for k, v in entry.items() if k not in ("entry_hash", "previous_hash")}
    tail = bytes.fromhex(previous) if previous else b""
    return hashlib.sha256(canonical(content) + tail).hexdigest()


def request_hash(params: Mapping[str, Any], form: bytes = b"") -> str:
    """Hex SHA-256 of the request's params in canonical form, signature left out (ACS-Audit);
    ``form``, that form as the signature's check wrote it (``wire.forms``), if it did."""
    return hashlib.sha256(form or canonical({k: v for k, v in params.items()
                                             if k != "signature"})).hexdigest()


def next_entry(head: str | None, step: int, method: str, params: Mapping[str, Any],
               decision: str, form: bytes = b"") -> dict[str, Any]:
    """The ContextEntry of step number ``step`` after ``head``, with its ``entry_hash``
    (``form``: the params' canonical form, as ``request_hash`` takes it)."""
    entry: dict[str, Any] = {
        "entry_id": f"{params['request_id']}", "step_id": f"st-{step:06d}",
        "step_type": method, "request_hash": request_hash(params, form),
        "timestamp": params.get("timestamp"), "decision": decision}
    if head is not None:
        entry["previous_hash"] = head
    entry["entry_hash"] = entry_hash(entry, head)
    return entry
