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
what is stored. Data that JSON text cannot carry faithfully is refused at append, the same way
whatever the store: NaN and infinities, nesting deeper than ``MAX_NESTING``, and a surrogate pair
held as two separate code points (JSON would read it back as one character). A lone surrogate
is written as its ``\\udXXX`` escape, which reads back as the same lone surrogate.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from tether.errors import UsageError
from tether.journal.fingerprints import FINGERPRINT_TYPE, Fingerprints, redaction_key
from tether.journal.redaction import (
    Redactions,
    Scrubber,
    hide_arguments,
    scrub,
)
from tether.store.base import Lease, Store
from tether.types import Event
from tether.vocabulary import EventType

GENESIS = "0" * 64
MAX_NESTING = 256  # deeper event data is refused: every Python can read back what is stored

Subscriber = Callable[[Event], object]
Record = tuple[int, str, float, Mapping[str, Any]]
Pending = tuple[int, str, float, str]  # seq, type, timestamp, data as canonical JSON text


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


_quote = json.encoder.encode_basestring  # how the canonical encoder writes a string
_sha256 = hashlib.sha256


def _digest(prev_hash: str, seq: int, kind: str, session_id: str, timestamp: float,
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
    return _seal(prev_hash, session_id, pending, Redactions(list(scrubbers)) or None)[0]


def _seal(prev_hash: str, session_id: str, record: Pending,
          redactions: Redactions | None) -> tuple[Event, str]:
    """The sealed event and its data as JSON text (so a store need not encode it again).
    Redaction works on the data's values, never on the encoded text, so it cannot corrupt the
    envelope (seq, timestamp, keys) whatever the redacted value looks like."""
    seq, type, timestamp, data_json = record
    if redactions is not None and type != FINGERPRINT_TYPE:  # a digest is no value's text
        plain = json.loads(data_json)
        hide_arguments(type, plain, redactions.arguments)
        data_json = canonical_text(scrub(plain, redactions.scrubbers, redactions.values))
    digest = _digest(prev_hash, seq, type, session_id, timestamp, data_json)
    return Event.from_json(seq, type, session_id, timestamp, data_json, prev_hash,
                           digest), data_json


def verify_chain(events: Sequence[Event],
                 unverifiable: Collection[int] = frozenset()) -> int | None:
    """Return the seq of the first event whose link is broken, or None if the chain holds.
    Events whose seq is in ``unverifiable`` (``Store.unverifiable``) have only their links
    checked: their content cannot be re-hashed, which the caller must report."""
    prev = GENESIS
    for expected_seq, e in enumerate(events, start=1):
        if e.seq != expected_seq or e.prev_hash != prev or not (
                hash_holds(prev, e) or e.seq in unverifiable):
            return e.seq if e.seq == expected_seq else expected_seq
        prev = e.hash
    return None


def hash_holds(prev_hash: str, e: Event) -> bool:
    """Whether ``e.hash`` is the hash of this event. An event read with its JSON text (which a
    store wrote as sealed: canonical) is checked on that text, without decoding it; only when
    that does not match is the data decoded and encoded canonically, exactly as it always was —
    so text that differs from the canonical form only in layout still verifies, and an edit of
    the data never does."""
    text = e.json_text
    if text and e.hash == _digest(prev_hash, e.seq, e.type, e.session_id, e.timestamp, text):
        return True
    try:
        text = canonical_text(e.data)
    except ValueError:  # stored text that is not JSON at all, or not JSON tether writes: edited
        return False
    return e.hash == _digest(prev_hash, e.seq, e.type, e.session_id, e.timestamp, text)


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
        while self.bus._subscribers and self._notified < len(self):
            sealed, dropped = self._seal_all(), self._dropped
            while self._notified < dropped + len(sealed):
                event = sealed[self._notified - dropped]
                self._notified += 1
                self._notify(event)

    def flush(self, last: bool = False) -> None:
        """Publish, then write every event not yet in the store, in one transaction. With
        ``last`` (a session's end or pause), the write also lets the writer's lease lapse."""
        if last and self.lease is not None:
            self.lease = Lease(self.lease.holder, self.lease.token, 0.0)
            try:
                self.flush()
            finally:
                self.lease = None
            return
        self.publish()
        if self.store is None:
            return
        sealed, dropped = self._seal_all(), self._dropped
        if self._flushed < dropped + len(sealed):
            self.store.append(self.session_id, sealed[self._flushed - dropped:], self._json,
                              self.lease)
            self._stored(dropped + len(sealed))

    async def aflush(self, last: bool = False) -> None:
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
            self.flush()
            return
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

    def hide_all(self, text: str) -> str:
        """``text`` with every secret and every value a decision hid blanked, as a sealed event
        has them: for what goes to a party that is not the session's model (a summariser)."""
        return self._redactions.values.blank(self.hide_secrets(text))

    def _notify(self, event: Event) -> None:
        for fn in self.bus:
            try:
                fn(event)
            except Exception as exc:
                if event.type == EventType.SUBSCRIBER_ERROR:
                    continue  # never recurse on a subscriber that fails on its own error event
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
                event, data_json = _seal(prev, self.session_id, record, redactions)
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
