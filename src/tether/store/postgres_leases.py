"""The PostgreSQL store's leases: which worker may write a session, and until when.

Why apart from ``store.postgres``: a lease is held beside the journal (on the session's index
row), taken, renewed and released on its own schedule; appending only checks it. The store
class mixes it in.

Decision: taking a lease locks the session's row (``FOR UPDATE``) and bumps its token, so two
workers never both hold it; renewing and releasing match the token, so a worker whose lease
was taken over finds out (``SessionBusy(lost=True)``) instead of extending another's. A release
the database did not get (it was down) is remembered, so this store's next acquire of that
session takes the lease at once instead of waiting out its expiry. Renewal runs on the event
loop, so it waits out a lost database for ``RENEW_BOUND`` seconds at most.
"""

from __future__ import annotations

import time

from tether.errors import NotFound
from tether.store.base import Lease, SessionBusy, StoreUnavailable, holder_is_gone
from tether.store.postgres_outage import riding
from tether.store.postgres_part import PostgresPart

RENEW_BOUND = 2.0  # seconds a lease renewal (on the event loop) waits out a lost database


class PostgresLeases(PostgresPart):
    """Mixed into ``PostgresStore``: session leases, on its pool."""

    _unreleased: dict[str, int]  # session -> lease token a lost database kept

    @riding
    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease:
        with self._connection() as db:
            row = db.execute(self._sql("SELECT lease_holder, lease_token, lease_expires FROM "
                                       "{s}.sessions WHERE session_id = %s FOR UPDATE"),
                             (session_id,)).fetchone()
            if row is None:
                raise NotFound(f"no session {session_id!r} in {self.url}")
            current, token, expires = row
            if current not in (None, holder) and expires > time.time() and \
                    not holder_is_gone(current) and self._unreleased.get(session_id) != token:
                raise SessionBusy(session_id, current, expires)
            db.execute(self._sql("UPDATE {s}.sessions SET lease_holder = %s, lease_token = %s, "
                                 "lease_expires = %s WHERE session_id = %s"),
                       (holder, token + 1, time.time() + ttl, session_id))
        self._unreleased.pop(session_id, None)
        return Lease(holder, token + 1, ttl)

    def renew(self, session_id: str, lease: Lease) -> None:
        """Not ridden through for the whole bound: renewing runs on the event loop and must not
        hold it that long (each append renews the lease too, and says so if it was lost)."""
        self._ride.call(lambda: self._renew(session_id, lease), session_id,
                        bound=min(self._ride.bound, RENEW_BOUND))

    def _renew(self, session_id: str, lease: Lease) -> None:
        with self._connection() as db:
            moved = db.execute(self._sql("UPDATE {s}.sessions SET lease_expires = %s WHERE "
                                         "session_id = %s AND lease_token = %s"),
                               (time.time() + lease.ttl, session_id, lease.token)).rowcount
            if moved != 1:
                row = db.execute(self._sql("SELECT lease_holder, lease_expires FROM "
                                           "{s}.sessions WHERE session_id = %s"),
                                 (session_id,)).fetchone()
                raise SessionBusy(session_id, row[0] if row else None,
                                  row[1] if row else 0.0, lost=True)

    def release(self, session_id: str, lease: Lease) -> None:
        """One try: a lease not released lapses by itself, and the session's next acquire
        through this store takes it at once."""
        try:
            self._ride.call(lambda: self._release(session_id, lease), session_id, bound=0.0)
        except StoreUnavailable:
            self._unreleased[session_id] = lease.token
            raise

    def _release(self, session_id: str, lease: Lease) -> None:
        with self._connection() as db:
            db.execute(self._sql("UPDATE {s}.sessions SET lease_holder = NULL, lease_expires = 0 "
                                 "WHERE session_id = %s AND lease_token = %s"),
                       (session_id, lease.token))
