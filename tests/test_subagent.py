"""Sub-agents: a governed session inside the caller's budget, charged to the caller."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    Usage,
    tool,
)
from tether.models import Price
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.lifecycle.subagent import AgentAsTool
from tether.runtime.record.state import fold

from conftest import call

PRICE = Price(Decimal("1"), Decimal("2"))
deleted: list[str] = []


@tool(side_effect=True)
def delete_record(record_id: str) -> str:
    """Delete a record."""
    deleted.append(record_id)
    return "deleted"


class NoDeletes:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "delete_record":
            return Decision(Effect.DENY, "deletes are off", "nodel")
        return Decision(Effect.ALLOW, "ok", "nodel")


def researcher(script: list[Any]) -> Agent:
    return Agent(model=ScriptedModel(script, price=PRICE, when_exhausted="research done"),
                 reasoning=ReAct(), tools=[delete_record], policy=NoDeletes(), name="researcher")


def test_sub_agent_spend_is_the_parents_and_its_policy_still_applies() -> None:
    deleted.clear()
    sub = researcher([call("delete_record", {"record_id": "r1"}), "found 3 papers"])
    parent = Agent(model=ScriptedModel([call("researcher", {"task": "find papers"}),
                                        "summary"], price=PRICE),
                   reasoning=ReAct(), tools=[AgentAsTool(sub)])
    session = parent.session("research", user_id="u1", tenant_id="t1",
                             budget=Budget(max_tokens=5000, max_cost_usd=Decimal("1")))
    result = session.run()
    assert deleted == []  # the sub-agent's own policy denied it
    first = result.trajectory.steps[0].results[0]
    assert first.status == "ok" and "found 3 papers" in first.content
    charges = [e.data for e in session.replay() if e.type == "subagent.charge"]
    assert len(charges) == 1 and charges[0]["steps"] == 2
    own = [e.data["response"]["usage"] for e in session.replay() if e.type == "model.response"]
    own_tokens = sum(u["input_tokens"] + u["output_tokens"] for u in own)
    sub_tokens = charges[0]["input_tokens"] + charges[0]["output_tokens"]
    assert result.spend.tokens == own_tokens + sub_tokens
    assert result.spend.steps == 4  # two of its own turns, two of the sub-agent's
    assert fold(session.replay()).tally.usage == result.usage


def test_a_sub_agent_cannot_spend_more_than_the_parent_has_left() -> None:
    greedy = researcher([ModelResponse(text="x" * 4000, usage=Usage(output_tokens=3000))] * 5)
    parent = Agent(model=ScriptedModel([call("researcher", {"task": "go"}), "done"],
                                       price=PRICE),
                   reasoning=ReAct(), tools=[AgentAsTool(greedy)])
    budget = Budget(max_tokens=1500, max_cost_usd=Decimal("0.01"), max_steps=6)
    result = parent.run("x", budget=budget)
    assert result.spend.tokens <= 1500
    assert result.spend.cost_usd <= Decimal("0.01")
    assert result.spend.steps <= 6


def test_sub_agents_running_at_once_share_the_budget_not_copy_it() -> None:
    import asyncio

    def wordy(n: int) -> Agent:
        slow = ScriptedModel([ModelResponse(text="y" * 4000, usage=Usage(output_tokens=2500))],
                             price=PRICE, latency=0.01, name=f"w{n}")
        return Agent(model=slow, reasoning=ReAct(), name=f"writer{n}")

    writers = [AgentAsTool(wordy(n)) for n in range(4)]
    turn = ModelResponse(tool_calls=tuple(ToolCall(f"w{n}", f"writer{n}", {"task": "write"})
                                          for n in range(4)))
    parent = Agent(model=ScriptedModel([turn, "done"], price=PRICE), reasoning=ReAct(),
                   tools=writers)
    result = asyncio.run(parent.arun("x", budget=Budget(max_tokens=3000)))
    assert result.spend.tokens <= 3000


def test_a_sub_agents_own_budget_still_holds_under_an_unlimited_parent() -> None:
    looping = ScriptedModel(lambda request: call("delete_record", {"record_id": str(
        len(request.messages))}), price=PRICE)
    sub = Agent(model=looping, reasoning=ReAct(), tools=[delete_record], name="looper",
                budget=Budget(max_steps=3, max_tool_calls=2))
    parent = Agent(model=ScriptedModel([call("looper", {"task": "go"}), "done"], price=PRICE),
                   reasoning=ReAct(), tools=[AgentAsTool(sub)])
    session = parent.session("x")
    session.run()
    (charge,) = [e.data for e in session.replay() if e.type == "subagent.charge"]
    assert charge["steps"] <= 3 and charge["tool_calls"] <= 2
