"""Shared test helpers: small scripted agents used across the suite, and the ``store`` fixture
(memory, SQLite, PostgreSQL) every store contract test runs against."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether import ModelResponse, ToolCall
from tether.store.base import Store, StoreError
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore


def call(name: str, args: dict[str, Any] | str, id: str = "") -> ModelResponse:
    """A scripted model turn that calls one tool."""
    return ModelResponse(tool_calls=(ToolCall(id, name, args),))


def calls(*pairs: tuple[str, dict[str, Any]]) -> ModelResponse:
    """A scripted model turn that calls several tools."""
    return ModelResponse(tool_calls=tuple(ToolCall("", n, a) for n, a in pairs))


PG_URL = os.environ.get("TETHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_store() -> Store:
    """A PostgreSQL store in a schema of its own (skipped only outside CI when unreachable)."""
    from tether.store.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:10]}"
    try:
        return PostgresStore(PG_URL, schema=schema)
    except StoreError:
        if os.environ.get("CI") == "true":
            raise  # CI has PostgreSQL: it must not be skipped there
        pytest.skip("PostgreSQL is not reachable")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        made: Store = MemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "t.db")
    else:
        made = postgres_store()
    yield made
    if request.param == "postgres":
        from tether.store.postgres import PostgresStore

        assert isinstance(made, PostgresStore)
        with made._pool.connection() as db:
            db.execute(f"DROP SCHEMA {made.schema} CASCADE")
    made.close()
