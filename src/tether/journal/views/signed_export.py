"""An export's signed manifest: which sessions it holds, each with its event count and head.

Why: an export's trailers (``journal.views.export``) show a cut tail only if nobody rewrote the
trailer too, and with the HMAC only to whoever holds the shared key. Signed with the operator's
Ed25519 key, one last line lets anyone holding the public key check, offline and with no secret,
that no session's tail was cut, no session removed and none added.

Decision: the manifest is a C2SP signed note (``tether.journal.note``) on the export's last line,
``{"signed": "<note>"}``; its text is ``tether-export/v1``, the signing key's name, then one line
per session, ``<JSON session id> <count> <head hash>``, in the order written. It is made when the
export is written, by whoever holds the key then: it vouches for what the store held at export
time, so a store tampered before the export is the store verify's business, not the file's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from tether.journal.note import NoteInvalid, Signer, Verifier, open_note
from tether.types import Event

HEADER = "tether-export/v1"


def manifest_line(signer: Signer, sessions: Sequence[tuple[str, int, str]]) -> str:
    """The manifest line for ``sessions`` ((id, events written, head hash))."""
    text = f"{HEADER}\n{signer.name}\n" + "".join(
        f"{json.dumps(sid)} {count} {head}\n" for sid, count, head in sessions)
    return json.dumps({"signed": f"{text}\n{signer.sign(text)}"}) + "\n"


def find_manifest(lines: Iterable[str]) -> str | None:
    """The signed note of an export's manifest line, if it has one."""
    found = None
    for line in lines:
        if line.startswith('{"signed":'):
            obj = json.loads(line)
            if isinstance(obj, dict) and set(obj) == {"signed"} and isinstance(obj["signed"],
                                                                                 str):
                found = obj["signed"]
    return found


def check_manifest(note: str | None, key: Verifier, sessions: Mapping[str, Sequence[Event]],
                   only: str | None) -> dict[str, str]:
    """Per session (``""``: the file as a whole), why the manifest does not vouch for it."""
    if note is None:
        return {"": f"no manifest signed by {key.name}: the file was written without the key, "
                "or its last line was cut off"}
    try:
        text, _ = open_note(note, [key])
        listed = _parse(text, key)
    except NoteInvalid as exc:
        return {"": f"the manifest: {exc}"}
    problems: dict[str, str] = {}
    for sid, events in sessions.items():
        if sid not in listed:
            problems[sid] = "not in the signed manifest: it was added to the file"
            continue
        count, head = listed[sid]
        if count != len(events) or not events or events[-1].hash != head:
            problems[sid] = (f"the signed manifest says {count} events ending in {head[:16]}, "
                             f"and the file has {len(events)}: events were cut off or added")
    for sid in listed:
        if sid not in sessions and (only is None or sid == only):
            problems[sid] = "in the signed manifest and not in the file: it was removed"
    return problems


def _parse(text: str, key: Verifier) -> dict[str, tuple[int, str]]:
    lines = text.splitlines()
    if lines[:2] != [HEADER, key.name]:
        raise NoteInvalid(f"not a {HEADER} manifest of {key.name}")
    listed = {}
    for line in lines[2:]:
        try:
            sid_text, count, head = line.rsplit(" ", 2)
            listed[str(json.loads(sid_text))] = (int(count), head)
        except ValueError:
            raise NoteInvalid(f"a manifest line is malformed: {line[:60]!r}") from None
    return listed
