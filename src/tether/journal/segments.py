"""Linked segments: one long-lived journal (a gateway's) kept as a chain of sessions.

Why: a gateway lives as long as its client, for weeks, and one session's journal that grows
without end is slow to read, verify and export. So a gateway can roll its journal: it ends the
current session, naming the next (``next`` in its ``session.end``), and starts the next with a
link in its ``session.start`` (``segment``): the segment's number and the previous segment's
id, event count and head hash. The link is event data, so each segment's own hash chain covers
it, and each segment still verifies on its own from the genesis hash.

Decision: this module only reads and reports, as ``tamper`` and ``anchors`` do. Given the
stored sessions, every link is checked both ways: the previous segment must be stored, end
with the linked head after the linked number of events, carry the number before, and name this
segment as its successor; a segment that names a successor must have one that links back. So a
deleted segment (first, middle or last), two segments swapped, and a link edited — even with the
segment's own chain recomputed — are each reported. Someone who rewrites every later segment and
every hash is stopped by the anchor chain signed with the audit key, not here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.journal.anchors import Finding
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.types import Event

SEGMENT = "segment"  # the key of the link in a segment's session.start
NEXT = "next"  # the key naming the next segment in a rolled segment's session.end

Read = Callable[[str], Sequence["Event"]]


def link_to(number: int, previous: Journal | None,
            spent_before: Mapping[str, Any]) -> dict[str, Any]:
    """The ``segment`` entry of the ``number``-th segment's session.start, after ``previous``
    (whose events are all stored): its id, count and head, and the gateway's spend so far."""
    link: dict[str, Any] = {"number": number, "spent_before": dict(spent_before)}
    if previous is not None:
        link["previous"] = {"session_id": previous.session_id, "events": len(previous),
                            "head": previous.head}
    return link


def check_segments(sessions: Mapping[str, Sequence[Event]], read: Read | None = None, *,
                   pruned: Collection[str] = (), selection: bool = False) -> list[Finding]:
    """Every broken link between the segments among ``sessions`` (id -> stored events) and
    those they link to; ``read`` fetches a linked session that is not among them (none:
    only ``sessions`` exist). A missing segment is no finding when it is in ``pruned`` (the
    store's prune anchors name it), nor, with ``selection`` (an export: a selection of the
    sessions), when it lies beyond the first or last segment given — only a gap between two
    segments given is."""

    def events_of(session_id: str) -> Sequence[Event]:
        found = sessions.get(session_id)
        if found is None and read is not None:
            found = read(session_id)
        return found or ()

    named_next = {_next(events) for events in sessions.values()}
    named_previous = {_previous_id(events) for events in sessions.values()}
    findings: list[Finding] = []
    for sid, events in sessions.items():
        link = _link(events)
        if link is not None:
            pid = _previous_id(events)
            excused = pid in pruned or (selection and pid not in named_next)
            findings.extend(_backward(sid, link, events_of, excused))
        following = _next(events)
        if following is not None and not (selection and following not in named_previous
                                          and following not in sessions):
            findings.extend(_forward(sid, following, events_of(following)))
    return findings


def _previous_id(events: Sequence[Event]) -> str | None:
    link = _link(events)
    previous = None if link is None else link.get("previous")
    return str(previous.get("session_id")) if isinstance(previous, Mapping) else None


def _forward(sid: str, following: str, after: Sequence[Event]) -> list[Finding]:
    if not after:
        return [Finding("segment", sid, f"it rolled into segment session {following}, which "
                        "is not stored: that segment was deleted (or the process stopped "
                        "during the roll)")]
    link = _link(after)
    previous = None if link is None else link.get("previous")
    if not isinstance(previous, Mapping) or previous.get("session_id") != sid:
        return [Finding("segment", sid, f"its next segment, session {following}, does not "
                        "link back to it: the chain was relinked or restarted there")]
    return []


def _backward(sid: str, link: Mapping[str, Any], events_of: Read,
              excused: bool) -> list[Finding]:
    """The link to the previous segment; ``excused``: it may be missing (pruned, or beyond
    a selection)."""
    number = link.get("number")
    previous = link.get("previous")
    if not isinstance(number, int) or number < 1 or (number == 1) != (previous is None):
        return [Finding("segment", sid, "its segment link is malformed: it was edited")]
    if not isinstance(previous, Mapping):
        return []
    pid = str(previous.get("session_id"))
    before = events_of(pid)
    if not before and excused:
        return []
    if not before:
        return [Finding("segment", sid, f"segment {number} continues session {pid}, which is "
                        "not stored: the segment before it was deleted")]
    problems = []
    if len(before) != previous.get("events") or before[-1].hash != previous.get("head"):
        problems.append(f"session {pid} no longer ends with the head this segment links to "
                        f"(seq {previous.get('events')}): it was cut, edited or replaced, or "
                        "this link was edited")
    earlier = _link(before)
    if earlier is None or earlier.get("number") != number - 1:
        problems.append(f"session {pid} is not segment {number - 1}: segments were reordered or "
                        "this link was edited")
    if _next(before) != sid:
        problems.append(f"session {pid} does not name this session as its next segment: "
                        "segments were reordered or relinked")
    return [Finding("segment", sid, f"segment {number}: {p}") for p in problems]


def _link(events: Sequence[Event]) -> Mapping[str, Any] | None:
    if not events or events[0].type != EventType.SESSION_START:
        return None
    link = events[0].data.get(SEGMENT)
    return link if isinstance(link, Mapping) else None


def _next(events: Sequence[Event]) -> str | None:
    if not events or events[-1].type != EventType.SESSION_END:
        return None
    following = events[-1].data.get(NEXT)
    return following if isinstance(following, str) else None


def is_segment(events: Sequence[Event]) -> bool:
    """Whether ``events`` are a segment of a rolled journal."""
    return _link(events) is not None
