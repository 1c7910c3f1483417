"""Deciding an approval as a person: every check of ``deciding.decide``, attacked, on every store.

Each attack is refused, changes nothing, and leaves a trace: an attempt on the request's record
and an anchor of kind "attempt" in the store's chain. What is allowed is journaled with how the
approver was established (and break-glass, where it was used), and runs once on resume.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether import (
    Agent,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    tool,
)
from tether.journal.anchors import check_anchors
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.deciding import (
    ApprovalNotFound,
    ApprovalRefused,
    decide,
    pending,
    version_of,
)
from tether.runtime.approvals.identity import (
    OS_USER,
    UNAUTHENTICATED,
    Identity,
    header_method,
)
from tether.runtime.approvals.requests import ALL_TENANTS, StoredApprovals
from tether.runtime.approvals.rules import ApprovalRules
from tether.runtime.lifecycle.session import SessionEnded
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore

from conftest import postgres_store

refunds: list[int] = []


@tool(side_effect=True)
def refund(amount: int) -> str:
    """Refund an amount."""
    refunds.append(amount)
    return f"refunded {amount}"


class AskForRefunds:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "refunds need a person", "refunds")
        return Decision(Effect.ALLOW, "ok", "refunds")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        made: Store = MemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "t.db")
    else:
        made = postgres_store()
    yield made
    made.close()


def agent(store: Store, tenant: str | None = "acme", ttl: float = 3600) -> Agent:
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("t1", "refund",
                                                              {"amount": 70}),)), "done"])
    return Agent(model=model, reasoning=ReAct(), tools=[refund], store=store, tenant_id=tenant,
                 policy=AskForRefunds(), approval_ttl=ttl, name="desk")


def paused(store: Store, user: str | None = "carol", **kwargs: Any) -> tuple[Agent, str, str]:
    """An agent, its paused session's id and the pending request's id."""
    desk = agent(store, **kwargs)
    session = desk.session("refund 70", user_id=user)
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = StoredApprovals(store).pending(session.id)
    return desk, session.id, request.id


ALICE = Identity("alice@example.com", header_method("X-Email"), "acme", frozenset({"finance"}))


def attempts(store: Store, approval_id: str) -> list[dict[str, Any]]:
    record = store.get_approval(approval_id)
    assert record is not None
    return list(record.get("attempts") or ())


def attempt_anchors(store: Store, approval_id: str) -> list[dict[str, Any]]:
    return [json.loads(a.body)["attempt"] for a in store.anchors()
            if a.kind == "attempt" and json.loads(a.body)["id"] == approval_id]


def refused(store: Store, approval_id: str, verdict: str = "approve", **kwargs: Any) -> str:
    """Decide, expecting a refusal that is recorded on the request and anchored."""
    before = len(attempts(store, approval_id))
    with pytest.raises(ApprovalRefused) as caught:
        decide(store, approval_id, verdict, **{"identity": ALICE, **kwargs})  # type: ignore[arg-type]
    after = attempts(store, approval_id)
    assert len(after) == before + 1 and after[-1]["verdict"] == verdict
    assert after[-1]["why"] == caught.value.why
    assert attempt_anchors(store, approval_id)[-1] == after[-1]
    return str(caught.value)


def test_an_approval_is_journaled_with_how_its_approver_was_established(store: Store) -> None:
    refunds.clear()
    desk, session_id, approval_id = paused(store)
    decided = decide(store, approval_id, "approve", identity=ALICE, note="checked")
    assert (decided.approver, decided.approver_auth, decided.break_glass) == (
        "alice@example.com", "header:X-Email", False)
    assert desk.resume(session_id).stop_reason is StopReason.FINISHED
    assert refunds == [70]
    (granted,) = [e for e in store.read(session_id) if e.type == "approval.granted"]
    assert granted.data["approver"] == "alice@example.com"
    assert granted.data["approver_auth"] == "header:X-Email"
    assert "break_glass" not in granted.data
    assert check_anchors(store.anchors(), {session_id: store.read(session_id)},
                         store.list_approvals(), None, store.anchor_lanes()) == []


def test_self_approval_is_refused_unless_the_rules_allow_it(store: Store) -> None:
    _desk, _sid, approval_id = paused(store, user="alice@example.com")
    assert "self-approval is refused" in refused(store, approval_id)
    assert "self-approval is refused" in refused(store, approval_id, "deny")
    assert StoredApprovals(store).get(approval_id).status == "pending"  # type: ignore[union-attr]
    allowed = decide(store, approval_id, "approve", identity=ALICE,
                     rules=ApprovalRules(self_approval=True))
    assert allowed.status == "approved"


def test_a_tool_that_needs_a_role_refuses_an_approver_without_it(store: Store) -> None:
    _desk, _sid, approval_id = paused(store)
    rules = ApprovalRules(approve=(ApprovalRules.from_mapping(
        {"approve": [{"tools": ["ref*"], "roles": ["treasury"]}]}).approve))
    message = refused(store, approval_id, rules=rules)
    assert "only by the roles ['treasury']" in message and "has ['finance']" in message
    treasurer = Identity("tom", OS_USER, ALL_TENANTS, frozenset({"treasury"}))
    assert decide(store, approval_id, "approve", identity=treasurer, rules=rules).approver == "tom"


def test_break_glass_needs_its_role_and_is_marked_everywhere(store: Store) -> None:
    refunds.clear()
    desk, session_id, approval_id = paused(store, user="alice@example.com")
    rules = ApprovalRules.from_mapping({"break_glass": ["oncall"]})
    assert "may not break glass" in refused(store, approval_id, rules=rules, break_glass=True)
    oncall = Identity("alice@example.com", OS_USER, "acme", frozenset({"oncall"}))
    decided = decide(store, approval_id, "approve", identity=oncall, rules=rules,
                     break_glass=True, note="outage")
    assert decided.break_glass and store.get_approval(approval_id)["break_glass"] is True  # type: ignore[index]
    decision_anchor = [json.loads(a.body) for a in store.anchors() if a.kind == "approval"][-1]
    assert decision_anchor["break_glass"] is True
    desk.resume(session_id)
    (granted,) = [e for e in store.read(session_id) if e.type == "approval.granted"]
    assert granted.data["break_glass"] is True and refunds == [70]


def test_a_name_no_one_vouched_for_is_refused_where_the_rules_say_so(store: Store) -> None:
    _desk, _sid, approval_id = paused(store)
    anyone = Identity("bob", UNAUTHENTICATED)
    strict = ApprovalRules(unauthenticated=False)
    assert "is not authenticated" in refused(store, approval_id, identity=anyone, rules=strict)
    assert decide(store, approval_id, "deny", identity=anyone).approver_auth == UNAUTHENTICATED


def test_another_tenants_request_is_not_found_and_the_attempt_is_kept(store: Store) -> None:
    _desk, _sid, approval_id = paused(store)
    mallory = Identity("mallory", OS_USER, "globex")
    with pytest.raises(ApprovalNotFound) as unknown:
        decide(store, "apr_0000000000000000beef", "approve", identity=mallory)
    with pytest.raises(ApprovalNotFound) as hidden:
        decide(store, approval_id, "approve", identity=mallory)
    assert str(hidden.value) == str(unknown.value).replace("apr_0000000000000000beef",
                                                             approval_id)
    assert attempt_anchors(store, approval_id)[-1] == attempts(store, approval_id)[-1]
    assert attempts(store, approval_id)[-1]["who"] == "mallory"
    assert attempts(store, approval_id)[-1]["why"] == "mallory (os-user) is not of tenant 'acme'"
    assert pending(store, mallory) == []
    assert [p.request.id for p in pending(store, ALICE)] == [approval_id]


def test_a_forged_row_is_shown_as_forged_and_cannot_be_decided(store: Store) -> None:
    refunds.clear()
    desk, session_id, approval_id = paused(store)
    assert store.update_approval(approval_id, "pending", {"arguments": {"amount": 7}})
    (shown,) = pending(store, ALICE)
    assert shown.forged == "its arguments differ from what the journal asked for"
    assert "not the one the session asked for" in refused(store, approval_id)
    assert store.update_approval(approval_id, "pending", {"arguments": {"amount": 70},
                                                          "tenant_id": "globex"})
    assert "its tenant differs" in refused(store, approval_id,
                                           identity=Identity("ops", OS_USER))
    later = store.get_approval(approval_id)["expires_at"] + 86400  # type: ignore[index]
    assert store.update_approval(approval_id, "pending", {"tenant_id": "acme",
                                                          "expires_at": later})
    assert "expiry is later than the journal's" in refused(store, approval_id)
    row = {**store.get_approval(approval_id), "id": "apr_forged0000000000000",  # type: ignore[dict-item]
           "tenant_id": "acme", "attempts": []}
    store.put_approval(row)
    assert "never asked for apr_forged" in refused(store, "apr_forged0000000000000")
    desk.resume(session_id)
    assert refunds == []  # the real request is still pending: nothing ran


def test_a_stale_page_cannot_decide(store: Store) -> None:
    desk, session_id, approval_id = paused(store)
    (shown,) = pending(store, ALICE)
    assert shown.version == version_of(shown.request, store.read(session_id))
    desk.resume(session_id)  # the session moves on (resumed, paused again, still waiting)
    assert len(store.read(session_id)) > 0
    assert "the page is stale" in refused(store, approval_id, seen=shown.version)
    (fresh,) = pending(store, ALICE)
    bob = Identity("bob", OS_USER, "acme")
    decide(store, approval_id, "deny", identity=bob, seen=fresh.version)
    message = refused(store, approval_id, seen=fresh.version)
    assert "the page is stale" in message and "it is denied by bob" in message


def test_a_decision_is_made_once_and_an_expired_request_can_only_be_denied(store: Store) -> None:
    _desk, _sid, approval_id = paused(store)
    decide(store, approval_id, "approve", identity=ALICE)
    assert "already approved" in refused(store, approval_id)
    assert "already approved" in refused(store, approval_id, "deny")
    _desk, _sid, late = paused(store, ttl=1e-6)
    assert "expired" in refused(store, late)
    assert decide(store, late, "deny", identity=ALICE).status == "denied"


def test_a_used_approval_cannot_be_approved_again(store: Store) -> None:
    refunds.clear()
    desk, session_id, approval_id = paused(store)
    decide(store, approval_id, "approve", identity=ALICE)
    desk.resume(session_id)
    assert StoredApprovals(store).get(approval_id).status == "used"  # type: ignore[union-attr]
    assert "already used" in refused(store, approval_id)
    with pytest.raises(SessionEnded):
        desk.resume(session_id)
    assert refunds == [70]


def test_rules_files_are_checked_at_load() -> None:
    from tether.errors import InvalidArgument

    for bad, says in (({"peeple": {}}, "unknown keys ['peeple']"),
                      ({"self_approval": "no"}, "expected true or false"),
                      ({"approve": [{"tools": ["x"]}]}, "exactly the keys tools and roles"),
                      ({"approve": [{"tools": [], "roles": ["a"]}]}, "must not be empty"),
                      ({"people": {"a": {"tenant": ""}}}, "expected a tenant id"),
                      ({"people": {"a": {"role": ["x"]}}}, "unknown keys ['role']"),
                      ({"break_glass": "ops"}, "list of non-empty names"),
                      ([], "mapping at the top")):
        with pytest.raises(InvalidArgument, match=r".*") as caught:
            ApprovalRules.from_mapping(bad)
        assert says in str(caught.value), (bad, str(caught.value))
    rules = ApprovalRules.from_mapping({"people": {"a@x": {"tenant": "acme",
                                                           "roles": ["finance"]},
                                                   "ops@x": None}})
    assert rules.identity("a@x", "header:X") == Identity("a@x", "header:X", "acme",
                                                         frozenset({"finance"}))
    ops = rules.identity("ops@x", "header:X")
    assert ops is not None and ops.all_tenants and not ops.roles
    assert rules.identity("stranger@x", "header:X") is None
    assert ApprovalRules().identity("anyone", "header:X") == Identity("anyone", "header:X")


def test_the_command_line_decides_as_the_os_account_or_an_unauthenticated_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import getpass

    from tether.cli import main

    store = SQLiteStore(tmp_path / "t.db")
    url = f"sqlite:///{tmp_path / 't.db'}"
    _desk, _sid, first = paused(store)
    _desk, _sid, second = paused(store, user=getpass.getuser())
    store.close()
    assert main(["approvals", "approve", first, "--approver", "maria", "--store", url]) == 2
    assert "add --unauthenticated" in capsys.readouterr().err
    assert main(["approvals", "approve", first, "--unauthenticated", "--store", url]) == 2
    assert main(["approvals", "approve", first, "--store", url]) == 0
    assert f"by {getpass.getuser()} (os-user)" in capsys.readouterr().out
    assert main(["approvals", "deny", second, "--store", url]) == 1  # self-approval: refused
    assert "self-approval is refused" in capsys.readouterr().err
    rules = tmp_path / "rules.yaml"
    rules.write_text("self_approval: true\nunauthenticated: false\n")
    assert main(["approvals", "deny", second, "--approver", "maria", "--unauthenticated",
                 "--rules", str(rules), "--store", url]) == 1
    assert "is not authenticated" in capsys.readouterr().err
    assert main(["approvals", "deny", second, "--rules", str(rules), "--store", url]) == 0
    rules.write_text("self_approval: maybe\n")
    assert main(["approvals", "deny", second, "--rules", str(rules), "--store", url]) == 2
    assert "expected true or false" in capsys.readouterr().err
    reopened = SQLiteStore(tmp_path / "t.db")
    assert [a["why"] for a in reopened.get_approval(second)["attempts"]] == [  # type: ignore[index]
        f"{getpass.getuser()} is the user this session runs for, and self-approval is refused: "
        "another person must decide",
        "'maria' is not authenticated, and these rules accept only authenticated approvers "
        "(the console's login, or the OS user)"]
    reopened.close()
    assert main(["approvals", "list", "--all", "--store", url]) == 0
    listed = capsys.readouterr().out
    assert f"by {getpass.getuser()} [os-user]" in listed
    assert ("2 refused attempt(s); the last by maria (unauthenticated): 'maria' is not "
            "authenticated") in listed
