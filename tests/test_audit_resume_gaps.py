"""Resuming calls whose arguments the journal does not hold.

A value the policy hides from the journal (``MASK`` with ``journal``, or ``REQUIRE_APPROVAL``
with ``fields``) is redacted in *every* sealed event, including the model response that holds the
call — so a session restored from the store in another process does not know that argument. It
must then fail closed: refuse the call with a reason the model can act on, never run it with the
placeholder. With ``Agent(keep_hidden_arguments=True)`` the arguments are kept in the store's
private table instead, apart from the journal, and the call runs — if they are still the very
arguments the policy decided on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import audit_app
from tether import Agent
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.base import Store
from tether.store.opening import open_store

HIDDEN_FROM_APPROVERS = audit_app.POLICY_YAML.replace(
    "    reason: payments over 100 need a person\n",
    "    reason: payments over 100 need a person\n    fields: [account]\n")


def paid(effects: Path) -> list[str]:
    return effects.read_text().splitlines() if effects.exists() else []


def test_an_approval_that_hides_fields_is_refused_not_misapplied_in_another_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(effects))
    url = f"sqlite:///{tmp_path / 'j.db'}"
    session = audit_app.build(url, HIDDEN_FROM_APPROVERS).session("pay")
    assert session.run().stop_reason == "needs_approval"
    approvals = StoredApprovals(open_store(url))
    (request,) = approvals.pending(session.id)
    assert request.arguments["account"] == "[masked]"  # hidden from the approver, as designed
    approvals.approve(request.id, approver="maria")
    # a fresh recipe, as another process would build it: only the store connects them
    result = audit_app.build(url, HIDDEN_FROM_APPROVERS).resume(session.id)
    assert not any("[redacted]" in line or "[masked]" in line for line in paid(effects))
    refused = [r for s in result.trajectory.steps for r in s.results if r.status == "denied"]
    assert refused and "hidden from the journal" in refused[0].content


def test_a_retried_call_never_runs_with_a_redacted_argument(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(effects))
    url = f"sqlite:///{tmp_path / 'j.db'}"
    sid, _ = audit_app.start(url)
    approvals = StoredApprovals(open_store(url))
    for request in approvals.pending(sid):
        approvals.approve(request.id, approver="maria")
    crashed = subprocess.run(
        [sys.executable, "-m", "tether", "resume", sid, "--agent", f"{audit_app.__file__}:agent",
         "--store", url], capture_output=True, text=True, timeout=60,
        env={**os.environ, "AUDIT_APP_CRASH_ON": "INV-2"})
    assert crashed.returncode == 3, crashed.stderr
    agent = audit_app.build(url)
    assert agent.resume(sid).stop_reason == "uncertain_effect"
    agent.load(sid).settle("c2", "retry", operator="ops", note="not in the ledger")
    agent.resume(sid)
    assert "INV-2 [masked]" not in paid(effects)
    assert not any("[masked]" in line or "[redacted]" in line for line in paid(effects))


def keeping(url: str) -> Agent:
    """The recipe with hidden arguments kept; built afresh, as another process would."""
    return audit_app.build(url, HIDDEN_FROM_APPROVERS, keep_hidden_arguments=True)


def paused_keeping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Store, str]:
    """A session paused on INV-1's approval: its store URL, the store and the session id."""
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    url = f"sqlite:///{tmp_path / 'j.db'}"
    session = keeping(url).session("pay")
    assert session.run().stop_reason == "needs_approval"
    return url, open_store(url), session.id


def test_kept_hidden_arguments_let_the_approved_call_run_in_another_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, store, sid = paused_keeping(tmp_path, monkeypatch)
    approvals = StoredApprovals(store)
    (request,) = approvals.pending(sid)
    assert request.arguments["account"] == "[masked]"
    assert store.get_private(sid, request.call_id) == {
        "invoice": "INV-1", "amount": 250, "account": "ACCT-111-222"}
    approvals.approve(request.id, approver="maria")
    result = keeping(url).resume(sid)
    assert result.stop_reason == "finished", result.stop_detail
    effects = paid(tmp_path / "effects.txt")
    assert effects == ["INV-1 ACCT-111-222", "INV-2 ACCT-333-444"]  # each once, for real
    stored = "\n".join(e.json_text or json.dumps(e.data) for e in store.read(sid))
    assert "ACCT-111-222" not in stored and "ACCT-333-444" not in stored
    assert store.get_private(sid, request.call_id) is None  # dropped when it ended


def test_kept_arguments_that_differ_from_what_was_decided_are_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, store, sid = paused_keeping(tmp_path, monkeypatch)
    (request,) = StoredApprovals(store).pending(sid)
    store.put_private(sid, request.call_id,
                      {"invoice": "INV-1", "amount": 250, "account": "ACCT-EVIL"})
    StoredApprovals(store).approve(request.id, approver="maria")
    result = keeping(url).resume(sid)
    assert not any("INV-1" in line for line in paid(tmp_path / "effects.txt"))
    refused = [r for s in result.trajectory.steps for r in s.results if r.status == "denied"]
    assert refused and "not the ones the policy decided on" in refused[0].content


def test_keeping_hidden_arguments_needs_a_store() -> None:
    with pytest.raises(ValueError, match="has none: give it one"):
        audit_app.build(None, keep_hidden_arguments=True)
