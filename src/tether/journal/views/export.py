"""Journal exports: events as JSON lines that carry their hashes, so they verify offline.

Why: an auditor, a SIEM or a regulator should be able to check a session's record without access
to the store — or to tether's database at all. Each line is one event exactly as stored (seq,
type, session id, timestamp, data, prev_hash, hash), and the hash chain is recomputed from those
fields alone, so ``tether audit verify --file`` needs nothing but the file.

Decision: the reader keeps the file's order and its values as written — it neither sorts lines
nor normalises numbers — because verification must see what the file holds; a line moved or a
timestamp rounded is exactly what it should catch. Each event's data is written as the exact
JSON text its hash covers. A line that is not an event at all (not JSON, a field missing or of
the wrong kind) is an unreadable file rather than a broken chain, and the error names the line.

A chain alone cannot show that its tail was cut off, so after each session's events the writer
adds a **trailer** line — ``{"trailer": {"session_id", "count", "head"}}``, HMAC-signed with
the audit key when one is set — and ``check_trailers`` reports a session with no valid trailer,
one whose events do not end where the trailer says, and one that neither ended nor paused.
With the operator's signing key, the export ends with a signed manifest of its sessions
(``journal.views.signed_export``), which the reader skips.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from tether.errors import UsageError
from tether.journal.chain import canonical_text
from tether.store.anchor_chain import audit_key
from tether.types import Event
from tether.vocabulary import EventType

FIELDS = ("seq", "type", "session_id", "timestamp", "data", "prev_hash", "hash")


class ExportFormatError(UsageError, ValueError):
    """A line of an export is not an event; the message names the line and what is wrong."""


def write_jsonl(events: Iterable[Event], out: IO[str]) -> int:
    """Write one JSON object per event, then a trailer per session; returns how many events
    were written."""
    count = 0
    last: dict[str, tuple[int, str]] = {}  # session -> (events written, last hash)
    for event in events:
        out.write(event_json(event) + "\n")
        written = last.get(event.session_id, (0, ""))[0] + 1
        last[event.session_id] = (written, event.hash)
        count += 1
    key = audit_key()
    for session_id, (written, head) in last.items():
        trailer: dict[str, Any] = {"session_id": session_id, "count": written, "head": head}
        if key is not None:
            trailer["mac"] = _trailer_mac(key, trailer)
        out.write(json.dumps({"trailer": trailer}) + "\n")
    return count


def event_json(event: Event) -> str:
    """An event as one JSON line, its data the exact text its hash covers."""
    data = event.json_text or canonical_text(event.data)
    return (f'{{"seq":{event.seq},"type":{json.dumps(event.type)},'
            f'"session_id":{json.dumps(event.session_id)},"timestamp":{event.timestamp!r},'
            f'"data":{data},"prev_hash":"{event.prev_hash}","hash":"{event.hash}"}}')


def _trailer_mac(key: bytes, trailer: Mapping[str, Any]) -> str:
    body = f"{trailer['session_id']}:{trailer['count']}:{trailer['head']}"
    return hmac.new(key, body.encode(), "sha256").hexdigest()


def read_jsonl(lines: Iterable[str], source: str = "<export>") -> dict[str, list[Event]]:
    """Events of an export grouped by session, each session in file order (trailers aside)."""
    return read_export(lines, source)[0]


def read_export(lines: Iterable[str], source: str = "<export>"
                ) -> tuple[dict[str, list[Event]], dict[str, dict[str, Any]]]:
    """An export's events grouped by session, and its trailers by session."""
    sessions: dict[str, list[Event]] = {}
    trailers: dict[str, dict[str, Any]] = {}
    for item in iter_jsonl(lines, source):
        if isinstance(item, Event):
            sessions.setdefault(item.session_id, []).append(item)
        else:
            trailers[str(item.get("session_id"))] = item
    return sessions, trailers


def iter_jsonl(lines: Iterable[str], source: str = "<export>"
               ) -> Iterator[Event | dict[str, Any]]:
    """Each line as an Event, or a trailer's content."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExportFormatError(f"{where}: not JSON ({exc.msg}); an export has one JSON "
                                    "object per line, as `tether audit export` writes") from None
        if isinstance(obj, dict) and set(obj) == {"trailer"} and isinstance(obj["trailer"],
                                                                              dict):
            yield obj["trailer"]
        elif isinstance(obj, dict) and set(obj) == {"signed"}:
            continue  # the signed manifest (journal.views.signed_export), read on its own
        else:
            yield event_from_json(obj, where)


def check_trailer(session_id: str, events: Sequence[Event],
                  trailer: Mapping[str, Any] | None, key: bytes | None) -> str | None:
    """Why an exported session cannot be shown whole, or None when it can."""
    if trailer is None:
        return ("no trailer: the file may have been cut after its last event (or written by a "
                "tether that wrote none); export the session again")
    count, head = trailer.get("count"), trailer.get("head")
    if count != len(events) or not events or head != events[-1].hash:
        return (f"the trailer says {count} events ending in {str(head)[:16]}, and the file has "
                f"{len(events)}: events were cut off or added")
    if key is not None and not hmac.compare_digest(str(trailer.get("mac")),
                                                   _trailer_mac(key, trailer)):
        return "the trailer is not signed by the audit key: it was written without it, or forged"
    if events[-1].type not in (EventType.SESSION_END, EventType.SESSION_PAUSED):
        return (f"the session neither ended nor paused in this file (its last event is "
                f"{events[-1].type}): it was exported while running, or cut")
    return None


def event_from_json(obj: object, where: str = "<event>") -> Event:
    if not isinstance(obj, dict):
        raise ExportFormatError(f"{where}: expected a JSON object with {', '.join(FIELDS)}")
    missing = [f for f in FIELDS if f not in obj]
    if missing:
        raise ExportFormatError(f"{where}: missing {', '.join(missing)}; every line needs "
                                f"{', '.join(FIELDS)}")
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "seq": (int, "an integer"), "type": (str, "a string"), "session_id": (str, "a string"),
        "timestamp": ((int, float), "a number"), "data": (dict, "an object"),
        "prev_hash": (str, "a string"), "hash": (str, "a string"),
    }
    for name, (kinds, what) in checks.items():
        value = obj[name]
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise ExportFormatError(f"{where}: {name} must be {what}, got {value!r:.40}")
    return Event(obj["seq"], obj["type"], obj["session_id"], obj["timestamp"], obj["data"],
                 obj["prev_hash"], obj["hash"])
