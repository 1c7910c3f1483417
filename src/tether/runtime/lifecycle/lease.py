"""A session is written by one worker at a time: its lease, held while the worker appends.

Why: two workers resuming one session (or a resumer and the worker still running it) would
each run the session's calls; the journal's seq check catches the second append, but only after
its side effect. A lease decides who may run the session before anything runs.

Decision: the lease lives in the store, beside the session's row, with an expiry and a fencing
token. A new session's first append takes it; a resume (or an operator's settle) acquires it,
and gets ``SessionBusy`` naming the holder while another worker's lease is live. Every append
carries the token, so a worker whose lease lapsed and was taken over is refused at its next
append instead of forking the journal. While an activation runs, the lease is renewed every
third of its ttl (appends renew it too; a renewal the store cannot make is tried again at the
next third, so one unreachable moment does not cost the lease); the activation's last write
(its end or pause) lets it lapse in the same transaction, so giving it up costs no write of its
own.
After a crash it lapses after its ttl — at once when the holder was a process of this host that
no longer exists.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

from tether.journal.chain import Journal
from tether.store.base import Lease, SessionBusy, SessionMoved, Store, StoreError, lease_holder

DEFAULT_LEASE_TTL = 60.0


@contextlib.asynccontextmanager
async def leased(journal: Journal, ttl: float, *, new: bool) -> AsyncIterator[None]:
    """Hold ``journal``'s session for the duration: taken by its first append when ``new``,
    else acquired now (SessionBusy if another worker holds it); renewed while held."""
    store = journal.store
    if store is None:
        yield
        return
    lease = Lease(lease_holder(), 1, ttl) if new else _acquire(journal, store, ttl)
    journal.lease = lease
    loop = asyncio.get_running_loop()
    timer = loop.call_later(ttl / 3, _renew, journal, lease, loop)
    try:
        yield
    finally:
        timer.cancel()
        _release(journal, lease)


@contextlib.contextmanager
def leased_briefly(journal: Journal, ttl: float) -> Iterator[None]:
    """Hold ``journal``'s stored session for one write made outside a run (an operator's)."""
    store = journal.store
    if store is None:
        yield
        return
    lease = _acquire(journal, store, ttl)
    journal.lease = lease
    try:
        yield
    finally:
        _release(journal, lease)


def _acquire(journal: Journal, store: Store, ttl: float) -> Lease:
    """Acquire the lease of a session loaded earlier: SessionBusy while another worker holds
    it, SessionMoved (and no lease kept) if one wrote it since ``journal`` was loaded — between
    the load and the acquire its lease may well have lapsed, at its pause or end."""
    session_id = journal.session_id
    lease = store.acquire(session_id, lease_holder(), ttl)
    newer = store.read(session_id, after_seq=len(journal))
    if newer:
        with contextlib.suppress(StoreError):
            store.release(session_id, lease)
        raise SessionMoved(session_id, len(journal), newer[-1].seq)
    return lease


def _renew(journal: Journal, lease: Lease, loop: asyncio.AbstractEventLoop) -> None:
    """Extend the lease, then again a third of its ttl later, while the journal holds it.

    The store's call is made on a thread, never on the loop: the loop's own committer
    (``store.loop_commit``) may be between writing this session's row and committing it, and a
    renewal blocking the loop on that row's lock would wait for a commit only the loop can
    make — the run would hang, holding the row."""
    store = journal.store
    if store is None or journal.lease is not lease:
        return
    if not journal.flushed:  # a new session's row exists from its first flush on
        loop.call_later(lease.ttl / 3, _renew, journal, lease, loop)
        return
    renewal = loop.run_in_executor(None, _renew_once, store, journal.session_id, lease)
    renewal.add_done_callback(lambda done: _renewed(done, journal, lease, loop))


def _renew_once(store: Store, session_id: str, lease: Lease) -> bool:
    """One renewal: whether to go on renewing."""
    try:
        store.renew(session_id, lease)
    except (SessionBusy, LookupError):
        return False  # lost: the next append says so, before anything runs
    except StoreError:
        pass  # unreachable for now (a restart, a failover): the next tick tries again
    return True


def _renewed(done: asyncio.Future[bool], journal: Journal, lease: Lease,
             loop: asyncio.AbstractEventLoop) -> None:
    if done.cancelled() or done.exception() is not None or not done.result():
        return
    if journal.lease is lease and not loop.is_closed():
        loop.call_later(lease.ttl / 3, _renew, journal, lease, loop)


def _release(journal: Journal, lease: Lease) -> None:
    if journal.lease is None:  # given up by the session's last write (Journal.flush(last=True))
        return
    journal.lease = None
    store = journal.store
    assert store is not None
    with contextlib.suppress(StoreError):
        store.release(journal.session_id, lease)
