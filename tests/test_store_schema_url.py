"""The CLI and ``open_store`` reach a non-default PostgreSQL schema through the URL, and two
schemas on one database are independent stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import audit_app
from audit_helpers import pg_database
from tether.cli import main
from tether.store.base import StoreError
from tether.store.opening import open_store
from tether.store.postgres import PostgresStore
from tether.store.postgres_url import schema_in_url


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("AUDIT_APP_CRASH_ON", raising=False)
    with pg_database() as url:
        yield url


def test_schema_in_url_reads_both_forms() -> None:
    assert schema_in_url("postgresql://h/d?schema=x&sslmode=disable") == \
        ("postgresql://h/d?sslmode=disable", "x")
    libpq = "postgresql://h/d?options=-csearch_path%3Dy"
    assert schema_in_url(libpq) == (libpq, "y")
    assert schema_in_url("postgresql://h/d") == ("postgresql://h/d", None)
    with pytest.raises(StoreError, match="more than one schema"):
        schema_in_url("postgresql://h/d?schema=x&options=-csearch_path%3Dy")


def test_two_schemas_on_one_database_are_independent(
        database: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    a_url, b_url = f"{database}?schema=team_a", f"{database}?options=-csearch_path%3Dteam_b"
    a_sid, _ = audit_app.start(a_url)
    b_sid, _ = audit_app.start(b_url)
    a, b, default = open_store(a_url), open_store(b_url), open_store(database)
    try:
        assert isinstance(a, PostgresStore) and a.schema == "team_a"
        assert isinstance(b, PostgresStore) and b.schema == "team_b"
        assert [s.session_id for s in a.sessions()] == [a_sid]
        assert [s.session_id for s in b.sessions()] == [b_sid]
        assert default.sessions() == [] and a.read(b_sid) == []
    finally:
        for store in (a, b, default):
            store.close()
    assert main(["audit", "list", "--store", a_url]) == 0
    out = capsys.readouterr().out
    assert a_sid in out and b_sid not in out
    monkeypatch.setenv("TETHER_STORE", b_url)
    assert main(["audit", "verify"]) == 0
    out = capsys.readouterr().out
    assert b_sid in out and a_sid not in out
    assert main(["audit", "show", a_sid]) == 1  # not in team_b


def test_a_schema_named_twice_differently_is_refused(database: str) -> None:
    with pytest.raises(StoreError, match="name it once"):
        PostgresStore(f"{database}?schema=x", schema="y")
