"""A recipe derived with ``dataclasses.replace`` (as the guide derives one without compaction)
is the recipe it says it is: its approvals follow its store and its tenant.

Hostile first: ``Agent`` filled its default approval store in ``__post_init__`` into the
``approvals`` field itself, so ``dataclasses.replace`` handed the derived recipe its parent's
store as if the user had given it. A recipe replaced onto another store kept its approval
requests in the first one (a session paused there and resumed by a recipe on the new store was
refused: "its approval request was lost"); a recipe replaced to serve one tenant kept an
approval store scoped to every tenant, and listed and decided another tenant's requests —
against "every approval action is scoped to the caller's tenant".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import ApprovalError, StoredApprovals
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore

ran: list[str] = []


@tool(side_effect=True)
def pay(to: str) -> str:
    """Pay someone."""
    ran.append(to)
    return f"paid {to}"


class AskFirst:
    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "a person checks payments", "ask")


def base(store: Any = None) -> Agent:
    def respond(request: Any) -> Any:
        if request.messages[-1].role == "tool":
            return "done"
        return ModelResponse(tool_calls=(ToolCall("c1", "pay", {"to": "bob"}),))

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[pay],
                 policy=AskFirst(), store=store)


def test_a_recipe_replaced_onto_another_store_keeps_its_approvals_there(tmp_path: Path) -> None:
    ran.clear()
    path = tmp_path / "t.db"
    moved = dataclasses.replace(base(), store=SQLiteStore(path))
    session = moved.session("pay bob")
    assert session.run().stop_reason.value == "needs_approval"
    elsewhere = base(SQLiteStore(path))  # another process, on the same database
    [request] = elsewhere.approval_store.pending(session.id)
    elsewhere.approval_store.approve(request.id, approver="ops")
    assert elsewhere.resume(session.id).answer == "done"
    assert ran == ["bob"]


def test_a_recipe_replaced_to_serve_one_tenant_sees_only_that_tenants_approvals() -> None:
    shared = MemoryStore()
    every = base(shared)
    acme = dataclasses.replace(every, tenant_id="acme")
    globex = dataclasses.replace(every, tenant_id="globex")
    session = acme.session("pay bob")
    assert session.run().stop_reason.value == "needs_approval"
    [request] = acme.approval_store.pending(session.id)
    assert globex.approval_store.pending(session.id) == []
    with pytest.raises(ApprovalError):
        globex.approval_store.approve(request.id, approver="mallory")
    assert [r.id for r in every.approval_store.pending(session.id)] == [request.id]


def test_approvals_the_user_gave_are_kept_by_replace() -> None:
    own = StoredApprovals(MemoryStore())
    agent = dataclasses.replace(base(MemoryStore()), approvals=own)
    assert dataclasses.replace(agent, compaction=None).approval_store is own
