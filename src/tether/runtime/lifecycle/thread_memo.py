"""What a process remembers of the thread histories it checked, so the next start reads less.

Why: a session joining a thread is shown every turn that ended before it, and its start checks
them all — every kept turn's digest and link recomputed, decoded, made into messages. On a
thread of 1,000 turns that made a start cost twenty times one on a thread of 10, though a
process serving a conversation (a chat server, a worker) had checked all but the last turn at
the previous start.

Decision: an agent remembers, per thread, the kept turns it read and checked (the rows exactly
as the store returned them), the turns and messages it made of them, and the thread's
*revision* when it read them: a count the database itself keeps (SQLite and PostgreSQL
triggers, schema 14) and moves whenever a kept turn is changed or removed or one is put before
another — by tether (a prune, an erasure, ``forget``) or by anyone's SQL. A later start reads
the revision and the rows placed after the remembered ones; the same revision means the
remembered rows are the rows in the database, so only the new rows are checked (digest, link
onto the last remembered one), decoded and made into messages. Any other revision, or a turn
placed without being kept, and the start reads and checks the whole history as if nothing were
remembered (and refuses an edited one, as before). A store that keeps no revision (the
in-memory one) returns every row, and the remembered ones are compared with them instead.

What is trusted, and why: the remembered rows are this process's own memory of rows it
checked, so what a session is shown is never less checked than without the memory — a turn
edited in the database after it was remembered can never reach the model through it. What the
revision adds is noticing such an edit at the next start (and refusing the thread). Someone
able to drop the triggers or rewrite the database file underneath SQLite can make one process's
next starts not notice; they still cannot make it show the edit, and every process without the
memory, ``tether audit verify``, a resumption and a rerun check every turn as before.

A history with a turn whose text was removed is not remembered (such a turn is shown from its
own journal, which may go later without its row changing). An agent remembers at most
``MAX_TURNS`` turns across its threads, the thread used longest ago forgotten first; what it
remembers is what its sessions were already shown, kept in this process only, and never in a
repr. With each history it remembers its messages' estimate by the agent's model, so the first
request of a start estimates only what is new (``tether.runtime.record.history``). Two sessions
of one thread starting at once each read the memory and put back what they checked; the longer
history is kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.runtime.record.history import Estimator
from tether.store.base import ThreadTail
from tether.store.turn_chain import ThreadTurn
from tether.types import Message

MAX_TURNS = 20_000  # remembered per agent, over all its threads (about 1.5 KB a turn)

ThreadKey = tuple[str | None, str | None, str]  # (tenant, user, thread id)


@dataclass(frozen=True, slots=True)
class Checked:
    """A thread's history as a start read and checked it: the kept rows (as the store returned
    them, each with its text), the turns shown (``Turn.to_dict``), their messages, and whether
    one of them read untrusted content. Never changed once made: a later start makes a new one."""

    kept: list[ThreadTurn]
    turns: tuple[Mapping[str, Any], ...]
    messages: tuple[Message, ...]
    tainted: bool
    revision: int | None  # the thread's revision when they were read (``ThreadTail``)
    estimate: tuple[Estimator, int] | None = None  # the messages' estimate, by the agent's model

    @property
    def through(self) -> int:
        return self.kept[-1].ended if self.kept else 0

    def __repr__(self) -> str:  # (turns are a user's words: never in a repr)
        return f"Checked(through={self.through}, turns={len(self.turns)})"


class CheckedThreads:
    """The histories an agent's sessions checked, by thread (see the module docstring)."""

    def __init__(self, max_turns: int = MAX_TURNS) -> None:
        self._max = max_turns
        self._lock = threading.Lock()
        self._threads: OrderedDict[ThreadKey, Checked] = OrderedDict()
        self._held = 0

    def get(self, key: ThreadKey) -> Checked | None:
        with self._lock:
            found = self._threads.get(key)
            if found is not None:
                self._threads.move_to_end(key)
            return found

    def put(self, key: ThreadKey, checked: Checked) -> None:
        size = len(checked.kept)
        with self._lock:
            old = self._threads.get(key)
            if old is not None and old.through > checked.through:
                return  # (a start that began earlier finished later: keep the longer)
            if old is not None:
                self._held -= len(old.kept)
                del self._threads[key]
            if size > self._max:
                return
            self._threads[key] = checked
            self._held += size
            while self._held > self._max:
                _, dropped = self._threads.popitem(last=False)
                self._held -= len(dropped.kept)

    def drop(self, key: ThreadKey) -> None:
        with self._lock:
            old = self._threads.pop(key, None)
            if old is not None:
                self._held -= len(old.kept)

    def __len__(self) -> int:
        return len(self._threads)

    def __repr__(self) -> str:
        return f"CheckedThreads(threads={len(self._threads)}, turns={self._held})"

    def __reduce__(self) -> tuple[type[CheckedThreads], tuple[int]]:
        return CheckedThreads, (self._max,)  # (a copy elsewhere starts with nothing remembered)


def since(known: Checked | None, tail: ThreadTail) -> list[ThreadTurn] | None:
    """The kept turns ``tail`` holds after the ones ``known`` remembers, or None when those are
    not the thread's any more (the revision moved; without one, the rows differ) or turns were
    placed without being kept since (to be kept first): then everything is read and checked."""
    if known is None or not known.kept:
        return None
    count = len(known.kept)
    if tail.revision is None:
        if tail.turns[:count] != known.kept:
            return None
        rows = tail.turns[count:]
    elif tail.revision != known.revision:
        return None
    else:
        rows = tail.turns
    last = rows[-1].ended if rows else known.through
    if any(e.ended is not None and e.ended > last for e in tail.entries):
        return None
    return rows
