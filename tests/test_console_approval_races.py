"""The inbox's approvals across processes, crashes and races, and the guide's rules file.

A console approval, then a resuming process killed (``os._exit``, no cleanup, like ``kill -9``)
right after the grant is durable, then a resume: the transfer runs once and the approval is used
once. Two approvers racing: the loser gets a conflict. SQLite and PostgreSQL, real agents.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import approval_crash_app
import console_inbox_helpers as h
from audit_helpers import store_url
from console_inbox_helpers import (
    RULES,
    current,
    only_request,
    post,
    refused_and_recorded,
)
from tether.runtime.approvals.requests import StoredApprovals
from tether.runtime.approvals.rules import ApprovalRules
from tether.store.base import Store
from tether.store.opening import open_store
from tether.vocabulary import EventType


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


# -- double consumption across a crash and a resume ---------------------------------------

def _app(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, approval_crash_app.__file__, *argv],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


@pytest.mark.parametrize("point", ["grant", "consume"])
def test_a_console_approval_runs_the_call_once_across_a_crash_and_a_resume(
        url: str, store: Store, tmp_path: Path, point: str) -> None:
    ledger = tmp_path / "effects.txt"
    started = _app("run", url, str(ledger))
    sid, reason = started.stdout.split()
    assert reason == "needs_approval", started.stderr
    aid = only_request(store, sid)
    anyone = h.client(store)
    seen = h.shown_version(anyone.get("/inbox").text, aid)
    assert post(anyone, aid, verdict="approve", note="go", seen=seen).status_code == 303
    crashed = _app("resume", url, str(ledger), sid, point)  # dies (exit 9, no cleanup) there
    assert crashed.returncode == 9, crashed.stderr
    assert not ledger.exists()  # killed after the grant was durable, before the transfer
    assert _app("resume", url, str(ledger), sid).stdout.strip() == "finished"
    assert ledger.read_text().splitlines() == ["transfer 250"]
    record = store.get_approval(aid)
    assert record is not None and record["status"] == "used"
    assert record["used_by"] == f"{sid}/t1"
    events = store.read(sid)
    assert [e.data["approver"] for e in events if e.type == EventType.APPROVAL_GRANTED] == \
        ["operator"]
    assert len([e for e in events if e.type == EventType.TOOL_RESULT
                and e.data["call_id"] == "t1"]) == 1
    again = post(anyone, aid, verdict="approve", seen=current(store, aid))
    assert again.status_code == 409 and "already used" in again.text


def test_a_resume_killed_by_sigkill_mid_call_runs_the_approved_call_at_most_once(
        url: str, store: Store, tmp_path: Path) -> None:
    ledger = tmp_path / "effects.txt"
    sid, reason = _app("run", url, str(ledger)).stdout.split()
    assert reason == "needs_approval"
    aid = only_request(store, sid)
    anyone = h.client(store)
    seen = h.shown_version(anyone.get("/inbox").text, aid)
    assert post(anyone, aid, verdict="approve", seen=seen).status_code == 303
    worker = subprocess.Popen(  # the transfer holds for a minute before it moves anything
        [sys.executable, approval_crash_app.__file__, "resume", url, str(ledger), sid],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "CRASH_APP_HOLD": "60"})
    try:
        deadline = time.monotonic() + 60
        while not any(e.type == EventType.TOOL_STARTED for e in store.read(sid)):
            assert worker.poll() is None and time.monotonic() < deadline, worker.stderr
            time.sleep(0.05)  # polling the journal for the event, not a timing margin
        types = [e.type for e in store.read(sid)]
        assert EventType.APPROVAL_GRANTED in types and EventType.TOOL_RESULT not in types
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=60)
    assert worker.returncode == -signal.SIGKILL and not ledger.exists()
    # the journal cannot say whether the transfer happened: an operator looks, and settles
    assert _app("resume", url, str(ledger), sid).stdout.strip() == "uncertain_effect"
    approval_crash_app.build(url, str(ledger)).load(sid).settle(
        "t1", "retry", operator="ops", note="the bank shows no transfer")
    assert _app("resume", url, str(ledger), sid).stdout.strip() == "finished"
    assert ledger.read_text().splitlines() == ["transfer 250"]
    record = store.get_approval(aid)
    assert record is not None and record["status"] == "used" and record["used_by"] == f"{sid}/t1"
    assert len([e for e in store.read(sid) if e.type == EventType.APPROVAL_GRANTED]) == 1


def test_a_break_glass_approval_is_marked_in_the_sessions_journal(url: str,
                                                                  store: Store) -> None:
    sid = h.paused(url, tool_name="refund")
    aid = only_request(store, sid)
    olga = h.client(store, "olga@acme.test", RULES)
    assert post(olga, aid, verdict="approve", seen=current(store, aid),
                break_glass="1").status_code == 303
    assert h.agent(url, "refund").resume(sid).stop_reason.value == "finished"
    (granted,) = [e.data for e in store.read(sid) if e.type == EventType.APPROVAL_GRANTED]
    assert granted.get("break_glass") is True
    assert granted.get("approver_auth") == f"header:{h.HEADER}"


def test_the_guides_rules_file_loads_and_says_what_it_claims(tmp_path: Path) -> None:
    guide = Path(__file__).parents[1] / "docs/guide/console-approvals.md"
    (block,) = re.findall(r"```yaml\n(.*?)```", guide.read_text(encoding="utf-8"), re.S)
    (tmp_path / "approvals.yaml").write_text(block, encoding="utf-8")
    rules = ApprovalRules.load(tmp_path / "approvals.yaml")
    alice = rules.identity("alice@example.com", "header:X")
    ops = rules.identity("ops@example.com", "header:X")
    assert alice is not None and alice.tenant_id == "acme" and alice.roles == {"finance"}
    assert ops is not None and ops.all_tenants and rules.may_break_glass(ops)
    assert rules.identity("eve@example.com", "header:X") is None
    assert not rules.self_approval and not rules.unauthenticated
    assert rules.approve[0].covers("wire_eu") and not rules.approve[0].covers("transfer")


class Racing:
    """A store where another approver's denial lands between decide()'s checks and its write."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.raced = inner, False

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def update_approval(self, approval_id: str, expected: str, changes: dict[str, object]) -> bool:
        if changes.get("status") == "approved" and not self.raced:
            self.raced = True
            StoredApprovals(self.inner).deny(approval_id, approver="carol@acme.test")
        return bool(self.inner.update_approval(approval_id, expected, changes))


def test_losing_a_race_to_another_approver_is_a_conflict(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url))
    alice = h.client(Racing(store), "alice@acme.test", RULES)  # type: ignore[arg-type]
    lost = post(alice, aid, verdict="approve", seen=h.shown_version(alice.get("/inbox").text, aid))
    assert lost.status_code == 409 and "decided by someone else meanwhile" in lost.text
    assert store.get_approval(aid)["status"] == "denied"  # type: ignore[index]


def test_losing_a_race_is_recorded_as_an_attempt(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url))
    alice = h.client(Racing(store), "alice@acme.test", RULES)  # type: ignore[arg-type]
    post(alice, aid, verdict="approve", seen=h.shown_version(alice.get("/inbox").text, aid))
    refused_and_recorded(store, aid, "meanwhile")
