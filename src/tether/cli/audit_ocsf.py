"""``tether audit export --format ocsf``: a store's journals as OCSF 1.8.0 records, after the fact.

Why: a SIEM that was not listening while a session ran — or an investigation that needs last
month's sessions — gets the same records the live ``SIEMSink`` writes, derived from the stored
journal by the same pure view (``tether.journal.views.ocsf``), one JSON object per line.

Decision: each exported session's hash chain is verified first; where it breaks, a Detection
Finding (class 2004) names the session, the seq and what was probably done (``journal.tamper``),
after that session's records — the records are still written, since what a tampered journal
says is evidence too. ``--pins FILE`` adds the MCP pin file's records (pins are kept in their own
file, not in the journal); ``--redact-key`` masks more keys, as ``SIEMSink(redact_keys=...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from tether.store.base import Store


def write_ocsf(store: Store, session_ids: Sequence[str], out: IO[str], *,
               redact_keys: Iterable[str] = (), pins: str | None = None,
               shape: str = "default") -> int:
    """Write the OCSF records (in ``shape``) of ``session_ids`` (and of the pin file
    ``pins``); returns how many records were written."""
    from tether.journal.erasure import vouched
    from tether.journal.tamper import diagnose
    from tether.journal.views.ocsf import record_json, redact
    from tether.journal.views.ocsf_findings import pin_events, tamper_finding
    from tether.journal.views.shapes import ocsf_records

    keys = frozenset(redact_keys)
    recorded = {info.session_id: info.events for info in store.sessions()}
    count = 0
    for sid in session_ids:
        events = store.read(sid)
        records = ocsf_records(shape, events)
        found = diagnose(sid, events, recorded=recorded.get(sid),
                         unverifiable=store.unverifiable(sid),
                         erased=vouched(events, store.read))
        if found is not None:
            near = events[min(max(found.seq, 1), len(events)) - 1] if events else None
            when = round(near.timestamp * 1000) if near is not None else 0
            records.append(tamper_finding(sid, found.seq, found.kind, found.detail, when))
        for record in records:
            out.write(record_json(redact(record, keys)) + "\n")
        count += len(records)
    if pins is not None:
        from tether.mcp.pins import JSONFilePinStore

        for pinned, pending in JSONFilePinStore(pins).entries():
            for record in pin_events(None if pinned is None else pinned.to_dict(),
                                     None if pending is None else pending.to_dict()):
                out.write(record_json(redact(record, keys)) + "\n")
                count += 1
    return count
