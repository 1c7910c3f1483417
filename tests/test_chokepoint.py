"""The chokepoint: strategies reach tools only through the handle; the policy decides first."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    Handle,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.journal.chain import Journal
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.chokepoint.environment import Environment
from tether.tools import Calculator

from conftest import call


def test_handle_exposes_only_the_narrow_door() -> None:
    public = {name for name in dir(Handle) if not name.startswith("_")}
    # the doors through the chokepoint (a planned call passes the same gate as the model's),
    # a tree search's branch call and branch calls (the same Accountant and gate; side effects
    # only simulated), a note to the journal, what the strategy journaled so far, and the task
    assert public == {"ask_model", "call_tools", "call_planned", "ask_branch", "call_branch",
                      "remaining_budget", "record", "history", "task"}
    assert Handle.__slots__ == ("_ask", "_branch", "_call", "_history", "_left", "_planned",
                                "_record", "_task")


def test_custom_strategy_reaches_tools_only_through_the_handle() -> None:
    executed: list[str] = []

    @tool(side_effect=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        executed.append(order_id)
        return "refunded"

    class Sneaky:
        """Tries every path it can see to the tool, then uses the handle."""

        async def run(self, handle: Handle) -> str:
            seen: dict[str, Any] = {}
            for name in dir(handle):
                if not name.startswith("_"):
                    seen[name] = getattr(handle, name)
            # the handle's public surface holds no tool, policy, journal or environment
            assert isinstance(seen.pop("task"), str)
            for value in seen.values():
                owner = getattr(value, "__self__", None)
                assert owner is handle
            assert not any(isinstance(v, Environment | Journal) for v in seen.values())
            turn = await handle.ask_model()
            # a call the model never made cannot be slipped in
            with pytest.raises(ValueError, match="last turn"):
                await handle.call_tools([ToolCall("forged", "refund", {"order_id": "B2"})])
            await handle.call_tools(turn.tool_calls)
            return "done"

    class DenyRefunds:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if action.tool == "refund":
                return Decision(Effect.DENY, "refunds need a human", "no-refunds")
            return Decision(Effect.ALLOW)

    model = ScriptedModel([call("refund", {"order_id": "A1"}, "c1")])
    agent = Agent(model=model, reasoning=Sneaky(), tools=[refund], policy=DenyRefunds())
    session = agent.session("refund A1")
    result = session.run()
    assert result.answer == "done"
    assert executed == []  # the model's call went through the gate and was refused
    decisions = [e.data for e in session.replay() if e.type == "tool.decision"]
    assert len(decisions) == 1
    assert decisions[0]["decision"] == {"effect": "deny", "reason": "refunds need a human",
                                        "policy_id": "no-refunds"}


def test_calls_a_strategy_leaves_unrun_still_get_results() -> None:
    class FirstOnly:
        async def run(self, handle: Handle) -> str:
            turn = await handle.ask_model()
            await handle.call_tools(turn.tool_calls[:1])
            return (await handle.ask_model()).text

    two = ModelResponse(tool_calls=(ToolCall("a", "calculator", {"expression": "1+1"}),
                                    ToolCall("b", "calculator", {"expression": "2+2"})))
    session = Agent(model=ScriptedModel([two, "ok"]), reasoning=FirstOnly(),
                    tools=[Calculator()]).session("x")
    result = session.run()
    statuses = [(r.call_id, r.status) for r in result.trajectory.steps[0].results]
    assert statuses == [("a", "ok"), ("b", "skipped")]
    sent = [e for e in session.replay() if e.type == "model.request"][1].data["new"]
    assert [m["tool_call_id"] for m in sent] == ["a", "b"]


def test_strategy_is_never_given_the_environment() -> None:
    captured: list[Handle] = []

    class Capture:
        async def run(self, handle: Handle) -> str:
            captured.append(handle)
            return "ok"

    Agent(model=ScriptedModel(["x"]), reasoning=Capture()).run("x")
    handle = captured[0]
    # nothing reachable from the handle's public attributes is an Environment
    for name in ("ask_model", "call_tools", "remaining_budget"):
        assert not isinstance(getattr(handle, name), Environment)
    assert not hasattr(handle, "__dict__")
    assert all(not isinstance(r, Environment) for r in gc.get_referents(handle)
               if not callable(r))


def test_remaining_budget_is_visible_to_strategies() -> None:
    seen: list[dict[str, Any]] = []

    class Peek:
        async def run(self, handle: Handle) -> str:
            seen.append(handle.remaining_budget())
            await handle.ask_model()
            seen.append(handle.remaining_budget())
            return "ok"

    agent = Agent(model=ScriptedModel(["x"]), reasoning=Peek())
    agent.run("x", budget=Budget(max_steps=5, max_tokens=500))
    assert seen[0]["steps"] == 5 and seen[1]["steps"] == 4
    assert seen[1]["tokens"] < 500 and seen[0]["tool_calls"] is None


def test_policy_on_resource_tags_fires() -> None:
    ran: list[str] = []

    @tool(tags={"expensive"})
    def deep_search(query: str) -> str:
        """Search everything, slowly and at great cost."""
        ran.append(query)
        return "results"

    class DenyExpensive:
        policy_id = "deny-expensive"

        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if "expensive" in resource.tags:
                return Decision(Effect.DENY, "expensive tools are disabled", self.policy_id)
            return Decision(Effect.ALLOW, "ok", self.policy_id)

    agent = Agent(model=ScriptedModel([call("deep_search", {"query": "q"}),
                                       call("calculator", {"expression": "1+1"}), "done"]),
                  reasoning=ReAct(), tools=[deep_search, Calculator()], policy=DenyExpensive())
    result = agent.run("x")
    assert ran == []
    first, second = result.trajectory.steps[0].results[0], result.trajectory.steps[1].results[0]
    assert first.status == "denied" and "expensive tools are disabled" in first.content
    assert second.status == "ok" and second.content == "2"
    assert result.spend.tool_calls == 1  # a refused call is not charged


def test_policy_sees_real_sarc_data() -> None:
    seen: list[tuple[Subject, Action, Resource, Context]] = []

    @tool(side_effect=True, egress=True, risk="high", owner="payments", tags={"money"})
    def pay(amount: int) -> str:
        """Pay an amount."""
        return "paid"

    class Record:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            seen.append((subject, action, resource, context))
            return Decision(Effect.ALLOW)

    agent = Agent(model=ScriptedModel([call("pay", {"amount": 5}), "ok"]), reasoning=ReAct(),
                  tools=[pay], policy=Record(), name="payer")
    session = agent.session("pay", user_id="u1", tenant_id="t1", roles=["clerk"],
                            context={"channel": "web"})
    session.run()
    subject, action, resource, context = seen[0]
    assert (subject.user_id, subject.tenant_id, subject.roles, subject.agent) == (
        "u1", "t1", frozenset({"clerk"}), "payer")
    assert action.tool == "pay" and action.arguments == {"amount": 5}
    assert (resource.side_effect, resource.egress, resource.risk, resource.owner) == (
        True, True, "high", "payments")
    assert resource.tags == frozenset({"money"})
    assert context.session_id == session.id and context.step == 1
    assert context.spend["steps"] == 1 and context.extra == {"channel": "web"}
    assert context.tainted is False


@pytest.mark.parametrize("broken", ["raises", "returns-none", "returns-string"])
def test_a_broken_policy_denies_and_the_error_is_journaled(broken: str) -> None:
    ran: list[int] = []

    @tool
    def act(n: int) -> str:
        """Do the thing."""
        ran.append(n)
        return "done"

    class Broken:
        def evaluate(self, *args: Any) -> Any:
            if broken == "raises":
                raise ZeroDivisionError("bad rule")
            return None if broken == "returns-none" else "allow"

    session = Agent(model=ScriptedModel([call("act", {"n": 1}), "ok"]), reasoning=ReAct(),
                    tools=[act], policy=Broken()).session("x")
    result = session.run()
    assert ran == []
    assert result.trajectory.steps[0].results[0].status == "denied"
    decision = next(e.data["decision"] for e in session.replay() if e.type == "tool.decision")
    assert decision["effect"] == "deny"
    assert ("ZeroDivisionError" in decision["reason"]) == (broken == "raises")


def test_decision_is_journaled_before_the_tool_runs() -> None:
    order: list[str] = []
    sessions: list[Any] = []

    @tool
    def probe() -> str:
        """Record what the journal held when the tool ran."""
        order.append(sessions[0].replay()[-1].type)
        return "ok"

    session = Agent(model=ScriptedModel([call("probe", {}), "done"]), reasoning=ReAct(),
                    tools=[probe]).session("x")
    sessions.append(session)
    session.run()
    assert order == ["tool.decision"]
