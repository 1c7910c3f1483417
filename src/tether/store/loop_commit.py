"""Group commit on the event loop: the appends of many sessions share PostgreSQL commits.

Why: a PostgreSQL commit is a network round trip and an fsync, and an async worker runs many
sessions at once. Made on the loop with a blocking driver, every session waits for every other's
commit. Made on threads, every round trip costs the thread a wait for the GIL behind the busy
loop (up to the interpreter's 5 ms switch interval): a hundred sessions took three times what
SQLite took.

Decision: one committer task per event loop, with its own psycopg async connection, so a commit
is awaited like any other I/O — no thread, no GIL handoff, and the loop runs other sessions
meanwhile. Appends wait in a queue; the committer takes all that are waiting (up to a batch),
writes them in one transaction and commits once, then resolves each append's future. While one
batch commits the next gathers, so batches grow with the load and nothing lingers when it is
light. An append refused by the store's checks fails alone; a lost connection is ridden through
(``store.postgres_outage``): the batch is written again on a new connection, and an append the
server had committed before the connection dropped is recognised by its hashes, not doubled;
past the store's bound, every caller in the batch gets a StoreUnavailable naming its session.
Any other database error fails its batch and every caller in it is told. Each caller awaits its
own append before going on, so a step is durable before the side effect that follows it and a
session's appends stay in order. The connection is opened on first use and closed when the loop
ends or the store closes; the close waits until the server has ended its side (its backend has
left ``pg_stat_activity`` and freed its connection slot), because PostgreSQL ends a backend
after the client has gone: a process that opens loop after loop would otherwise hold more
slots than it has connections, and "closed" would be true only later on a loaded server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from tether.store.base import StoreError, StoreUnavailable
from tether.store.postgres_outage import RideThrough, lost_connection

BATCH = 256  # appends in one commit, at most
GOODBYE_SECONDS = 10.0  # a server that has not ended the connection by then (gone from the
# network) is left to notice on its own, rather than hold up the end of the loop

# (db, batch, retried): each append's refusal or None, in a transaction; ``retried`` when an
# earlier try of the batch may have been committed before its connection dropped
Write = Callable[[Any, list[tuple[Any, ...]], bool], Awaitable[list[BaseException | None]]]


class LoopCommitters:
    """The committers of one store, one per event loop that appends to it."""

    def __init__(self, connect: Callable[[], Awaitable[Any]], write: Write,
                 ride: RideThrough) -> None:
        self._connect = connect  # opens an async connection (autocommit off)
        self._write = write
        self._ride = ride  # how long a lost database is waited out
        self._committers: dict[asyncio.AbstractEventLoop, _Committer] = {}
        self._lock = threading.Lock()
        self._closed = False

    async def submit(self, *args: Any) -> None:
        """Queue one append on this loop's committer; return once its commit is done."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed; open it again to append")
            committer = self._committers.get(loop)
            if committer is None:
                committer = self._committers[loop] = _Committer(self, loop)
        future: asyncio.Future[None] = loop.create_future()
        committer.queue.put_nowait((args, future))
        await future

    def close(self) -> None:
        """Stop every committer; each closes its connection on its own loop."""
        with self._lock:
            committers, self._committers = list(self._committers.values()), {}
            self._closed = True
        for committer in committers:
            committer.stop()

    def _forget(self, committer: _Committer) -> None:
        with self._lock:
            if self._committers.get(committer.loop) is committer:
                del self._committers[committer.loop]


class _Committer:
    def __init__(self, owner: LoopCommitters, loop: asyncio.AbstractEventLoop) -> None:
        self.owner, self.loop = owner, loop
        self.queue: asyncio.Queue[tuple[tuple[Any, ...], asyncio.Future[None]]] = asyncio.Queue()
        self.db: Any = None
        self.task = loop.create_task(self._work(), name="tether-commit")
        self.task.add_done_callback(self._ended)

    def stop(self) -> None:
        if self.loop.is_closed():  # its task never ran to the end: drop the connection here
            if self.db is not None:
                self.db.pgconn.finish()
        elif _running_loop() is self.loop:
            self.task.cancel()
        else:
            self.loop.call_soon_threadsafe(self.task.cancel)

    async def _work(self) -> None:
        try:
            while True:
                batch = [await self.queue.get()]
                while len(batch) < BATCH and not self.queue.empty():
                    batch.append(self.queue.get_nowait())
                await self._commit(batch)
        finally:
            if self.db is not None:
                with contextlib.suppress(Exception):
                    await _close_and_see_it_end(self.db)

    def _ended(self, _: object) -> None:
        """The committer stopped (the store closed, the loop ended), perhaps before it began:
        every append still queued is told it was not stored."""
        self.owner._forget(self)
        while not self.queue.empty():
            _fail(self.queue.get_nowait()[1])

    async def _commit(self, batch: list[tuple[tuple[Any, ...], asyncio.Future[None]]]) -> None:
        appends = [args for args, _ in batch]

        async def attempt(number: int) -> list[BaseException | None]:
            if self.db is None or self.db.closed:
                self.db = None
                self.db = await self.owner._connect()
            try:
                written = await self.owner._write(self.db, appends, number > 0)
                await self.db.commit()
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    await self.db.rollback()
                    if lost_connection(exc):  # e.g. on a standby now: the next try reconnects
                        await self.db.close()
                raise
            return written

        results: list[BaseException | None]
        try:
            results = await self.owner._ride.acall(attempt)
        except asyncio.CancelledError:  # the store closed or the loop ended mid-commit
            for _, future in batch:
                _fail(future, "read the session back to see whether it was stored")
            raise
        except StoreUnavailable as exc:  # the database stayed away: each session is told
            results = [exc.for_session(args[0]) for args in appends]
        except Exception as exc:  # nothing of the batch is stored: each caller is told
            results = [exc] * len(batch)
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue
            if result is None:
                future.set_result(None)
            else:
                future.set_exception(result)


async def _close_and_see_it_end(db: Any) -> None:
    """Close ``db`` (psycopg sends the server its Terminate message) and wait for the server to
    close its end of the socket, which its backend does after leaving ``pg_stat_activity``."""
    if db.closed:
        return
    try:
        watch = socket.socket(fileno=os.dup(db.pgconn.socket))  # outlives psycopg's descriptor
    except Exception:  # no socket left to watch (a broken connection): closing is all there is
        await db.close()
        return
    try:
        watch.setblocking(False)
        await db.close()
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(GOODBYE_SECONDS):
            while await loop.sock_recv(watch, 4096):  # until the server's end-of-file
                pass
    finally:
        watch.close()


def _fail(future: asyncio.Future[None], unknown: str = "it was not stored") -> None:
    if not future.done():
        future.set_exception(StoreError(f"the store closed before this append was committed; "
                                        f"{unknown}"))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
