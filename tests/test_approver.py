"""In-process approvers: requests decided at once, through the same record a person's decision
takes, journaled with the approver's name; a broken approver denies."""

from __future__ import annotations

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
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.approver import Approver, approve_all, approve_when, deny_all
from tether.runtime.approvals.requests import ApprovalRequest


class PaymentsNeedApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "money moves need a human", "payments")
        return Decision(Effect.ALLOW, "ok", "payments")


def build(approver: Any, paid: list[tuple[str, int]], store: Any = None) -> Agent:
    @tool(side_effect=True)
    def pay(account: str, amount: int) -> str:
        """Pay an amount."""
        paid.append((account, amount))
        return f"paid {amount} to {account}"

    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall("c1", "pay", {"account": "A1", "amount": 5}),
                                  ToolCall("c2", "pay", {"account": "B2", "amount": 900}))),
        "done"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[pay],
                 policy=PaymentsNeedApproval(), approver=approver, store=store)


def events_of(result: Any, agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in agent.load(result.session_id).replay() if e.type == kind]


def test_approve_all_runs_the_calls_in_the_same_turn_and_journals_who_approved() -> None:
    paid: list[tuple[str, int]] = []
    agent = build(approve_all(), paid, store="memory://")
    result = agent.run("pay both")
    assert result.stop_reason is StopReason.FINISHED
    assert paid == [("A1", 5), ("B2", 900)]
    granted = events_of(result, agent, "approval.granted")
    assert [g["approver"] for g in granted] == ["approve-all", "approve-all"]
    requests = agent.approval_store.every(result.session_id)
    assert {r.status for r in requests} == {"used"}  # each used up by its own call


def test_deny_all_refuses_with_the_approvers_name_and_the_model_is_told() -> None:
    paid: list[tuple[str, int]] = []
    agent = build(deny_all(), paid, store="memory://")
    result = agent.run("pay both")
    assert paid == []
    assert result.stop_reason is StopReason.FINISHED
    refused = events_of(result, agent, "approval.refused")
    assert [r["approver"] for r in refused] == ["deny-all", "deny-all"]
    contents = result.trajectory.tool_results
    assert all("denied by deny-all" in r.content for r in contents)


def test_a_rule_decides_each_call_on_its_own_arguments() -> None:
    paid: list[tuple[str, int]] = []
    small = approve_when(lambda r: r.arguments["amount"] < 100, "small-payments")
    agent = build(small, paid, store="memory://")
    result = agent.run("pay both")
    assert paid == [("A1", 5)]
    assert [r["approver"] for r in events_of(result, agent, "approval.refused")] == [
        "small-payments"]


def test_none_leaves_the_request_to_a_person_and_the_session_pauses() -> None:
    paid: list[tuple[str, int]] = []
    agent = build(lambda request: None, paid, store="memory://")
    result = agent.run("pay both")
    assert result.stop_reason is StopReason.NEEDS_APPROVAL
    assert paid == []
    pending = agent.approval_store.pending(result.session_id)
    assert len(pending) == 2
    for request in pending:
        agent.approval_store.approve(request.id, approver="ops")
    assert agent.resume(result.session_id).stop_reason is StopReason.FINISHED
    assert paid == [("A1", 5), ("B2", 900)]


def test_a_plain_function_is_named_after_itself() -> None:
    def finance_desk(request: ApprovalRequest) -> bool:
        return request.tool == "pay"

    paid: list[tuple[str, int]] = []
    agent = build(finance_desk, paid, store="memory://")
    result = agent.run("pay both")
    assert [g["approver"] for g in events_of(result, agent, "approval.granted")] == [
        "approver:test_a_plain_function_is_named_after_itself.<locals>.finance_desk"] * 2


@pytest.mark.parametrize("rule", [
    lambda request: 1 / 0,           # raises
    lambda request: "yes please",     # not a verdict
    lambda request: 1,                # truthy, but not True
])
def test_a_broken_approver_denies(rule: Any) -> None:
    paid: list[tuple[str, int]] = []
    agent = build(Approver(rule, "broken"), paid, store="memory://")
    result = agent.run("pay both")
    assert paid == []
    refused = events_of(result, agent, "approval.refused")
    assert len(refused) == 2 and all(r["approver"] == "broken" for r in refused)
    assert all(r["note"] for r in refused)  # why it denied is on record


def test_an_approver_does_not_widen_what_the_policy_denies() -> None:
    class DenyPayments:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            return Decision(Effect.DENY, "no payments today", "freeze")

    paid: list[tuple[str, int]] = []
    agent = build(approve_all(), paid, store="memory://")
    frozen = Agent(model=agent.model, reasoning=ReAct(), tools=agent.tools,
                   policy=DenyPayments(), approver=approve_all())
    result = frozen.run("pay both")
    assert paid == []
    assert frozen.approval_store.every(result.session_id) == []


def test_bad_approver_values_are_refused_at_build() -> None:
    with pytest.raises(TypeError, match="not callable"):
        Approver("yes", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty name"):
        Approver(lambda r: True, " ")
