"""The journal: an append-only, hash-chained sequence of a session's events, and its subscribers.

Decision: every event carries the hash of the previous one, computed over a canonical JSON form
(sorted keys, no whitespace, Decimals as strings), so any edit, deletion or reordering is
detectable by recomputing the chain. The journal is the truth about a session; live state is a
projection updated by the same events (see ``state.py``). Subscribers are told of each event
after it is appended; one that raises is recorded as an event and never breaks the run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from tether.types import Event

GENESIS = "0" * 64

Subscriber = Callable[[Event], object]


def _default(value: Any) -> Any:
    if isinstance(value, Decimal | set | frozenset):
        return str(value) if isinstance(value, Decimal) else sorted(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return repr(value)


_encode = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default
).encode


def canonical_json(value: Any) -> str:
    return _encode(value)


def event_hash(prev_hash: str, seq: int, type: str, session_id: str, timestamp: float,
               data: Mapping[str, Any]) -> str:
    body = _encode([seq, type, session_id, timestamp, data])
    return hashlib.sha256(f"{prev_hash}{body}".encode()).hexdigest()


def verify_chain(events: list[Event]) -> int | None:
    """Return the seq of the first event whose link is broken, or None if the chain holds."""
    prev = GENESIS
    for expected_seq, event in enumerate(events, start=1):
        if event.seq != expected_seq or event.prev_hash != prev or event.hash != event_hash(
            event.prev_hash, event.seq, event.type, event.session_id, event.timestamp, event.data
        ):
            return event.seq
        prev = event.hash
    return None


class EventBus:
    """Fan-out of appended events to subscribers; see ``Journal``."""

    __slots__ = ("_subscribers",)

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn(event)`` after each append; returns a function that unsubscribes."""
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def __bool__(self) -> bool:
        return bool(self._subscribers)

    def __iter__(self) -> Iterator[Subscriber]:
        return iter(tuple(self._subscribers))


class Journal:
    """An in-memory, hash-chained journal of one session."""

    __slots__ = ("_events", "_head", "_on_append", "bus", "session_id")

    def __init__(self, session_id: str, on_append: Callable[[Event], None] | None = None) -> None:
        self.session_id = session_id
        self._events: list[Event] = []
        self._head = GENESIS
        self._on_append = on_append
        self.bus = EventBus()

    def append(self, type: str, data: Mapping[str, Any]) -> Event:
        seq = len(self._events) + 1
        ts = time.time()
        digest = event_hash(self._head, seq, type, self.session_id, ts, data)
        event = Event(seq, type, self.session_id, ts, data, self._head, digest)
        self._events.append(event)
        self._head = digest
        if self._on_append is not None:
            self._on_append(event)
        if self.bus:
            self._notify(event)
        return event

    def _notify(self, event: Event) -> None:
        for fn in self.bus:
            try:
                fn(event)
            except Exception as exc:
                if event.type == "subscriber.error":
                    continue  # never recurse on a subscriber that fails on its own error event
                name = getattr(fn, "__qualname__", repr(fn))
                self.append("subscriber.error", {"subscriber": name, "event_seq": event.seq,
                                                 "error": f"{type(exc).__name__}: {exc}"})

    @property
    def head(self) -> str:
        return self._head

    def __len__(self) -> int:
        return len(self._events)

    def events(self) -> list[Event]:
        return list(self._events)

    def verify(self) -> int | None:
        return verify_chain(self._events)
