"""Stores: where journals, approvals and leases are kept (``memory://``, SQLite, PostgreSQL).

``open_store(url)`` picks a backend from a URL; ``Store`` is the protocol every backend keeps;
the errors a store raises are ``StoreError`` and its kinds (all ``tether.RunError``). Every name
is imported when first used, so ``import tether.store`` imports no backend, and the PostgreSQL
one needs its extra (``psycopg``) only once ``PostgresStore`` is named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.store.base import (
        DEFAULT_URL,
        ConflictError,
        SchemaError,
        SessionBusy,
        SessionInfo,
        SessionMoved,
        Store,
        StoreError,
        StoreFull,
        StoreUnavailable,
    )
    from tether.store.memory import MemoryStore
    from tether.store.opening import open_store
    from tether.store.postgres import PostgresStore
    from tether.store.sqlite import SQLiteStore

_WHERE = {
    **dict.fromkeys(("DEFAULT_URL", "ConflictError", "SchemaError", "SessionBusy", "SessionInfo",
                     "SessionMoved", "Store", "StoreError", "StoreFull", "StoreUnavailable"),
                    "base"),
    "open_store": "opening",
    "MemoryStore": "memory",
    "PostgresStore": "postgres",
    "SQLiteStore": "sqlite",
}
__all__ = ["DEFAULT_URL", "ConflictError", "MemoryStore", "PostgresStore", "SQLiteStore",
           "SchemaError", "SessionBusy", "SessionInfo", "SessionMoved", "Store", "StoreError",
           "StoreFull", "StoreUnavailable", "open_store"]

__getattr__, __dir__ = exports(__name__, _WHERE, globals())
