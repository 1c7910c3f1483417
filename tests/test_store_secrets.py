"""No secret of the store's own connection is ever printed: every CLI command, on its success and
its error paths, every repr, exception message and log line, against a PostgreSQL URL that carries
a password in its user info and in its query."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import audit_app
from audit_helpers import pg_database
from tether.cli import main
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.base import StoreError
from tether.store.opening import open_store
from tether.urls import redact_text, redact_url

PASSWORD = "Hunter2-sekrit-pw"
QUERY_SECRET = "q-sekrit-token-77"
APP = audit_app.__file__
AGENT = f"{APP}:agent"


def test_redact_url_masks_every_secret_part() -> None:
    cases = {
        "postgresql://app:pw1@db:5432/prod?sslmode=require&password=pw2&sslpassword=pw3":
            "postgresql://app:***@db:5432/prod?sslmode=require&password=***&sslpassword=***",
        "postgresql://postgres@127.0.0.1/test": "postgresql://postgres@127.0.0.1/test",
        "https://ghp_abcdef@github.com/x?y=1#access_token=zz": "https://***@github.com/x?y=1",
        "http://[::1]:8080/mcp?token=abc&api_key=k": "http://[::1]:8080/mcp?token=***&api_key=***",
        "http://127.0.0.1:8080/v1": "http://127.0.0.1:8080/v1",
        "sqlite:///relative.db?synchronous=full": "sqlite:///relative.db?synchronous=full",
        "http://user:pw@host:notaport/": "http://<unreadable URL>",
    }
    for given, shown in cases.items():
        assert redact_url(given) == shown


def test_redact_text_hides_the_password_in_any_form() -> None:
    url = "postgresql://u:p%40ssword@h/d?token=tok-123"
    text = f"cannot connect to {url}: auth failed for p@ssword (token tok-123)"
    shown = redact_text(text, url)
    for secret in ("p%40ssword", "p@ssword", "tok-123"):
        assert secret not in shown
    assert "postgresql://u:***@h/d?token=***" in shown


@pytest.fixture
def secret_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A PostgreSQL database with one paused session (trust auth ignores the password)."""
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("AUDIT_APP_CRASH_ON", raising=False)
    with pg_database() as plain:
        url = plain.replace("://postgres@", f"://postgres:{PASSWORD}@") + \
            f"?application_name=tether-test&password={QUERY_SECRET}"
        yield url


def _start_session(url: str) -> str:
    out = subprocess.run([sys.executable, APP, "run", url], capture_output=True, text=True,
                         timeout=60, env=os.environ.copy(), check=True)
    assert PASSWORD not in out.stdout + out.stderr
    return out.stdout.split()[0]


def _assert_clean(text: str) -> None:
    assert PASSWORD not in text and QUERY_SECRET not in text, text


def test_no_cli_command_prints_the_store_password(
        secret_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sid = _start_session(secret_url)
    store = open_store(secret_url)
    try:
        _assert_clean(repr(store) + str(store.url))
        (request,) = StoredApprovals(store).pending(sid)
    finally:
        store.close()
    policy = tmp_path / "strict.yaml"
    policy.write_text(audit_app.STRICT_YAML)
    commands = [
        ["audit", "verify"], ["audit", "verify", "--session", sid],
        ["audit", "verify", "--session", "nope"], ["audit", "show", sid],
        ["audit", "show", "nope"], ["audit", "list"], ["audit", "export", "--session", sid],
        ["audit", "export", "--session", "nope"],
        ["approvals", "list"], ["approvals", "approve", "apr_nope", "--approver", "a",
                                "--unauthenticated"],
        ["approvals", "approve", request.id, "--approver", "ana", "--unauthenticated"],
        ["approvals", "deny", request.id, "--approver", "ana", "--unauthenticated"],
        ["resume", "nope", "--agent", AGENT], ["resume", sid, "--agent", AGENT],
        ["settle", sid, "c1", "retry", "--operator", "o", "--agent", AGENT],
        ["what-if", "--policy", str(policy)],
        ["what-if", "--policy", str(policy), "--session", "x"],
        ["store", "prune", "--before", "1d", "--dry-run"], ["store", "prune", "--before", "1d"],
    ]
    for argv in commands:
        main([*argv, "--store", secret_url])
        captured = capsys.readouterr()
        _assert_clean(captured.out + captured.err)
    _assert_clean(caplog.text)


def test_the_store_from_the_environment_is_not_printed_either(
        secret_url: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_STORE", secret_url)
    for argv in (["audit", "verify", "--session", "nope"], ["audit", "show", "nope"],
                 ["resume", "nope", "--agent", AGENT]):
        main(argv)
        captured = capsys.readouterr()
        _assert_clean(captured.out + captured.err)


def test_connection_failures_and_bad_urls_do_not_print_the_password(
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    unreachable = f"postgresql://postgres:{PASSWORD}@127.0.0.1:9/test?connect_timeout=1"
    with pytest.raises(StoreError) as failed:
        open_store(unreachable)
    _assert_clean(str(failed.value) + repr(failed.value))
    assert failed.value.__cause__ is None or PASSWORD not in str(failed.value.__cause__)
    misspelt = f"postgress://postgres:{PASSWORD}@127.0.0.1/test"
    with pytest.raises(StoreError) as unknown:
        open_store(misspelt)
    _assert_clean(str(unknown.value))
    for url in (unreachable, misspelt):
        assert main(["audit", "list", "--store", url]) == 2
        captured = capsys.readouterr()
        _assert_clean(captured.out + captured.err)
    _assert_clean(caplog.text)
