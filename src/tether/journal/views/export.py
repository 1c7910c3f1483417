"""Journal exports: events as JSON lines that carry their hashes, so they verify offline.

Why: an auditor, a SIEM or a regulator should be able to check a session's record without access
to the store — or to tether's database at all. Each line is one event exactly as stored (seq,
type, session id, timestamp, data, prev_hash, hash), and the hash chain is recomputed from those
fields alone, so ``tether audit verify --file`` needs nothing but the file.

Decision: the reader keeps the file's order and its values as written — it neither sorts lines
nor normalises numbers — because verification must see what the file holds; a line moved or a
timestamp rounded is exactly what it should catch. A line that is not an event at all (not
JSON, a field missing or of the wrong kind) is an unreadable file rather than a broken chain,
and the error names the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

from tether.types import Event

FIELDS = ("seq", "type", "session_id", "timestamp", "data", "prev_hash", "hash")


class ExportFormatError(ValueError):
    """A line of an export is not an event; the message names the line and what is wrong."""


def event_to_json(event: Event) -> dict[str, Any]:
    return {"seq": event.seq, "type": event.type, "session_id": event.session_id,
            "timestamp": event.timestamp, "data": event.data, "prev_hash": event.prev_hash,
            "hash": event.hash}


def write_jsonl(events: Iterable[Event], out: IO[str]) -> int:
    """Write one JSON object per event; returns how many were written."""
    count = 0
    for event in events:
        out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
        count += 1
    return count


def read_jsonl(lines: Iterable[str], source: str = "<export>") -> dict[str, list[Event]]:
    """Events of an export grouped by session, each session in file order."""
    sessions: dict[str, list[Event]] = {}
    for event in iter_jsonl(lines, source):
        sessions.setdefault(event.session_id, []).append(event)
    return sessions


def iter_jsonl(lines: Iterable[str], source: str = "<export>") -> Iterator[Event]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExportFormatError(f"{where}: not JSON ({exc.msg}); an export has one JSON "
                                    "object per line, as `tether audit export` writes") from None
        yield event_from_json(obj, where)


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
