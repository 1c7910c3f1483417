"""Append-only logs, and snapshots of them taken in constant time.

Why: a session's history is handed out whole at every step — the conversation in each model
request, the side effects made so far in each policy decision's context — and copying it into a
fresh tuple each time made a step cost grow with the session's length (at 10,000 steps, 20,000
messages copied and freed per step: 3.8 times a step at 100 in wall time, issue 50). A snapshot
here is the log, a start and a stop; since the log is only ever appended to, what a snapshot
shows never changes after it was taken. A rewrite (a compaction replacing old turns, a side
effect taken back) makes a new log; the snapshots of the old one still show what they showed.

The same property lets a model that answers from its position in the conversation (the
``ScriptedModel``) know in constant time that a request continues the last one it saw: both are
snapshots of the same log from the same start, the later one no shorter, so only the messages
between the two stops are new. Internal: the public types are ``Sequence[...]``
(``ModelRequest.messages``, ``Context.effects``); this module is how the runtime fills them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, NoReturn, SupportsIndex, TypeVar, overload

from tether.errors import WrongType

T = TypeVar("T")


def _append_only() -> NoReturn:
    raise WrongType("this log is append-only: its snapshots (requests sent, decisions' contexts) "
                    "must keep showing what they showed; build a new log to rewrite it")


class AppendOnlyLog(list[T]):
    """A list that may only grow at its end (``append``, ``extend``, ``+=``); any other change
    raises ``WrongType`` (a ``TypeError``, as a tuple's would). Reads are a list's."""

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        _append_only()

    def __delitem__(self, index: Any) -> NoReturn:
        _append_only()

    def __imul__(self, times: Any) -> NoReturn:  # type: ignore[misc]
        _append_only()

    def insert(self, index: Any, value: Any) -> NoReturn:
        _append_only()

    def pop(self, index: Any = -1) -> NoReturn:
        _append_only()

    def remove(self, value: Any) -> NoReturn:
        _append_only()

    def clear(self) -> NoReturn:
        _append_only()

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        _append_only()

    def reverse(self) -> NoReturn:
        _append_only()

    def snapshot(self, start: int = 0) -> Snapshot[T]:
        """The log as it is now, from ``start``, in constant time."""
        return Snapshot(self, start, len(self))


class Snapshot(Sequence[T]):
    """``source[start:stop]`` of an ``AppendOnlyLog``, fixed when taken: an immutable sequence
    that compares, hashes, adds and slices as the tuple of its items would."""

    __slots__ = ("source", "start", "stop")

    def __init__(self, source: AppendOnlyLog[T], start: int, stop: int) -> None:
        self.source = source  # never changed where it shows
        self.start = start
        self.stop = stop

    def __len__(self) -> int:
        return self.stop - self.start

    @overload
    def __getitem__(self, index: SupportsIndex) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self.source[self.start:self.stop][index])
        at = index.__index__()
        length = self.stop - self.start
        if at < 0:
            at += length
        if not 0 <= at < length:  # (the sequence protocol: iteration and index stop on it)
            raise IndexError("snapshot index out of range")
        return self.source[self.start + at]

    def __iter__(self) -> Iterator[T]:
        return islice(self.source, self.start, self.stop)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self.source[self.start:self.stop])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Snapshot):
            if other.source is self.source and other.start == self.start:
                return other.stop == self.stop
            return tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Iterable[T]) -> tuple[T, ...]:
        if not isinstance(other, tuple | Snapshot):
            return NotImplemented
        return (*self, *other)

    def __radd__(self, other: Iterable[T]) -> tuple[T, ...]:
        if not isinstance(other, tuple):
            return NotImplemented
        return (*other, *self)

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))  # a copy, pickled or deep-copied, is a plain tuple



def grown(items: Sequence[T], item: T, window: int | None = None) -> Snapshot[T]:
    """``items`` and ``item`` (with a window: the last ``window`` of them), in constant time
    where ``items`` is the snapshot its log ends with: that log, grown by one. Anything else (a
    tuple: none yet, or what is left after one was taken back) starts a new log; with a window,
    so does a log that holds twice the window, so it never holds more."""
    if type(items) is Snapshot and items.stop == len(items.source):
        log, start = items.source, items.start
    else:
        log, start = AppendOnlyLog(items), 0
    log.append(item)
    if window is not None and len(log) - start > window:
        start = len(log) - window
        if start >= window:
            log, start = AppendOnlyLog(log[start:]), 0
    return Snapshot(log, start, len(log))
