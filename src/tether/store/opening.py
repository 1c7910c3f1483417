"""``open_store(url)``: a store from its URL, the one place that knows every backend.

Why a module of its own: the backends (``memory``, ``sqlite``, ``postgres``) each stand on
``tether.store.base`` (the protocol, the errors, the shared records); a factory in ``base`` that
picks among them would make ``base`` and every backend import each other. Here, above them all,
it imports each backend only when a URL names it, so an extra (``psycopg``) is needed only by
the store that uses it. Its public name is ``tether.store.open_store``.
"""

from __future__ import annotations

import os

from tether.store.base import DEFAULT_URL, Store, StoreError


def open_store(url: str | None = None) -> Store:
    """A store from a URL: ``memory://``, ``sqlite:///path`` (the default, from ``TETHER_STORE``
    or ``sqlite:///tether.db``) or ``postgresql://...``."""
    url = url or os.environ.get("TETHER_STORE") or DEFAULT_URL
    if url.startswith("memory:"):
        from tether.store.memory import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite:"):
        from tether.store.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if url.startswith(("postgresql:", "postgres:")):
        from tether.store.postgres import PostgresStore

        store: Store = PostgresStore(url)
        return store
    from tether.urls import redact_url

    raise StoreError(f"unknown store URL {redact_url(url)!r}; use memory://, "
                     "sqlite:///path/to/file.db or postgresql://user@host/db")
