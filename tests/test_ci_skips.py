"""A test whose prerequisite is missing skips on a developer's machine and fails under CI=true.

CI installs PostgreSQL, node and npm and every extra the suite imports; a skip there would hide
a promise nobody checks any more. Each place that can skip is driven here with its prerequisite
made unreachable (a closed port, a PATH without node, a module that does not exist)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import audit_helpers
import mcp_servers
import test_store_fidelity

import conftest

CLOSED = "postgresql://postgres@127.0.0.1:1/test"  # nothing listens on port 1

Outcome = type[BaseException]
SKIPPED: Outcome = pytest.skip.Exception
FAILED: Outcome = pytest.fail.Exception


@pytest.fixture(params=[("true", FAILED), ("", SKIPPED)], ids=["CI=true", "no CI"])
def ci(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """Sets CI as the param says; gives the outcome a missing prerequisite must have."""
    value, outcome = request.param
    if value:
        monkeypatch.setenv("CI", value)
    else:
        monkeypatch.delenv("CI", raising=False)
    return outcome  # type: ignore[no-any-return]


def _no_postgres(monkeypatch: pytest.MonkeyPatch, _: Path) -> None:
    monkeypatch.setattr(conftest, "PG_URL", CLOSED)
    monkeypatch.setattr(audit_helpers, "PG_URL", CLOSED)


def _no_node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no node, no npm


def _store_fidelity_on_old_schema() -> None:
    test_store_fidelity.test_jsonb_rows_from_before_schema_3_are_unverifiable_not_tampered(
        capsys=None)  # type: ignore[arg-type]  # it never gets as far as reading output


def _pg_database() -> None:
    with audit_helpers.pg_database():
        pass


PLACES: dict[str, tuple[Callable[..., None], Callable[[], Any]]] = {
    "the store fixture's PostgreSQL": (_no_postgres, conftest.postgres_store),
    "the audit tests' PostgreSQL database": (_no_postgres, _pg_database),
    "the store fidelity test's PostgreSQL": (_no_postgres, _store_fidelity_on_old_schema),
    "the npm MCP servers' node": (_no_node, lambda: mcp_servers.npm_bin("mcp-server-filesystem")),
    "an extra that is not installed": (
        lambda *_: None, lambda: conftest.import_or_unavailable("no_such_tether_extra", "x")),
}


@pytest.mark.parametrize("place", list(PLACES))
def test_a_missing_prerequisite_skips_outside_ci_and_fails_under_it(
        place: str, ci: Outcome, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make_missing, use = PLACES[place]
    make_missing(monkeypatch, tmp_path)
    with pytest.raises(BaseException) as raised:
        use()
    assert type(raised.value) is ci, f"{place}: {raised.value!r}"
    if ci is FAILED:
        assert "CI (CI=true) must have it" in str(raised.value)


@pytest.mark.parametrize(("value", "outcome"), [("true", FAILED), ("1", FAILED), ("TRUE", FAILED),
                                               ("false", SKIPPED), ("0", SKIPPED), ("", SKIPPED)])
def test_what_counts_as_ci(value: str, outcome: Outcome,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(outcome):
        conftest.unavailable("a server")


def test_an_installed_module_is_returned() -> None:
    assert conftest.import_or_unavailable("json", "none").dumps([]) == "[]"
