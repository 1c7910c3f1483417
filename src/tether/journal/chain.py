"""The journal: an append-only, hash-chained sequence of a session's events, and its subscribers.

Decision: every event carries the hash of the previous one, computed over a canonical JSON form
(sorted keys, no whitespace, Decimals as strings, tether records by their ``to_dict``), so any
edit, deletion or reordering is detectable by recomputing the chain.

An event's content is fixed when it is appended: its data is encoded to canonical JSON text
there and then, so nothing done to the appended objects afterwards (a tool editing its own
arguments, a strategy holding the model's response) can change what the journal says. Hashing
is deferred: the chain is *sealed* (redactions applied, hashed) when someone reads it — replay,
verify, a checkpoint, a subscriber — or when a durable store writes it; a sealed event decodes its
text only if its data is read. The hashes are a pure function of the appended texts, so sealing
later yields exactly the chain sealing at once would.

The text is the one the store keeps and the one read back, on every store, so what is hashed is
what is stored.

Each of those concerns is a module of its own: the canonical text and what it refuses
(``journal.canonical``), an event's hash and sealing (``journal.hashing``), checking a chain
(``journal.verify``); this one is the journal object that appends, seals, publishes and
flushes. Being public (docs/reference/surface.md), it still exports their names (``__all__``):
``from tether.journal.chain import verify_chain`` works as it always has.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from tether.journal.canonical import (
    MAX_NESTING,
    JournalValueError,
    canonical_json,
    canonical_text,
)
from tether.journal.fingerprints import FINGERPRINT_TYPE, Fingerprints, redaction_key
from tether.journal.hashing import GENESIS, Pending, Record, seal, seal_text
from tether.journal.redaction import Redactions, Scrubber, scrub
from tether.journal.verify import hash_holds, verify_chain
from tether.store.base import Lease, Store
from tether.types import Event
from tether.vocabulary import EventType

__all__ = [
    "GENESIS",
    "MAX_NESTING",
    "EventBus",
    "Journal",
    "JournalValueError",
    "Pending",
    "Record",
    "Subscriber",
    "canonical_json",
    "canonical_text",
    "hash_holds",
    "seal",
    "verify_chain",
]

Subscriber = Callable[[Event], object]
"""What ``EventBus.subscribe`` takes: a callable told of each appended event."""


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


def _name(fn: Subscriber) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _readable(describe: Callable[[Any], str], thing: Any) -> str:
    """``describe(thing)``, or what can be said of it when its own text raises (a subscriber's
    failure must not fail in turn while it is being recorded)."""
    try:
        return describe(thing)
    except Exception:
        return f"{type(thing).__name__} (its text could not be read)"


class Journal:
    """The journal of one session: appended in memory, sealed on read, written to a store (if
    any) at each ``flush`` — the runtime flushes before tools run and before each model call, so a
    step's events reach the store in one transaction and a decision is durable before its effect.
    """

    __slots__ = ("_dropped", "_fingerprints", "_flushed", "_json", "_notified", "_on_append",
                 "_pending", "_redactions", "_scrubbing", "_sealed", "_secrets", "bus", "lease",
                 "session_id", "store")

    def __init__(self, session_id: str,
                 on_append: Callable[[str, Mapping[str, Any]], None] | None = None, *,
                 store: Store | None = None, history: Sequence[Event] = ()) -> None:
        self.session_id = session_id
        self.store = store
        self.lease: Lease | None = None  # the writer's hold on the session, checked per flush
        self._sealed: list[Event] = list(history)  # events already sealed into the chain
        self._dropped = 0  # sealed events no longer in memory (``forget_stored``), before those
        self._flushed = len(self._sealed)  # how many of them the store holds
        self._pending: list[Pending] = []  # appended, not yet sealed
        self._json: list[str] = []  # data JSON of sealed events not yet in the store
        self._notified = len(self._sealed)  # how many events subscribers have been told of
        self._redactions = Redactions()
        self._secrets: list[Scrubber] = []  # scrubbers of secrets: for live text too
        self._scrubbing: set[str] = set()  # the keys of those scrubbers (scrub_with)
        self._fingerprints: Fingerprints | None = None  # of hidden values (redact), made lazily
        self._on_append = on_append
        self.bus = EventBus()

    def append(self, type: EventType, data: Mapping[str, Any]) -> int:
        """Append an event; returns its seq. Its content is fixed here: the data is encoded now,
        and nothing done to it later changes the journal. JournalValueError (nothing appended)
        for data JSON cannot carry faithfully. ``type`` is a member of the vocabulary (so mypy
        refuses a misspelt one); the event holds it as the plain string it equals, as a store
        gives it back."""
        text = canonical_text(data)
        seq = self._dropped + len(self._sealed) + len(self._pending) + 1  # len(self), inlined
        self._pending.append((seq, str(type), time.time(), text))
        if self._on_append is not None:
            self._on_append(type, data)
        return seq

    def publish(self) -> None:
        """Seal what is pending and tell subscribers of the events they have not seen. Called at
        step points (before a model call, before tools run, at the end), so every redaction a
        step's decisions ask for applies to all of that step's events before anyone sees them."""
        subscribers = self.bus._subscribers
        # (inlined: this runs for every event of a run with telemetry, on the run's thread)
        while subscribers and self._notified < self._dropped + len(self._sealed) + len(
                self._pending):
            sealed, dropped = self._seal_all(), self._dropped
            end = dropped + len(sealed)
            while self._notified < end:
                event = sealed[self._notified - dropped]
                self._notified += 1
                for fn in tuple(subscribers):  # (one may unsubscribe while told)
                    try:
                        fn(event)
                    except Exception as exc:
                        self._failed(fn, event, exc)

    def flush(self, last: bool = False, *, stored_first: bool = False) -> None:
        """Publish, then write every event not yet in the store, in one transaction. With
        ``last`` (a session's end or pause), the write also lets the writer's lease lapse.
        ``stored_first``: subscribers are told only once the store holds the events (a write
        the store may refuse: a side effect's start under a halt, ``tether.store.halts``)."""
        if last and self.lease is not None:
            self.lease = Lease(self.lease.holder, self.lease.token, 0.0)
            try:
                self.flush()
            finally:
                self.lease = None
            return
        if not stored_first:
            self.publish()
        if self.store is not None:
            sealed, dropped = self._seal_all(), self._dropped
            if self._flushed < dropped + len(sealed):
                self.store.append(self.session_id, sealed[self._flushed - dropped:], self._json,
                                  self.lease)
                self._stored(dropped + len(sealed))
        if stored_first:
            self.publish()

    async def aflush(self, last: bool = False, *, stored_first: bool = False) -> None:
        """``flush`` for the async runtime: a store that commits over a network
        (``append_async``: PostgreSQL's group commit on the loop) is awaited, so one session's
        commit never holds the others'. It completes before it returns, so a step is durable
        before what follows it, and a session's writes stay in order (its coroutine awaits
        each). ``last`` as for ``flush``: the write lets the writer's lease lapse."""
        if last and self.lease is not None:
            self.lease = Lease(self.lease.holder, self.lease.token, 0.0)
            try:
                await self.aflush()
            finally:
                self.lease = None
            return
        store = self.store
        append_async = getattr(store, "append_async", None)
        if append_async is None:
            self.flush(stored_first=stored_first)
            return
        if not stored_first:
            self.publish()
        sealed, dropped = self._seal_all(), self._dropped
        count = dropped + len(sealed)
        if self._flushed < count:
            write = asyncio.ensure_future(append_async(
                self.session_id, sealed[self._flushed - dropped:], self._json, self.lease))
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:  # the commit goes on: wait for it, so the journal
                await asyncio.wait({write})  # knows what the store holds
                if not write.cancelled() and write.exception() is None:
                    self._stored(count)
                raise
            self._stored(count)
        if stored_first:
            self.publish()

    def retract_unstored(self, type: EventType) -> None:
        """Drop the journal's last event if it is a ``type`` the store does not hold (the store
        refused the append that carried it, and wrote nothing of it: a side effect's start
        under a halt). The events before it stay, to be written with the next flush."""
        sealed = self._seal_all()
        if sealed and len(self) > self._flushed and sealed[-1].type == type:
            sealed.pop()
            if self._json:
                self._json.pop()
            self._notified = min(self._notified, len(self))

    def _stored(self, count: int) -> None:
        self._flushed = count
        self._json = []

    def redact(self, value: str) -> None:
        """Never let ``value`` (a masked or hidden field, as text) reach a sealed event: it is
        written ``[masked]`` in every event sealed from now on — the whole current step
        included — whatever its length (``tether.journal.redaction`` says how a short one is
        found). With a store, the value's keyed fingerprint is journaled too (never its text:
        ``tether.journal.fingerprints``), so a session loaded from it in another process keeps
        blanking the value (``recall``)."""
        self._redactions.values.add(value)
        if self.store is not None and value:
            entry = self._keyed().remember(value)
            if entry is not None:
                self.append(FINGERPRINT_TYPE, entry)

    def _keyed(self) -> Fingerprints:
        if self._fingerprints is None:
            self._fingerprints = Fingerprints(redaction_key())
        return self._fingerprints

    def recall(self, events: Sequence[Event]) -> None:
        """Blank again, in every event sealed from now on, the values ``events`` (this
        session's stored journal) hid, known by their fingerprints; KeyMismatch (nothing
        recalled) when they were made under another redaction key than this process has."""
        journaled = [e.data for e in events if e.type == FINGERPRINT_TYPE]
        if not journaled:
            return
        keyed = self._keyed()
        for data in journaled:
            keyed.recall(data)
        self._redactions.values.known = keyed

    def hide_argument(self, call_id: str, name: str) -> None:
        """Keep argument ``name`` of call ``call_id`` out of the journal, whatever its type."""
        self._redactions.arguments.setdefault(call_id, set()).add(name)

    def scrub_with(self, scrubber: Scrubber, key: str | None = None) -> None:
        """Apply ``scrubber`` to every string of every event sealed from now on (e.g. a
        credential token's ``redact``, which knows every encoded form of its secret), and
        through ``hide_secrets`` to the text the runtime records: a secret is then kept out of
        what the model is sent and the trajectory, whichever tool or turn it arrives by.
        ``key`` names what it hides (a token's ``scrubs``): a scrubber whose key the journal
        has already is not added again, so a secret used on every call costs one scrubber."""
        if key is not None:
            if key in self._scrubbing:
                return
            self._scrubbing.add(key)
        self._redactions.scrubbers.append(scrubber)
        self._secrets.append(scrubber)

    def hide_secrets(self, text: str) -> str:
        """``text`` with every secret registered by ``scrub_with`` blanked."""
        for one in self._secrets:
            text = one(text)
        return text

    def as_sealed(self, value: Any, key: str = "") -> Any:
        """``value`` as an event sealed now would hold it under ``key``: every secret and every
        value a decision hid blanked. For a copy kept beside the journal that people read (an
        approval request's quote of its call), so it never shows more than the journal does."""
        return scrub(value, self._redactions.scrubbers, self._redactions.values, key,
                     key == "arguments")

    def hide_all(self, text: str) -> str:
        """``text`` with every secret and every value a decision hid blanked, as a sealed event
        has them: for what goes to a party that is not the session's model (a summariser)."""
        return self._redactions.values.blank(self.hide_secrets(text))

    def _failed(self, fn: Subscriber, event: Event, exc: Exception) -> None:
        """Journal that subscriber ``fn`` raised on ``event`` (never for its own error event:
        a subscriber that fails on those would recurse)."""
        if event.type != EventType.SUBSCRIBER_ERROR:
            self.append(EventType.SUBSCRIBER_ERROR, {"subscriber": _readable(_name, fn),
                                                     "event_seq": event.seq,
                                                     "error": _readable(_failure, exc)})

    def forget_stored(self) -> None:
        """Let go of what a long-lived session (a gateway) no longer needs in memory: the
        sealed events the store holds, but the chain's head (``events()`` reads them back from
        the store; a subscriber added later is told of events from then on), and the arguments
        hidden for calls whose events are all sealed. Call it between calls, after a flush."""
        if self.store is None or self._pending:
            return
        self._redactions.arguments.clear()
        cut = self._flushed - 1 - self._dropped  # sealed events held by the store, but the head
        if not self.bus:
            self._notified = max(self._notified, self._flushed)
        cut = min(cut, self._notified - self._dropped)
        if cut > 0:
            del self._sealed[:cut]
            self._dropped += cut

    def inherit_redactions(self, earlier: Journal) -> None:
        """Keep out of this journal what ``earlier`` kept out of its own: the next segment of a
        gateway's journal redacts its secrets and masked values as the last one did."""
        self._redactions.scrubbers.extend(earlier._redactions.scrubbers)
        self._redactions.values = earlier._redactions.values  # the same values, still hidden
        self._fingerprints = earlier._fingerprints
        self._secrets.extend(earlier._secrets)
        self._scrubbing |= earlier._scrubbing

    def events(self) -> list[Event]:
        """All events, sealed into the hash chain."""
        sealed = self._seal_all()
        if not self._dropped or self.store is None:
            return list(sealed)
        return [*self.store.read(self.session_id)[:self._dropped], *sealed]

    def _seal_all(self) -> list[Event]:
        sealed = self._sealed
        if self._pending:
            prev = sealed[-1].hash if sealed else GENESIS
            keep_json = self.store is not None
            redactions = self._redactions or None
            for record in self._pending:
                event, data_json = seal_text(prev, self.session_id, record, redactions)
                sealed.append(event)
                if keep_json:
                    self._json.append(data_json)
                prev = event.hash
            self._pending = []
        return sealed

    @property
    def flushed(self) -> int:
        """How many of the session's events the store holds (as far as this journal knows)."""
        return self._flushed

    @property
    def head(self) -> str:
        events = self._seal_all()
        return events[-1].hash if events else GENESIS

    def __len__(self) -> int:
        return self._dropped + len(self._sealed) + len(self._pending)

    def verify(self) -> int | None:
        return verify_chain(self.events())
