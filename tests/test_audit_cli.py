"""The operator's commands on a real agent's store: pause in one process, decide from the CLI,
resume from the CLI with ``--agent``; settle a crash; show, list, export, prune and rerun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import audit_app
from audit_helpers import Raw, seed, store_url
from tether.cli import main
from tether.journal.chain import verify_chain
from tether.journal.views.export import event_from_json
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.opening import open_store

APP = audit_app.__file__
AGENT = f"{APP}:agent"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("AUDIT_APP_CRASH_ON", raising=False)
    with store_url(request.param, tmp_path) as made:
        yield made


@pytest.fixture
def sqlite_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("AUDIT_APP_CRASH_ON", raising=False)
    return f"sqlite:///{tmp_path / 'journal.db'}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def start_elsewhere(url: str, **env: str) -> str:
    """Start a session in another process; it pauses for the INV-1 approval."""
    out = subprocess.run([sys.executable, APP, "run", url], capture_output=True, text=True,
                         timeout=60, env={**os.environ, **env}, check=True).stdout.split()
    assert out[1] == "needs_approval", out
    return out[0]


def effects() -> list[str]:
    path = Path(os.environ["AUDIT_APP_EFFECTS"])
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.split()[0] for line in lines]  # the invoices paid, in order


def pending_id(url: str, session_id: str) -> str:
    store = open_store(url)
    try:
        (request,) = StoredApprovals(store).pending(session_id)
    finally:
        store.close()
    return request.id


def events_of(url: str, session_id: str) -> list[tuple[str, dict[str, object]]]:
    store = open_store(url)
    try:
        stored = store.read(session_id)
    finally:
        store.close()
    assert verify_chain(stored) is None
    return [(e.type, dict(e.data)) for e in stored]


# -- approvals and resume across processes ------------------------------------------------------

def test_paused_elsewhere_approved_and_resumed_from_the_cli(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sid = start_elsewhere(url)
    assert effects() == []
    apr = pending_id(url, sid)

    code, out, _ = run(capsys, "approvals", "list", "--store", url)
    assert code == 0
    assert f"{apr}  pending  session {sid}  call c1" in out
    assert 'pay(account="ACCT-111-222", amount=250, invoice="INV-1")' in out
    assert "payments over 100 need a person (billing:big-payments-need-approval)" in out
    assert run(capsys, "approvals", "list", "--session", "other", "--store", url)[1] == \
        "no pending approval requests\n"

    code, out, _ = run(capsys, "approvals", "approve", apr, "--approver", "maria",
                       "--unauthenticated", "--note",
                       "invoice checked", "--store", url)
    assert code == 0
    assert f"approved {apr}: pay in session {sid} (call c1), by maria" in out
    assert f"tether resume {sid} --agent MODULE:ATTR --store {url}" in out
    for verb in ("approve", "deny"):
        code, _, err = run(capsys, "approvals", verb, apr, "--approver", "sam",
                           "--unauthenticated", "--store", url)
        assert code == 1 and f"approval {apr} is already approved" in err
    code, _, err = run(capsys, "approvals", "approve", "apr_nope", "--approver", "sam",
                       "--unauthenticated",
                       "--store", url)
    assert code == 1 and "no approval request 'apr_nope'" in err
    assert "no pending" in run(capsys, "approvals", "list", "--store", url)[1]
    code, out, _ = run(capsys, "approvals", "list", "--all", "--store", url)
    assert f"{apr}  approved by maria (invoice checked)" in out

    code, out, err = run(capsys, "resume", sid, "--agent", AGENT, "--store", url)
    assert code == 0, err
    assert out == f"stop reason: finished\nanswer: {audit_app.ANSWER}\n"
    assert effects() == ["INV-1", "INV-2"]  # the approved call ran once; nothing repeated
    granted = [d for t, d in events_of(url, sid) if t == "approval.granted"]
    assert granted[0]["approver"] == "maria" and granted[0]["note"] == "invoice checked"

    code, _, err = run(capsys, "resume", sid, "--agent", AGENT, "--store", url)
    assert code == 1 and "not paused; it ended (finished)" in err
    assert effects() == ["INV-1", "INV-2"]


def test_a_denied_call_is_refused_on_resume(sqlite_url: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sid, _ = audit_app.start(sqlite_url)
    apr = pending_id(sqlite_url, sid)
    code, out, _ = run(capsys, "approvals", "deny", apr, "--approver", "maria",
                       "--unauthenticated", "--note",
                       "duplicate invoice", "--store", sqlite_url)
    assert code == 0 and f"denied {apr}" in out and "to refuse the call" in out
    code, out, _ = run(capsys, "resume", sid, "--agent", AGENT, "--store", sqlite_url)
    assert code == 0 and "stop reason: finished" in out
    assert effects() == ["INV-2"]
    refused = [d for t, d in events_of(sqlite_url, sid) if t == "approval.refused"]
    assert refused[0]["why"] == "denied by maria: duplicate invoice"


def test_an_expired_request_cannot_be_approved_but_can_be_closed(
        sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sid, _ = audit_app.start(sqlite_url)
    apr = pending_id(sqlite_url, sid)
    store = open_store(sqlite_url)
    assert store.update_approval(apr, "pending", {"expires_at": time.time() - 1})
    store.close()
    assert "  expired  session" in run(capsys, "approvals", "list", "--store", sqlite_url)[1]
    code, _, err = run(capsys, "approvals", "approve", apr, "--approver", "maria",
                       "--unauthenticated", "--store",
                       sqlite_url)
    assert code == 1 and f"approval {apr} expired" in err
    code, out, err = run(capsys, "approvals", "deny", apr, "--approver", "maria",
                         "--unauthenticated", "--store",
                         sqlite_url)
    assert code == 0 and f"denied {apr}" in out and "had already expired" in err
    assert run(capsys, "approvals", "approve", apr, "--approver", " ",
               "--unauthenticated", "--store",
               sqlite_url)[0] == 2


# -- crashes and settling -----------------------------------------------------------------------

@pytest.mark.parametrize("action", ["skip", "retry"])
def test_a_crash_mid_effect_is_settled_and_resumed_from_the_cli(
        action: str, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sid = start_elsewhere(url)
    assert run(capsys, "approvals", "approve", pending_id(url, sid), "--approver", "maria",
               "--unauthenticated",
               "--store", url)[0] == 0
    crashed = subprocess.run(
        [sys.executable, "-m", "tether", "resume", sid, "--agent", AGENT, "--store", url],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "AUDIT_APP_CRASH_ON": "INV-1"})
    assert crashed.returncode == 3, crashed.stderr  # died right after paying INV-1
    assert effects() == ["INV-1"]

    code, out, _ = run(capsys, "resume", sid, "--agent", AGENT, "--store", url)
    assert code == 0
    assert "stop reason: uncertain_effect" in out
    assert "interrupted: c1: may or may not have taken effect" in out
    assert f"next: tether settle {sid} c1 retry|skip --operator NAME --agent {AGENT}" in out
    assert effects() == ["INV-1"]  # not silently repeated
    code, out, _ = run(capsys, "audit", "show", sid, "--store", url)
    assert "paused (uncertain_effect): interrupted calls c1" in out

    code, _, err = run(capsys, "settle", sid, "c9", action, "--operator", "ops", "--agent",
                       AGENT, "--store", url)
    assert code == 1 and "interrupted calls of this session: c1" in err
    code, out, _ = run(capsys, "settle", sid, "c1", action, "--operator", "ops", "--note",
                       "checked the ledger", "--agent", AGENT, "--store", url)
    assert code == 0 and f"settled c1: {action} by ops" in out
    assert f"tether resume {sid} --agent {AGENT} --store {url}" in out

    code, out, _ = run(capsys, "resume", sid, "--agent", AGENT, "--store", url)
    assert code == 0 and "stop reason: finished" in out
    expected = ["INV-1", "INV-2"] if action == "skip" else ["INV-1", "INV-1", "INV-2"]
    assert effects() == expected  # a retry repeats the effect because the operator said so
    settled = [d for t, d in events_of(url, sid) if t == "effect.settled"]
    assert settled == [{"call_id": "c1", "action": action, "operator": "ops",
                        "note": "checked the ledger"}]
    code, out, _ = run(capsys, "audit", "show", sid, "--store", url)
    assert f"settled c1: {action} by ops: checked the ledger" in out
    assert run(capsys, "audit", "verify", "--store", url)[0] == 0


# -- the --agent recipe -------------------------------------------------------------------------

def test_agent_may_be_a_module_attribute_or_a_factory(
        sqlite_url: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    first, _ = audit_app.start(sqlite_url)
    second, _ = audit_app.start(sqlite_url)
    approvals = StoredApprovals(open_store(sqlite_url))
    for request in approvals.pending():
        approvals.approve(request.id, approver="maria")
    assert run(capsys, "resume", first, "--agent", "audit_app:agent", "--store",
               sqlite_url)[0] == 0
    code, out, _ = run(capsys, "resume", second, "--agent", "audit_app:build", "--store",
                       sqlite_url)
    assert code == 0 and "finished" in out


@pytest.mark.parametrize(("spec", "message"), [
    ("audit_app", "must be MODULE:ATTRIBUTE"),
    ("audit_app:nothing", "has no attribute 'nothing'"),
    ("no_such_module_xyz:agent", "cannot import 'no_such_module_xyz'"),
    ("audit_app:SCRIPT", "is a list, not a tether Agent"),
    ("missing/file.py:agent", "no file missing/file.py"),
])
def test_a_bad_agent_spec_is_a_usage_error(spec: str, message: str, sqlite_url: str,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    sid, _ = audit_app.start(sqlite_url)
    code, _, err = run(capsys, "resume", sid, "--agent", spec, "--store", sqlite_url)
    assert code == 2 and message in err, err


def test_resume_of_an_unknown_session_and_a_recipe_with_its_own_store(
        sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit_app.start(sqlite_url)
    code, _, err = run(capsys, "resume", "nope", "--agent", AGENT, "--store", sqlite_url)
    assert code == 1 and "no session 'nope'" in err and "tether audit list" in err
    recipe = tmp_path / "own.py"
    recipe.write_text(f"import audit_app\nagent = audit_app.build({sqlite_url!r})\n")
    other = f"sqlite:///{tmp_path / 'other.db'}"
    code, _, err = run(capsys, "resume", "nope", "--agent", f"{recipe}:agent", "--store", other)
    assert code == 2 and f"the recipe has its own store ({sqlite_url})" in err  # refused
    assert "drop --store" in err and not Path(tmp_path / "other.db").exists()


# -- show, list, export -------------------------------------------------------------------------

def test_show_is_a_readable_timeline(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sid, _ = audit_app.start(sqlite_url)
    code, out, _ = run(capsys, "audit", "show", sid, "--store", sqlite_url)
    assert code == 0
    assert "paused (needs_approval): decide with `tether approvals list --session" in out
    StoredApprovals(open_store(sqlite_url)).approve(pending_id(sqlite_url, sid),
                                                     approver="maria", note="ok")
    audit_app.build(sqlite_url).resume(sid)
    code, out, _ = run(capsys, "audit", "show", sid, "--store", sqlite_url)
    assert code == 0
    for expected in [
        f"session {sid}",
        "agent billing, model scripted; user u-7, tenant acme, roles clerk",
        "task: Pay the open invoices of order A1",
        '  context: {"channel": "cli"}',
        "chain: verified, head ",
        "status: ended (finished)",
        '    3  model turn 1: (no text) (',
        '         calls lookup(order="A1") [c0]',
        "    4  decision c0 lookup(order=\"A1\"): allow by billing:reading",
        "require_approval by billing:big-payments-need-approval: payments over 100 need a person",
        "paused: needs_approval: 1 call(s) wait for approval; waiting: apr_",
        "resumed after a pause",
        "used: approved by maria: ok; c1 runs",
        "started c1 pay (side effect; durable before it ran)",
        'result c1 pay: ok: "paid INV-1: 250"',
        "mask [account] by billing:account-numbers-stay-out-of-the-journal",
        'ended: finished',
        f'answer: "{audit_app.ANSWER}"',
        "spend (ended): 832 tokens, $0, 4 steps, 3 tool calls",
    ]:
        assert expected in out, expected
    assert "ACCT-333-444" not in out  # what the policy masked stays masked
    code, _, err = run(capsys, "audit", "show", "nope", "--store", sqlite_url)
    assert code == 1 and "no session 'nope'" in err
    raw = Raw(sqlite_url)
    raw.set(sid, 5, "type", "tool.error")
    raw.close()
    code, out, _ = run(capsys, "audit", "show", sid, "--store", sqlite_url)
    assert code == 1 and "chain: BROKEN at seq 5: edited:" in out


def test_list_shows_sessions_and_filters_by_age(sqlite_url: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    new, _ = audit_app.start(sqlite_url, tenant="globex")
    seed(sqlite_url, "old-session", time.time() - 10 * 86400)
    code, out, _ = run(capsys, "audit", "list", "--store", sqlite_url)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["SESSION", "AGENT", "TENANT", "STATUS", "EVENTS",
                                              "UPDATED"]
    assert lines[1].split()[:5] == [new, "billing", "globex", "paused", "10"]  # newest first
    assert lines[2].split()[:5] == ["old-session", "archived", "old-co", "open", "4"]
    assert lines[-1] == "2 sessions"
    code, out, _ = run(capsys, "audit", "list", "--since", "7d", "--store", sqlite_url)
    assert "old-session" not in out and new in out and out.endswith("1 session\n")
    assert run(capsys, "audit", "list", "--since", "2999-01-01", "--store",
               sqlite_url)[1] == "no sessions match\n"
    # filters by status, agent and time, and the same rows as JSON
    code, out, _ = run(capsys, "audit", "list", "--status", "paused", "--store", sqlite_url)
    assert new in out and "old-session" not in out
    code, out, _ = run(capsys, "audit", "list", "--agent", "archived", "--until", "2d",
                       "--json", "--store", sqlite_url)
    (row,) = json.loads(out)
    assert row["session_id"] == "old-session" and row["tenant_id"] == "old-co"
    assert row["status"] == "open" and row["events"] == 4
    code, out, err = run(capsys, "audit", "list", "--status", "lost", "--store", sqlite_url)
    assert code == 2 and "invalid choice" in err


def test_ids_may_be_given_by_any_unique_start(sqlite_url: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The README prints ids shortened (``5c1f…``): the CLI takes them back that way."""
    sid, _ = audit_app.start(sqlite_url)
    for given in (sid[:6], sid[:6] + "…", sid[:6] + "..."):
        code, out, _ = run(capsys, "audit", "show", given, "--store", sqlite_url)
        assert code == 0 and f"session {sid}" in out
    apr = pending_id(sqlite_url, sid)
    code, out, _ = run(capsys, "approvals", "approve", apr[:8], "--approver", "maria",
                       "--unauthenticated",
                       "--store", sqlite_url)
    assert code == 0 and f"approved {apr}" in out
    seed(sqlite_url, sid[:6] + "-twin", time.time())  # now the prefix starts two sessions
    code, _, err = run(capsys, "audit", "show", sid[:6], "--store", sqlite_url)
    assert code == 2 and "is the start of 2 session ids" in err and "give more of it" in err
    code, _, err = run(capsys, "audit", "show", "zzzz", "--store", sqlite_url)
    assert code == 1 and "no session 'zzzz'" in err


def test_show_json_carries_the_verdict_and_the_events_as_exported(
        sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sid, _ = audit_app.start(sqlite_url)
    code, out, _ = run(capsys, "audit", "show", sid, "--json", "--store", sqlite_url)
    shown = json.loads(out)
    assert code == 0 and shown["session_id"] == sid and shown["chain"]["verified"] is True
    assert shown["status"].startswith("paused (needs_approval)")
    events = [event_from_json(e) for e in shown["events"]]
    assert verify_chain(events) is None and shown["chain"]["head"] == events[-1].hash


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("tether ") and out.strip() != "tether"


def test_export_one_session_to_stdout(sqlite_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    sid, _ = audit_app.start(sqlite_url)
    audit_app.start(sqlite_url)
    code, out, err = run(capsys, "audit", "export", "--session", sid, "--store", sqlite_url)
    assert code == 0 and "exported 10 events of 1 session to stdout" in err
    *lines, trailer = [json.loads(line) for line in out.splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, 11))
    assert {e["session_id"] for e in lines} == {sid}
    assert trailer == {"trailer": {"session_id": sid, "count": 10, "head": lines[-1]["hash"]}}
    code, _, err = run(capsys, "audit", "export", "--session", "nope", "--store", sqlite_url)
    assert code == 1 and "no session 'nope'" in err


def test_store_defaults_and_missing_stores(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TETHER_STORE", raising=False)
    code, _, err = run(capsys, "audit", "list")
    assert code == 2 and "no store at tether.db (from the default store)" in err
    assert not (tmp_path / "tether.db").exists()  # reading never creates a store
    seed("sqlite:///tether.db", "s1", time.time())
    assert "s1" in run(capsys, "audit", "list")[1]
    monkeypatch.setenv("TETHER_STORE", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    code, _, err = run(capsys, "audit", "verify")
    assert code == 2 and "(from TETHER_STORE)" in err
    assert run(capsys, "audit", "verify", "--store", "nosuch://x")[0] == 2
    assert run(capsys, "audit")[0] == 2 and run(capsys, "approvals")[0] == 2


# -- prune --------------------------------------------------------------------------------------

def test_prune_removes_whole_old_sessions_and_keeps_the_rest_verifiable(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    kept, _ = audit_app.start(url)
    old = time.time() - 40 * 86400
    seed(url, "old-1", old)
    seed(url, "old-2", old + 60)
    store = open_store(url)
    store.put_approval({"id": "apr_old", "session_id": "old-1", "status": "pending"})
    store.close()

    code, out, _ = run(capsys, "store", "prune", "--before", "30d", "--dry-run", "--store", url)
    assert code == 0 and "would prune old-1" in out and "would prune old-2" in out
    assert "would prune 2 sessions last written before" in out and kept not in out
    assert "3 sessions" in run(capsys, "audit", "list", "--store", url)[1]

    assert run(capsys, "store", "prune", "--before", "2000-01-01", "--store", url)[1] == \
        "pruned 0 sessions last written before 2000-01-01 00:00:00Z; 3 kept\n"
    code, out, _ = run(capsys, "store", "prune", "--before", "30d", "--store", url)
    assert code == 0 and out.startswith("pruned 2 sessions last written before ")
    assert out.endswith("; 1 kept\n")
    code, out, _ = run(capsys, "audit", "verify", "--store", url)
    assert code == 0 and f"ok      {kept}  10 events" in out and "1 session checked" in out
    store = open_store(url)
    assert store.get_approval("apr_old") is None and store.read("old-1") == []
    store.close()
    code, _, err = run(capsys, "store", "prune", "--before", "last tuesday", "--store", url)
    assert code == 2 and "cannot read 'last tuesday' as a time" in err


# -- rerun: policy what-if ----------------------------------------------------------------------

@pytest.fixture
def policies(tmp_path: Path) -> tuple[str, str]:
    strict, same = tmp_path / "strict.yaml", tmp_path / "same.yaml"
    strict.write_text(audit_app.STRICT_YAML)
    same.write_text(audit_app.POLICY_YAML)
    return str(strict), str(same)


def test_rerun_lists_every_decision_a_new_policy_would_change(
        url: str, policies: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    strict, same = policies
    finished, _ = audit_app.start(url)
    paused, _ = audit_app.start(url)
    StoredApprovals(open_store(url)).approve(pending_id(url, finished), approver="maria")
    audit_app.build(url).resume(finished)

    code, out, _ = run(capsys, "what-if", "--policy", strict, "--store", url)
    assert code == 1
    blocks = out.split(f"\n{paused}")[0]
    assert f"{finished} seq 8 (" in blocks and ") pay [c1]" in blocks
    assert ("require_approval (billing:big-payments-need-approval) -> deny "
            "(strict:no-payments-over-30): payments over 30 are frozen") in out
    assert ("mask [account] (billing:account-numbers-stay-out-of-the-journal) -> deny "
            "(strict:no-payments-over-30)") in out
    assert "note: account masked in the journal; the new policy saw [masked]" in out
    assert f"{paused} seq 8 (" in out
    assert out.rstrip().endswith(f"3 of 5 decisions in 2 sessions would change under {strict}")

    code, out, _ = run(capsys, "what-if", "--policy", same, "--since", "7d", "--store", url)
    assert code == 0 and out == f"0 of 5 decisions in 2 sessions would change under {same}\n"
    code, out, _ = run(capsys, "what-if", "--policy", strict, "--session", paused, "--store", url)
    assert code == 1 and finished not in out and "1 of 2 decisions in 1 session" in out
    code, out, _ = run(capsys, "what-if", "--policy", "tether.policy.base:AllowAll", "--store",
                       url)
    assert code == 1 and "-> allow (allow-all)" in out and "3 of 5 decisions" in out


def test_rerun_refuses_bad_policies_and_skips_tampered_sessions(
        sqlite_url: str, policies: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, same = policies
    sid, _ = audit_app.start(sqlite_url)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nrules: [{effect: maybe}]\n")
    code, _, err = run(capsys, "what-if", "--policy", str(bad), "--store", sqlite_url)
    assert code == 2 and "bad.yaml" in err
    assert run(capsys, "what-if", "--policy", str(tmp_path / "none.yaml"), "--store",
               sqlite_url)[0] == 2
    assert run(capsys, "what-if", "--policy", "tether.policy.base:Subject", "--store",
               sqlite_url)[0] == 2
    raw = Raw(sqlite_url)
    raw.set(sid, 8, "ts", 1.0)
    raw.close()
    code, out, err = run(capsys, "what-if", "--policy", same, "--store", sqlite_url)
    assert code == 1 and f"skipped session {sid}: seq 8: edited" in err
    assert "1 session(s) skipped: broken chain" in out


def test_show_gives_the_input_estimates_error_against_reported_usage(
        sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A provider whose tokenizer counts half what tether estimated: the timeline shows each
    turn's estimate beside the report, and the whole session's error."""
    from dataclasses import replace

    from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall, Usage
    from tether.tools import Calculator

    class CountsHalf(ScriptedModel):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            response = await super().complete(request)
            half = (request.input_tokens_estimate or 0) // 2
            return replace(response, usage=Usage(half, response.usage.output_tokens))

    model = CountsHalf([ModelResponse(tool_calls=(ToolCall("c1", "calculator",
                                                           {"expression": "2+2"}),)), "4"])
    result = Agent(model=model, reasoning=ReAct(), tools=[Calculator()],
                   store=sqlite_url).run("2+2?")
    code, out, _ = run(capsys, "audit", "show", result.session_id, "--store", sqlite_url)
    assert code == 0
    turns = [line for line in out.splitlines() if "model turn" in line]
    assert len(turns) == 2 and all("input estimate" in t for t in turns)
    first = int(turns[0].rsplit("(+", 1)[1].split("%")[0])
    assert 98 <= first <= 102  # the first call: all of it estimated, twice what was used
    (summary,) = [line for line in out.splitlines() if line.startswith("input estimate:")]
    assert "reported over 2 calls (+" in summary
    # the second: the provider's count of the first call taken as it is, the rest estimated
    second = int(turns[1].rsplit("(+", 1)[1].split("%")[0])
    assert 0 < second < first / 2
