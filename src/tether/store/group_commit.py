"""Group commit: the appends of many sessions of one process share PostgreSQL commits.

Why: a PostgreSQL commit waits for its WAL to reach disk — milliseconds on ordinary disks — and
an async worker runs many sessions. Committed one by one on the event loop, every session waits
for every other's fsync; committed one by one on threads, the pool's few connections still pay
one fsync each.

Decision: appends are queued to a few daemon threads; each takes whatever is waiting (up to a
batch, lingering a millisecond for more), writes every append in one transaction, and commits
once. An append refused by the store's checks (another writer came first, a lost lease) is
refused before it changes anything, so it fails alone and the others commit; a database error
fails the whole batch, and each caller is told. Each caller gets its own result when the batch's
commit is done, so an append is durable before its caller goes on (the step's events before the
side effect that follows), and a session's appends stay in order because its caller awaits each
before the next.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from tether.store.base import StoreError

BATCH = 64  # appends in one commit, at most
WORKERS = 4  # commits in flight at once
LINGER = 0.001  # seconds a committer waits for more appends to join its batch


class GroupCommit:
    def __init__(self, connection: Callable[[], Any], write: Callable[..., None]) -> None:
        self._connection = connection  # a context manager: a connection, committed on exit
        self._write = write  # (db, *args): one append inside the current transaction
        self._queue: queue.SimpleQueue[tuple[tuple[Any, ...], Future[None]] | None] = \
            queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, *args: Any) -> Future[None]:
        """Queue one append; its future resolves once the commit that holds it is done."""
        with self._lock:
            if len(self._workers) < WORKERS:
                worker = threading.Thread(target=self._work, name="tether-commit", daemon=True)
                self._workers.append(worker)
                worker.start()
        future: Future[None] = Future()
        self._queue.put((args, future))
        return future

    def close(self) -> None:
        with self._lock:
            for _ in self._workers:
                self._queue.put(None)
            self._workers = []

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            with contextlib.suppress(queue.Empty):
                while len(batch) < BATCH:
                    more = self._queue.get(timeout=LINGER)
                    if more is None:
                        self._queue.put(None)  # for the next worker; this one ends after
                        break
                    batch.append(more)
            self._commit(batch)

    def _commit(self, batch: list[tuple[tuple[Any, ...], Future[None]]]) -> None:
        failed: dict[int, BaseException] = {}
        try:
            with self._connection() as db:
                for index, (args, _) in enumerate(batch):
                    try:
                        self._write(db, *args)
                    except (StoreError, LookupError) as exc:  # refused, nothing written
                        failed[index] = exc
        except Exception as exc:  # the commit itself failed: nothing of the batch is stored
            for index in range(len(batch)):
                failed.setdefault(index, exc)
        for index, (_, future) in enumerate(batch):
            if index in failed:
                future.set_exception(failed[index])
            else:
                future.set_result(None)
