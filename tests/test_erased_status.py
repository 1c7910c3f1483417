"""An erased session is shown as erased everywhere, and an erasure record is never offered for
resume (``tether.journal.views.erased`` derives both, once).

Before: ``audit list`` said ``paused`` (the index keeps the erased session's last former type),
``audit show`` said "decide …, then ``tether resume``" for a session resume refuses, and the
erasure record's own ``audit show`` said "open: … ``tether resume`` continues it".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tether.cli import main

RECIPE = "examples/billing_desk.py:agent"
ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def erased(tmp_path: Path, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """A paused billing-desk session of user u-7, then u-7 forgotten: (store, session, record)."""
    monkeypatch.chdir(ROOT)
    store = f"sqlite:///{tmp_path / 'desk.db'}"
    code, out, _ = run(capsys, "run", RECIPE, "Pay the open invoices of order A1", "--tenant",
                       "acme", "--user", "u-7", "--store", store)
    assert code == 1 and "result needs_approval" in out
    session = re.search(r"session (\w+) ", out)
    assert session
    code, out, err = run(capsys, "memory", "forget", "--tenant", "acme", "--user", "u-7",
                         "--yes", "--store", store)
    assert code == 0, err
    record = re.search(r"erasure record (erasure-\w+)", out)
    assert record
    return store, session[1], record[1]


def test_audit_list_says_erased_and_filters_on_it(
        erased: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, session, record = erased
    code, out, _ = run(capsys, "audit", "list", "--store", store, "--json")
    assert code == 0
    statuses = {row["session_id"]: row["status"] for row in json.loads(out)}
    assert statuses == {session: "erased", record: "erasure"}
    code, out, _ = run(capsys, "audit", "list", "--store", store, "--status", "erased")
    assert code == 0 and session in out and record not in out and "1 session" in out
    code, out, _ = run(capsys, "audit", "list", "--store", store, "--status", "paused")
    assert (code, out) == (0, "no sessions match\n")


def test_audit_show_says_erased_and_offers_no_resume(
        erased: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, session, record = erased
    for tenant in ([], ["--tenant", "acme"]):  # the erased start keeps its tenant
        code, out, _ = run(capsys, "audit", "show", session, "--store", store, *tenant)
        assert code == 0
        assert f"status: erased: its content was removed by {record}" in out
        assert "tether resume" not in out and "approvals list" not in out
    code, out, _ = run(capsys, "audit", "show", record, "--store", store)
    assert code == 0
    assert f"erasure record, not a session: it erased session(s) {session}" in out
    assert "status: erasure record: not a session, nothing to resume" in out
    assert "tether resume" not in out and "spend: not recorded" not in out
    code, out, _ = run(capsys, "audit", "show", record, "--store", store, "--json")
    assert json.loads(out)["status"].startswith("erasure record")


def test_resume_refuses_an_erased_session_and_an_erasure_record_saying_which(
        erased: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, session, record = erased
    code, _, err = run(capsys, "resume", session, "--agent", RECIPE, "--store", store)
    assert code == 1
    assert f"session {session} was erased (its content removed by {record})" in err
    code, _, err = run(capsys, "resume", record, "--agent", RECIPE, "--store", store)
    assert code == 1
    assert f"{record} is an erasure record (it erased 1 session(s)" in err
    assert "not a session: there is nothing to resume" in err


def test_deciding_an_erased_sessions_request_does_not_offer_a_resume(
        erased: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, session, _ = erased
    code, out, _ = run(capsys, "approvals", "list", "--store", store, "--all")
    assert code == 0
    found = re.search(r"(apr_\w+) .* session (\S+ \(erased\))", out)
    assert found and found[2] == f"{session} (erased)", out
    code, out, err = run(capsys, "approvals", "deny", found[1], "--approver", "ops",
                         "--unauthenticated",
                         "--store", store)  # the erasure blanked the request, left it pending
    assert code == 0, err
    assert f"session {session} was erased" in out and "tether resume" not in out
