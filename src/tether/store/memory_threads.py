"""The in-memory store's conversation threads and their kept turns.

Why apart from ``store.memory``: threads (which sessions continue which conversation, for whom,
and the turns of each history, kept once: ``tether.store.turn_chain``) are an index beside the
journal, not part of appending and reading it; the store class mixes them in.

Decision: every change happens under the store's one lock, so places are taken one at a time
and each kept turn is chained onto the one kept before it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Collection, Mapping, Sequence

from tether.store.base import ThreadEntry, ThreadTail, thread_key
from tether.store.turn_chain import GENESIS, ThreadTurn, turn_digest, turn_link

Owner = tuple[str, str]  # (tenant, user) as ``thread_key`` stores them


class MemoryThreads:
    """Mixed into ``MemoryStore``: the thread index and the kept turns, under its lock."""

    _lock: threading.Lock
    # (tenant, user) -> the index of their threads, one entry per session on one
    _threads: dict[Owner, list[ThreadEntry]]
    # (tenant, user, thread) -> its kept turns, by place
    _turns: dict[tuple[str, str, str], list[ThreadTurn]]

    def join_thread(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    session_id: str) -> int:
        with self._lock:
            rows = self._threads.setdefault(thread_key(tenant_id, user_id), [])
            place = 1 + max((r.position for r in rows if r.thread_id == thread_id), default=0)
            rows.append(ThreadEntry(thread_id, place, session_id, user_id or None, time.time()))
            return place

    def thread_entries(self, tenant_id: str | None, user_id: str | None,
                       thread_id: str | None = None, *,
                       every_user: bool = False) -> list[ThreadEntry]:
        tenant, user = thread_key(tenant_id, user_id)
        with self._lock:
            found = [row for owner, rows in self._threads.items()
                     if owner[0] == tenant and (every_user or owner[1] == user)
                     for row in rows if thread_id in (None, row.thread_id)]
        return sorted(found, key=lambda e: (e.user_id or "", e.thread_id, e.position))

    def end_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                  session_ids: Sequence[str], turns: Mapping[str, str] | None = None) -> None:
        with self._lock:
            rows = self._threads.get(thread_key(tenant_id, user_id), [])
            for session_id in session_ids:
                last = max((r.ended or 0 for r in rows if r.thread_id == thread_id), default=0)
                for i, row in enumerate(rows):
                    if (row.thread_id, row.session_id, row.ended) == (thread_id, session_id,
                                                                      None):
                        rows[i] = dataclasses.replace(row, ended=last + 1)
                        if turns and session_id in turns and (
                                self._turns.get((*thread_key(tenant_id, user_id), thread_id))
                                or last == 0):  # (``Store.end_turns``: a first kept turn)
                            self._keep(tenant_id, user_id, thread_id, last + 1, session_id,
                                       turns[session_id])

    def _keep(self, tenant_id: str | None, user_id: str | None, thread_id: str, place: int,
              session_id: str, text: str) -> None:
        kept = self._turns.setdefault((*thread_key(tenant_id, user_id), thread_id), [])
        if kept and kept[-1].ended >= place:
            return  # a chain is only ever extended
        digest = turn_digest(text)
        kept.append(ThreadTurn(place, session_id, digest,
                               turn_link(kept[-1].link if kept else GENESIS, digest), text))

    def thread_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                     through: int | None = None) -> list[ThreadTurn]:
        with self._lock:
            kept = self._turns.get((*thread_key(tenant_id, user_id), thread_id), [])
            return [t for t in kept if through is None or t.ended <= through]

    def thread_tail(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                    after: int) -> ThreadTail:
        owner = thread_key(tenant_id, user_id)
        with self._lock:  # (no revision: the reader compares the rows, the same objects)
            found = [row for row in self._threads.get(owner, [])
                     if row.thread_id == thread_id and (row.ended is None or row.ended > after)]
            kept = list(self._turns.get((*owner, thread_id), []))
        return ThreadTail(sorted(found, key=lambda e: e.position), kept, None)

    def fill_turns(self, tenant_id: str | None, user_id: str | None, thread_id: str,
                   turns: Sequence[tuple[int, str, str]]) -> None:
        with self._lock:
            for place, session_id, text in turns:
                self._keep(tenant_id, user_id, thread_id, place, session_id, text)

    def leave_threads(self, tenant_id: str | None, user_id: str | None) -> int:
        owner = thread_key(tenant_id, user_id)
        with self._lock:
            for key in [k for k in self._turns if k[:2] == owner]:
                del self._turns[key]
            return len(self._threads.pop(owner, []))

    def _remove_turn_text(self, sessions: Collection[str]) -> None:
        """The kept turns of ``sessions`` lose their text (a prune, an erasure; under the
        lock): their digests and links stay, so the chains through them still hold."""
        for kept in self._turns.values():
            for i, turn in enumerate(kept):
                if turn.session_id in sessions and turn.turn is not None:
                    kept[i] = turn._replace(turn=None)
