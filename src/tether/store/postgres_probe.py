"""One plain connection before a PostgreSQL pool opens, so a bad URL fails at once with its cause.

Why: ``psycopg_pool`` retries a failing connection with back-off until its open timeout (10 s),
logging every attempt ("error connecting in 'pool-1': ...") to stderr, and then raises only that
the pool timed out. A URL naming a closed port, an unknown host or a missing database will not
start working within those seconds; the person who typed it needs the reason now.

Decision: the store makes one connection first, with a short connect timeout (for a host that
never answers); if it fails, its error — secrets masked — is the StoreError, and no pool is ever
made, so nothing retries and nothing is logged. A server that answers goes on to the pool as
before.
"""

from __future__ import annotations

from tether.store.base import StoreError
from tether.urls import redact_text

CONNECT_TIMEOUT = 5  # seconds to wait for a host that does not answer at all


def probe(dsn: str, shown_url: str) -> None:
    """Connect once to ``dsn``; StoreError naming the cause (and ``shown_url``) if it fails."""
    import psycopg

    try:
        psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=True).close()
    except psycopg.Error as exc:
        cause = " ".join(redact_text(str(exc), dsn).split())
        raise StoreError(f"cannot connect to PostgreSQL at {shown_url}: {cause}; check the host, "
                         "port, database and user in the URL (--store or TETHER_STORE)") from None
