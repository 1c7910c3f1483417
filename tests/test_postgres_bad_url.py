"""A PostgreSQL URL that cannot work fails at once with its cause: one connection is tried, no
pool is made (so nothing retries for ten seconds, and no pool log lines reach stderr)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tether.store.base import StoreError

from conftest import PG_URL, postgres_store


def bad_database_url() -> str:
    postgres_store().close()  # the server answers (else: skipped, or failed under CI)
    parts = urlsplit(PG_URL)
    return urlunsplit(parts._replace(path="/tether_no_such_database_xyz"))


CASES: dict[str, tuple[Any, str]] = {
    "closed port": (lambda: "postgresql://postgres@127.0.0.1:1/test", "Connection refused"),
    "unknown host": (lambda: "postgresql://postgres@no-such-host.invalid/test",
                     "no-such-host.invalid"),
    "no such database": (bad_database_url,
                         'database "tether_no_such_database_xyz" does not exist'),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_url_is_one_attempt_and_no_pool(case: str, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    import psycopg
    import psycopg_pool

    from tether.store.postgres import PostgresStore

    make_url, cause = CASES[case]
    url = make_url()
    attempts: list[str] = []
    pools: list[object] = []
    connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def counted(cls: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(case)
        return connect(cls, *args, **kwargs)

    class NoPool(psycopg_pool.ConnectionPool):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pools.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "connect", classmethod(counted))
    monkeypatch.setattr(psycopg, "connect", psycopg.Connection.connect)  # the same, by its alias
    monkeypatch.setattr(psycopg_pool, "ConnectionPool", NoPool)
    with pytest.raises(StoreError) as raised:
        PostgresStore(url)
    assert cause in str(raised.value)
    assert "check the host, port, database and user" in str(raised.value)
    assert attempts == [case] and pools == []  # one try, and the pool never retried
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_cli_says_the_cause_and_prints_no_pool_lines(case: str) -> None:
    make_url, cause = CASES[case]
    done = subprocess.run([sys.executable, "-m", "tether", "audit", "list", "--store",
                           make_url()], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert cause in done.stderr, done.stderr
    assert "pool" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line: the error
