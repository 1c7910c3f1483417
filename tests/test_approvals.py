"""Approvals: pause, bind to the exact call, single use, expiry, resume without re-asking."""

from __future__ import annotations

import asyncio
import time
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
from tether.runtime.approvals.requests import ApprovalError, InMemoryApprovalStore, call_hash

from conftest import call


class NeedsApproval:
    """Side-effecting calls need a human; everything else is allowed."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "money moves need a human", "approvals",
                            fields=("card",))
        return Decision(Effect.ALLOW, "ok", "approvals")


def build(script: list[Any], ttl: float = 3600,
          **recipe: Any) -> tuple[Agent, list[dict[str, Any]]]:
    paid: list[dict[str, Any]] = []

    @tool(side_effect=True)
    def pay(account: str, amount: int, card: str = "") -> str:
        """Pay an amount."""
        paid.append({"account": account, "amount": amount})
        return f"paid {amount} to {account}"

    @tool
    def lookup(account: str) -> str:
        """Look up an account."""
        return f"{account} is active"

    seen_requests: list[int] = []

    def respond(request: Any) -> Any:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        seen_requests.append(turn)
        return script[turn] if turn < len(script) else "all done"

    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[pay, lookup],
                  policy=NeedsApproval(), approval_ttl=ttl, **recipe)
    return agent, paid


def test_require_approval_pauses_and_approved_call_runs_once_on_resume() -> None:
    agent, paid = build([call("pay", {"account": "A", "amount": 40, "card": "4111-secret"}),
                         "paid it"])
    session = agent.session("pay A", user_id="u1")
    result = session.run()
    assert result.stop_reason is StopReason.NEEDS_APPROVAL and session.paused
    assert paid == []
    (request,) = session.pending_approvals()
    assert request.tool == "pay" and request.session_id == session.id
    assert request.arguments == {"account": "A", "amount": 40, "card": "[masked]"}
    assert request.reason == "money moves need a human" and request.expires_at > time.time()
    assert request.call_hash == call_hash(session.id, "pay",
                                          {"account": "A", "amount": 40, "card": "4111-secret"})
    agent.approvals.approve(request.id, approver="alice", note="ok for A")
    responses_before = len([e for e in session.replay() if e.type == "model.response"])
    resumed = session.resume()
    assert paid == [{"account": "A", "amount": 40}]
    assert resumed.stop_reason is StopReason.FINISHED and resumed.answer == "paid it"
    events = session.replay()
    types = [e.type for e in events]
    assert types.index("approval.requested") < types.index("session.paused") < types.index(
        "session.resumed") < types.index("approval.granted")
    granted = next(e.data for e in events if e.type == "approval.granted")
    assert granted["approver"] == "alice" and granted["note"] == "ok for A"
    # the model was not asked again for the approved call: one more response, the answer
    responses = [e for e in events if e.type == "model.response"]
    assert len(responses) == responses_before + 1
    assert session.verify() is None
    assert resumed.spend.tool_calls == 1
    with pytest.raises(RuntimeError, match="not paused"):
        session.resume()


def test_denied_approval_returns_a_refusal_to_the_model() -> None:
    agent, paid = build([call("pay", {"account": "A", "amount": 40}), "could not pay"])
    session = agent.session("pay A")
    session.run()
    (request,) = session.pending_approvals()
    agent.approvals.deny(request.id, approver="bob", note="over limit")
    result = session.resume()
    assert paid == []
    res = result.trajectory.steps[0].results[0]
    assert res.status == "denied" and "bob" in res.content and "over limit" in res.content
    assert result.stop_reason is StopReason.FINISHED


def test_resume_before_a_decision_stays_paused() -> None:
    agent, paid = build([call("pay", {"account": "A", "amount": 1}), "done"])
    session = agent.session("x")
    session.run()
    again = session.resume()
    assert again.stop_reason is StopReason.NEEDS_APPROVAL and paid == []
    assert len(session.pending_approvals()) == 1


def test_several_pending_calls_in_one_turn_are_tracked_separately_and_keep_order() -> None:
    turn = ModelResponse(tool_calls=(
        ToolCall("c1", "lookup", {"account": "A"}),
        ToolCall("c2", "pay", {"account": "A", "amount": 1}),
        ToolCall("c3", "lookup", {"account": "B"}),
        ToolCall("c4", "pay", {"account": "B", "amount": 2}),
    ))
    agent, paid = build([turn, "both paid"])
    session = agent.session("x")
    first = session.run()
    assert first.stop_reason is StopReason.NEEDS_APPROVAL
    requests = sorted(session.pending_approvals(), key=lambda r: r.call_id)
    assert [r.call_id for r in requests] == ["c2", "c4"]
    # c1 ran before the first waiting call; c3 waits behind it, decided but not run
    assert [r.call_id for r in first.trajectory.steps[0].results] == ["c1"]
    agent.approvals.approve(requests[1].id, approver="alice")
    still = session.resume()  # c4 is approved, but c2 before it still waits
    assert still.stop_reason is StopReason.NEEDS_APPROVAL and paid == []
    agent.approvals.approve(requests[0].id, approver="alice")
    done = session.resume()
    assert paid == [{"account": "A", "amount": 1}, {"account": "B", "amount": 2}]
    assert [r.call_id for r in done.trajectory.steps[0].results] == ["c1", "c2", "c3", "c4"]
    decisions = [e.data["call_id"] for e in session.replay() if e.type == "tool.decision"]
    assert decisions == ["c1", "c2", "c3", "c4"]  # each decided exactly once
    assert done.answer == "both paid"


def test_an_approval_is_single_use_and_bound_to_its_call() -> None:
    store = InMemoryApprovalStore()
    agent, _ = build([call("pay", {"account": "A", "amount": 1}), "ok"])
    session = agent.session("x")
    session.run()
    (request,) = session.pending_approvals()
    mine = f"{session.id}/c1"
    with pytest.raises(ApprovalError, match=r"not approved|pending"):
        agent.approvals.consume(request.id, request.call_hash, by=mine)
    agent.approvals.approve(request.id, approver="alice")
    with pytest.raises(ApprovalError, match="different call"):
        agent.approvals.consume(request.id, call_hash(session.id, "pay",
                                                      {"account": "A", "amount": 999}), by=mine)
    with pytest.raises(ApprovalError, match="already"):
        agent.approvals.approve(request.id, approver="mallory")
    agent.approvals.consume(request.id, request.call_hash, by=mine)
    agent.approvals.consume(request.id, request.call_hash, by=mine)  # the same user: idempotent
    with pytest.raises(ApprovalError, match="used"):
        agent.approvals.consume(request.id, request.call_hash, by=f"{session.id}/c2")
    with pytest.raises(ApprovalError, match="no approval request"):
        store.approve("apr_nope", approver="alice")
    with pytest.raises(ApprovalError, match="approver"):
        agent.approvals.deny(request.id, approver=" ")


def test_an_expired_approval_is_refused() -> None:
    agent, paid = build([call("pay", {"account": "A", "amount": 1}), "gave up"], ttl=0.05)
    session = agent.session("x")
    session.run()
    (request,) = session.pending_approvals()
    time.sleep(0.1)
    with pytest.raises(ApprovalError, match="expired"):
        agent.approvals.approve(request.id, approver="alice")
    result = session.resume()
    assert paid == []
    assert "expired" in result.trajectory.steps[0].results[0].content
    assert result.stop_reason is StopReason.FINISHED


def test_time_paused_does_not_count_against_the_time_budget() -> None:
    from tether import Budget

    agent, paid = build([call("pay", {"account": "A", "amount": 1}), "ok"])
    session = agent.session("x", budget=Budget(max_seconds=0.5))
    session.run()
    time.sleep(0.6)
    agent.approvals.approve(session.pending_approvals()[0].id, approver="alice")
    result = session.resume()
    assert paid and result.stop_reason is StopReason.FINISHED
    assert result.spend.seconds < 0.5


def test_a_request_of_a_session_that_ended_expires_and_cannot_be_approved() -> None:
    """Nothing will use a request once its session has ended: it must not stay pending and
    approvable, for an approver to grant a call that can never run."""
    from tether.runtime.approvals.requests import new_request

    approvals = InMemoryApprovalStore()
    sessions = []

    @tool
    async def wait() -> str:
        """Wait for something (the activation is cancelled while it waits)."""
        sessions.pop().cancel("the worker was told to stop")
        await asyncio.sleep(0)
        return "waited"

    agent = Agent(model=ScriptedModel([call("wait", {}), "done"]), reasoning=ReAct(),
                  tools=[wait], approvals=approvals)
    session = agent.session("t")
    sessions.append(session)
    assert session.run().stop_reason is StopReason.INTERRUPTED
    left = new_request(session_id=session.id, bound_to=session.id, call_id="c9", tool="pay",
                       shown={}, arguments={}, reason="big", policy_id="p", ttl=3600)
    approvals.add(left)  # left behind by the activation that stopped: a row with no event
    assert session.resume().ok
    (expired,) = approvals.every(session.id)
    assert expired.status == "pending" and expired.expired()
    assert "session ended" in expired.note
    with pytest.raises(ApprovalError, match="expired"):
        approvals.approve(left.id, approver="maria")


def test_a_session_that_never_asked_reads_no_approvals_at_its_end() -> None:
    """The end's expiry reads the approval store only when a request of the session can exist
    (one was journaled, or an earlier activation stopped): a session that asked for none,
    in its first activation, pays no store read for it (a PostgreSQL round trip a session)."""

    from tether.runtime.approvals.requests import StoredApprovals
    from tether.store.memory import MemoryStore

    class Counting(StoredApprovals):
        expiries = 0

        def __init__(self) -> None:
            super().__init__(MemoryStore())

        def expire_pending(self, session_id: str, why: str) -> int:
            Counting.expiries += 1
            return super().expire_pending(session_id, why)

    agent, _ = build([call("lookup", {"account": "A"}), "A is fine"], approvals=Counting())
    assert agent.session("check A").run().ok
    assert Counting.expiries == 0
    paying, _ = build([call("pay", {"account": "A", "amount": 5}), "paid"],
                      approvals=Counting())
    session = paying.session("pay A")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    paying.approvals.approve(session.pending_approvals()[0].id, approver="alice")
    assert session.resume().ok
    assert Counting.expiries == 1


def test_an_approval_of_the_same_call_for_another_client_is_told_apart() -> None:
    """``issued_to_another`` finds a standing approval of the very call (tool and arguments)
    bound to someone else — and nothing else: not one's own, not other arguments, not one
    used, expired, of another tenant, or made before requests recorded their action."""
    from dataclasses import replace

    from tether.runtime.approvals.requests import StoredApprovals, new_request
    from tether.store.memory import MemoryStore

    store = MemoryStore()
    approvals, tenant_a = StoredApprovals(store), StoredApprovals(store, "a")

    def request(client: str, arguments: dict[str, Any], tenant: str | None = None,
                approved: bool = True) -> Any:
        made = new_request(session_id=f"s-{client}", bound_to=f"client:{tenant or ''}:{client}",
                           call_id="c1", tool="pay", shown=arguments, arguments=arguments,
                           reason="r", policy_id="p", ttl=60.0, tenant_id=tenant)
        approvals.add(made)
        if approved:
            approvals.approve(made.id, approver="ops")
        return made

    mine = request("bob", {"to": "x", "amount": 5}, approved=False)
    assert approvals.issued_to_another(mine) == []
    request("bob", {"to": "x", "amount": 5})  # bob's own approval of it
    request("alice", {"to": "x", "amount": 6})  # other arguments
    used = request("alice", {"amount": 5, "to": "x"})
    approvals.consume(used.id, used.call_hash, by="s/c")
    expired = request("alice", {"to": "x", "amount": 5})
    assert store.update_approval(expired.id, "approved", {"expires_at": 0.0})
    request("alice", {"to": "x", "amount": 5}, tenant="b")  # another tenant's
    assert approvals.issued_to_another(replace(mine, action_hash=None)) == []
    assert not tenant_a.issued_to_another(mine)
    assert [r.tenant_id for r in approvals.issued_to_another(mine)] == ["b"]
    standing = request("alice", {"amount": 5, "to": "x"})  # the keys in another order
    assert [r.id for r in tenant_a.issued_to_another(mine)] == []
    assert standing.id in {r.id for r in approvals.issued_to_another(mine)}
    assert approvals.withdraw(mine.id, "refused") and approvals.get(mine.id).expired()
    assert not approvals.withdraw(standing.id, "decided already: not pending")
