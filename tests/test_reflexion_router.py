"""Reflexion (attempt, evaluate, reflect, retry; bounded) and Router (rules or one capped model
call; journaled; kept on resume)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_planned_calls import Rule
from tether import Agent, Budget, ReAct, ScriptedModel, tool
from tether.policy.base import Action, Decision, Effect
from tether.reasoning.graders import numeric
from tether.reasoning.reflexion import GraderCheck, Reflexion, SelfCritique
from tether.reasoning.router import Router, RouteRule
from tether.runtime.accounting.stop import StopReason
from tether.runtime.lifecycle.session import Session
from tether.types import ModelResponse, ToolCall

TASK = "What is the temperature in Paris, in Fahrenheit?"


def call(name: str, i: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(i, name, arguments),), finish_reason="tool_calls")


def weather_tools(ran: list[str]) -> list[Any]:
    @tool
    def lookup(city: str) -> str:
        """The temperature in a city, in Celsius."""
        ran.append("lookup")
        return "25 C"

    @tool
    def to_fahrenheit(celsius: float) -> str:
        """Convert Celsius to Fahrenheit."""
        ran.append("to_fahrenheit")
        return str(celsius * 9 / 5 + 32)

    return [lookup, to_fahrenheit]


FIRST_WRONG = [call("lookup", "c1", city="Paris"), "It is 25 degrees.",
               "I answered in Celsius; the task asked Fahrenheit: convert first.",
               call("to_fahrenheit", "c2", celsius=25), "It is 77 degrees Fahrenheit."]


def notes(events: Sequence[Any], kind: str) -> list[dict[str, Any]]:
    return [e.data["data"] for e in events if e.type == "strategy.note" and e.data["kind"] == kind]


def test_a_wrong_first_attempt_is_reflected_on_and_the_retry_passes() -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(FIRST_WRONG), tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=GraderCheck(numeric("77"))))
    session = agent.session(TASK)
    result = session.run()
    assert result.answer == "It is 77 degrees Fahrenheit."
    events = session.replay()
    assert [n["passed"] for n in notes(events, "evaluation")] == [False, True]
    (reflection,) = notes(events, "reflection")
    assert "convert first" in reflection["text"]
    requests = [e.data["new"] for e in events if e.type == "model.request"]
    second_attempt = requests[3]  # attempt 1 (2 turns), the reflection, then attempt 2
    assert any("convert first" in m["content"] and "try the task again" in m["content"]
               for m in second_attempt)
    # the reflection turn offered no tool and was capped
    reflect = [e.data for e in events if e.type == "model.request"][2]
    assert reflect["tool_choice"] == "none" and reflect["max_output_tokens"] <= 256


def test_self_critique_judges_with_a_capped_tool_less_turn() -> None:
    ran: list[str] = []
    script = ["It is 25 degrees.", "FAIL: the task asked Fahrenheit", "Convert next time.",
              call("to_fahrenheit", "c2", celsius=25), "77 F", "PASS"]
    agent = Agent(model=ScriptedModel(script), tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=SelfCritique()))
    session = agent.session(TASK)
    assert session.run().answer == "77 F"
    events = session.replay()
    assert notes(events, "evaluation")[0]["why"] == "FAIL: the task asked Fahrenheit"
    critiques = [e.data for e in events if e.type == "model.request"
                 and e.data.get("max_output_tokens") == 64]
    assert len(critiques) == 2 and all(c["tool_choice"] == "none" for c in critiques)


def test_attempts_are_bounded_and_the_last_answer_stands() -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel([], when_exhausted="25"), tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=GraderCheck(numeric("77")), max_attempts=3))
    session = agent.session(TASK)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED and result.answer == "25"
    events = session.replay()
    assert len(notes(events, "attempt")) == 3 and len(notes(events, "reflection")) == 2
    assert notes(events, "attempts.exhausted") == [{"attempts": 3}]
    assert result.spend.steps == 3 + 2  # three answers, two reflections


def test_an_attempt_is_cut_at_its_own_caps() -> None:
    ran: list[str] = []
    looping = ScriptedModel(lambda request: call("lookup", "", city=str(len(request.messages))))
    agent = Agent(model=looping, tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=GraderCheck(numeric("77")), max_attempts=2,
                                      attempt_steps=2))
    session = agent.session(TASK)
    session.run()
    events = session.replay()
    whys = [n["why"] for n in notes(events, "evaluation")]
    assert whys == ["the attempt used all its model turns"] * 2
    # two turns per attempt, one reflection between: the cap held
    assert sum(e.type == "model.response" for e in events) == 2 + 1 + 2
    two_calls = ModelResponse(tool_calls=(ToolCall("a", "lookup", {"city": "Paris"}),
                                          ToolCall("b", "lookup", {"city": "Rome"})),
                              finish_reason="tool_calls")
    ran.clear()
    agent = Agent(model=ScriptedModel([two_calls, "reflect"], when_exhausted="done"),
                  tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=GraderCheck(numeric("77")), max_attempts=2,
                                      attempt_tool_calls=1))
    agent.run(TASK)
    assert ran == []  # two calls do not fit a one-call attempt: neither ran


@settings(max_examples=15, deadline=None)
@given(steps=st.integers(min_value=1, max_value=9), attempts=st.integers(1, 4))
def test_the_run_s_step_budget_holds_over_every_attempt(steps: int, attempts: int) -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(lambda r: call("lookup", "", city=str(len(r.messages)))
                                      if len(r.tools) else "25"),
                  tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=SelfCritique(), max_attempts=attempts,
                                      attempt_steps=3))
    result = agent.run(TASK, budget=Budget(max_steps=steps))
    assert result.spend.steps <= steps


def test_attempts_count_across_a_resume(tmp_path: Any) -> None:
    ran: list[str] = []

    def approve_conversions(action: Action) -> Decision:
        if action.tool == "to_fahrenheit":
            return Decision(Effect.REQUIRE_APPROVAL, "check", "ops")
        return Decision(Effect.ALLOW)

    agent = Agent(model=ScriptedModel(FIRST_WRONG), tools=weather_tools(ran),
                  reasoning=Reflexion(evaluator=GraderCheck(numeric("77")), max_attempts=2),
                  policy=Rule(approve_conversions), store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session(TASK)
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = agent.approval_store.pending(session.id)
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.answer == "It is 77 degrees Fahrenheit."
    assert ran == ["lookup", "to_fahrenheit"]
    events = Session.restore(agent, session.id).replay()
    # the resumed run is attempt 2 of 2, with its reflection kept: no third attempt
    assert [n["attempt"] for n in notes(events, "attempt")] == [1, 2]
    assert [n["passed"] for n in notes(events, "evaluation")] == [False, True]


class Named:
    def __init__(self, name: str) -> None:
        self.name = name

    async def run(self, handle: Any) -> str:
        return f"ran {self.name}"


def test_rules_route_first_and_the_route_is_journaled_with_its_reason() -> None:
    router = Router({"plan": Named("plan"), "react": Named("react")},
                    rules=[RouteRule("plan", r"\bblocks?\b", reason="a blocks task: plan it")],
                    default="react")
    agent = Agent(model=ScriptedModel([]), reasoning=router)
    session = agent.session("Stack the blocks so that a is on b.")
    assert session.run().answer == "ran plan"
    assert notes(session.replay(), "route") == [{
        "strategy": "router", "route": "plan", "reason": "a blocks task: plan it", "by": "rule",
        "runs": "Named"}]
    assert agent.run("What is 2 + 2?").answer == "ran react"  # no rule, no model call


def test_a_model_pick_is_one_capped_tool_less_turn() -> None:
    router = Router({"plan": Named("plan"), "reflect": Named("reflect")}, default="plan",
                    ask_model=True, descriptions={"reflect": "checkable answers"})
    session = Agent(model=ScriptedModel(["Reflect."]), reasoning=router,
                    tools=weather_tools([])).session("hmm")
    assert session.run().answer == "ran reflect"
    (request,) = [e.data for e in session.replay() if e.type == "model.request"]
    assert request["tool_choice"] == "none" and request["max_output_tokens"] == 8
    assert "reflect: checkable answers" in request["new"][-1]["content"]
    session = Agent(model=ScriptedModel(["no idea"]), reasoning=router).session("hmm")
    assert session.run().answer == "ran plan"
    assert notes(session.replay(), "route")[0]["by"] == "model"


def test_a_resumed_session_keeps_its_route(tmp_path: Any) -> None:
    ran: list[str] = []

    def approve(action: Action) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "check", "ops")

    router = Router({"react": ReAct(), "other": Named("other")}, ask_model=True)
    agent = Agent(model=ScriptedModel(["react", call("lookup", "c1", city="Paris"), "25 C",
                                       "other"]),
                  tools=weather_tools(ran), reasoning=router, policy=Rule(approve),
                  store=f"sqlite:///{tmp_path / 'r.db'}")
    session = agent.session(TASK)
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = agent.approval_store.pending(session.id)
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.answer == "25 C" and ran == ["lookup"]
    events = Session.restore(agent, session.id).replay()
    assert len(notes(events, "route")) == 1  # not routed again (the script's 'other' unused)


def test_router_recipes_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="not among the routes"):
        Router({"react": ReAct()}, rules=[RouteRule("plan", "x")])
    with pytest.raises(ValueError, match="pattern or a predicate"):
        RouteRule("react")
    with pytest.raises(ValueError):
        Router({})
    with pytest.raises(ValueError):
        Reflexion(max_attempts=0)
    rule = RouteRule("react", when=lambda task: len(task) > 10)
    assert rule.matches("a long enough task") and rule.matches("short") is None


def test_a_rerun_of_a_reflexion_session_reproduces_it() -> None:
    from tether.runtime.rerun import rerun

    def make() -> Agent:
        return Agent(model=ScriptedModel(FIRST_WRONG), tools=weather_tools([]),
                     reasoning=Reflexion(evaluator=GraderCheck(numeric("77"))))

    session = make().session(TASK)
    session.run()
    report = rerun(make(), session.replay())
    assert report.matches, report.divergences
