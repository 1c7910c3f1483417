"""Tenants are isolated: two tenants' agents on one store see nothing of each other's sessions or
approvals (another tenant's id is "not found", word for word as an id that does not exist);
resume refuses a session started under another recipe unless told; a sub-agent never gets a
permission its caller's policy denies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit_helpers import store_url
from tether import (
    Agent,
    AgentAsTool,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    tool,
)
from tether.cli import main
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import ApprovalError
from tether.runtime.lifecycle.session import RecipeChanged

transfers: list[tuple[str | None, int]] = []


@tool(side_effect=True)
def transfer(amount: int, tenant_id: str | None = None) -> str:
    """Move money."""
    transfers.append((tenant_id, amount))
    return f"moved {amount}"


class ApproveTransfers:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "a person approves transfers", "p")
        return Decision(Effect.ALLOW, "ok", "p")


def _agent(url: str, tenant: str | None, **kwargs: Any) -> Agent:
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("t1", "transfer",
                                                              {"amount": 900}),)), "done"])
    options: dict[str, Any] = {"policy": ApproveTransfers(), **kwargs}
    return Agent(model=model, reasoning=ReAct(), tools=[transfer], store=url, tenant_id=tenant,
                 name="treasury", **options)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def test_two_tenants_on_one_store_see_nothing_of_each_other(url: str) -> None:
    transfers.clear()
    acme, globex = _agent(url, "acme"), _agent(url, "globex")
    session = acme.session("move 900")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = acme.approval_store.pending()
    assert request.tenant_id == "acme"
    assert globex.approval_store.pending() == []
    assert globex.approval_store.pending(session.id) == []
    assert globex.approval_store.get(request.id) is None

    def refusal(approval_id: str) -> str:
        with pytest.raises(ApprovalError) as refused:
            globex.approval_store.approve(approval_id, approver="mallory")
        return str(refused.value).replace(approval_id, "ID")

    assert refusal(request.id) == refusal("apr_does_not_exist")  # no existence leak

    def missing(session_id: str) -> str:
        with pytest.raises(LookupError) as lost:
            globex.load(session_id)
        return str(lost.value).replace(session_id, "ID")

    assert missing(session.id) == missing("no-such-session")
    with pytest.raises(LookupError):
        globex.resume(session.id)
    assert transfers == []
    acme.approval_store.approve(request.id, approver="maria")
    assert acme.resume(session.id).stop_reason is StopReason.FINISHED
    assert transfers == [("acme", 900)]
    with pytest.raises(ValueError, match="serves tenant 'acme'"):
        acme.session("x", tenant_id="globex")


def test_the_cli_scopes_to_a_tenant(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    acme = _agent(url, "acme")
    session = acme.session("move 900")
    session.run()
    (request,) = acme.approval_store.pending()
    capsys.readouterr()
    assert main(["approvals", "list", "--store", url, "--tenant", "globex"]) == 0
    assert request.id not in capsys.readouterr().out
    assert main(["approvals", "list", "--store", url, "--tenant", "acme"]) == 0
    assert request.id in capsys.readouterr().out
    assert main(["approvals", "approve", request.id, "--approver", "m",
                 "--unauthenticated", "--store", url,
                 "--tenant", "globex"]) == 1
    assert "no approval request" in capsys.readouterr().err
    for argv in (["audit", "show", session.id], ["audit", "verify", "--session", session.id],
                 ["audit", "export", "--session", session.id]):
        assert main([*argv, "--store", url, "--tenant", "globex"]) == 1
        assert "no session" in capsys.readouterr().err
    assert main(["audit", "list", "--store", url, "--tenant", "globex"]) == 0
    assert session.id not in capsys.readouterr().out
    assert main(["audit", "list", "--store", url, "--tenant", "acme"]) == 0
    assert session.id in capsys.readouterr().out
    assert main(["audit", "show", session.id, "--store", url, "--tenant", "acme"]) == 0


def test_resume_refuses_a_session_of_another_recipe_unless_told(url: str) -> None:
    transfers.clear()
    original = _agent(url, None)
    session = original.session("move 900", tenant_id="acme")
    session.run()
    (request,) = original.approval_store.pending()
    original.approval_store.approve(request.id, approver="maria")

    class AllowAll:
        inline = True

        def evaluate(self, *args: Any) -> Decision:
            return Decision(Effect.ALLOW, "anything goes", "loose")

    looser = _agent(url, None, policy=AllowAll())
    with pytest.raises(RecipeChanged, match="another recipe"):
        looser.resume(session.id)
    renamed = Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), tools=[transfer], store=url,
                    policy=ApproveTransfers(), name="other-agent")
    with pytest.raises(RecipeChanged):
        renamed.load(session.id)
    assert transfers == []
    result = looser.resume(session.id, accept_recipe_change=True)
    assert result.stop_reason is StopReason.FINISHED and transfers == [("acme", 900)]


def test_a_sub_agent_never_gets_a_permission_its_caller_denies() -> None:
    wired: list[int] = []

    @tool(side_effect=True, tags={"payments"})
    def wire(amount: int) -> str:
        """Wire money."""
        wired.append(amount)
        return "wired"

    class NoPayments:
        inline = True

        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if "payments" in resource.tags:
                return Decision(Effect.DENY, "no payments here", "parent-policy")
            return Decision(Effect.ALLOW, "ok", "parent-policy")

    class Anything:
        inline = True

        def evaluate(self, *args: Any) -> Decision:
            return Decision(Effect.ALLOW, "the child allows all", "child-policy")

    child = Agent(model=ScriptedModel([ModelResponse(tool_calls=(
        ToolCall("w1", "wire", {"amount": 5000}),)), "could not wire"]), reasoning=ReAct(),
        tools=[wire], policy=Anything(), name="payer")
    helper = AgentAsTool(child, name="payer", description="Pays things.")
    parent = Agent(model=ScriptedModel([ModelResponse(tool_calls=(
        ToolCall("h1", "payer", {"task": "wire 5000"}),)), "done"]), reasoning=ReAct(),
        tools=[helper], policy=NoPayments(), check_policy_names=False)
    # the parent's own policy allows the helper itself (it is tagged "agent", not "payments")
    result = parent.run("get it paid")
    assert wired == []
    assert "could not wire" in result.trajectory.steps[0].results[0].content
    assert child.run("wire 5000").stop_reason is StopReason.FINISHED and wired == [5000]
