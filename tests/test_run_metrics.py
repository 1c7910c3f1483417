"""Run metrics read off journals: each rate from sessions that really ended that way, the same on
every store, and the same numbers for an evaluation's trials as for production sessions."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    Limits,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.journal.views.metrics import Distribution, RunMetrics, session_facts
from tether.policy import Action, Context, Resource, Subject
from tether.store.base import Store


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    if key.startswith("broken"):
        raise RuntimeError("backend down")
    return f"value of {key}"


@tool(side_effect=True)
def delete(key: str) -> str:
    """Delete a key."""
    return f"deleted {key}"


class NoDeletes:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "delete":
            return Decision(Effect.DENY, "nothing is deleted", "no-deletes")
        return Decision(Effect.ALLOW, "ok", "no-deletes")


def look(key: str, id: str) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id, "lookup", {"key": key}),))


def agent(script: list[Any], store: Store) -> Agent:
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[lookup, delete],
                 policy=NoDeletes(), store=store, limits=Limits(tool_error_ceiling=3))


def run_mix(store: Store) -> None:
    agent([look("a", "1"), "done"], store).run("finishes")
    agent([look("broken0", "1"), look("a", "2"), "done"], store).run("recovers")
    agent([look("broken1", "1"), look("broken2", "2"), look("broken3", "3"), "x"],
          store).run("gives up")  # three failures in a row: the tool error ceiling
    agent([look("same", str(i)) for i in range(6)], store).run("loops")
    agent([look(str(i), str(i)) for i in range(9)], store).run(
        "runs out", budget=Budget(max_steps=3))
    agent([ModelResponse(tool_calls=(ToolCall("1", "delete", {"key": "k"}),)), "ok"],
          store).run("is refused")


def test_rates_from_journals_on_every_store(store: Store) -> None:
    run_mix(store)
    facts = [session_facts(store.read(i.session_id)) for i in store.sessions()]
    m = RunMetrics.of(facts)
    assert m.sessions == 6 and m.unfinished == 0
    assert m.stop_reasons == {"finished": 3, "loop_detected": 1, "step_budget": 1,
                              "tool_error_ceiling": 1}
    assert m.completion_rate == pytest.approx(3 / 6)
    assert m.loop_rate == pytest.approx(1 / 6)
    assert m.budget_stop_rate == pytest.approx(1 / 6) and m.budget_stops == {"step_budget": 1}
    assert m.recovery_rate == pytest.approx(1 / 2)  # "recovers" finished, "gives up" did not
    ran = sum(f.tool_calls for f in facts)
    assert m.tool_error_rate == pytest.approx(4 / ran)
    assert m.denial_rate == pytest.approx(1 / sum(f.decided for f in facts))
    assert m.approval_rate == 0.0
    assert m.steps.max >= 3 and m.tokens.p50 > 0


def test_a_paused_session_is_unfinished_not_a_completion(store: Store) -> None:
    class AskFirst:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            return Decision(Effect.REQUIRE_APPROVAL, "ask", "ask")

    paused = Agent(model=ScriptedModel([look("a", "1"), "done"]), reasoning=ReAct(),
                   tools=[lookup], policy=AskFirst(), store=store).run("waits")
    facts = session_facts(store.read(paused.session_id))
    assert facts.status == "paused" and facts.approvals_requested == 1
    m = RunMetrics.of([facts])
    assert m.unfinished == 1 and m.completion_rate == 0.0


def test_distributions_and_costs() -> None:
    d = Distribution.of([1, 2, 3, 4, 100])
    assert (d.p50, d.max) == (3, 100) and 4 < d.p95 < 100
    assert Distribution.of([]) == Distribution(0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"session\.start"):
        session_facts([])


def test_cost_comes_from_the_journaled_spend(store: Store) -> None:
    from tether.models.pricing import Price

    priced = Agent(model=ScriptedModel(["hello"]), reasoning=ReAct(), store=store,
                   price=Price(Decimal("1"), Decimal("2")))
    result = priced.run("say hello")
    facts = session_facts(store.read(result.session_id))
    assert facts.cost_usd == result.spend.cost_usd > 0
