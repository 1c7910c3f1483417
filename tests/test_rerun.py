"""RERUN: the recorded model outputs and tool results, replayed through today's runtime."""

from __future__ import annotations

import dataclasses
from typing import Any

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.rerun import rerun

from conftest import call

executions: list[str] = []


@tool(side_effect=True)
def pay(account: str, amount: int) -> str:
    """Pay an account."""
    executions.append(account)
    return f"paid {amount} to {account}"


@tool
def lookup(account: str) -> str:
    """Look an account up."""
    executions.append(f"lookup {account}")
    return f"{account}: active"


class Policy:
    def __init__(self, deny: str = "", approve_over: int = 10**9) -> None:
        self.deny, self.approve_over = deny, approve_over

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == self.deny:
            return Decision(Effect.DENY, "off", "p")
        if action.arguments.get("amount", 0) > self.approve_over:
            return Decision(Effect.REQUIRE_APPROVAL, "big", "p")
        return Decision(Effect.ALLOW, "ok", "p")


SCRIPT: list[Any] = [call("lookup", {"account": "A"}), call("pay", {"account": "A", "amount": 5}),
                     "done"]


def recorded(policy: Policy) -> tuple[Agent, list[Any]]:
    agent = Agent(model=ScriptedModel(SCRIPT), reasoning=ReAct(), tools=[pay, lookup],
                  policy=policy)
    session = agent.session("pay A")
    session.run()
    return agent, session.replay()


def test_an_unchanged_recipe_reruns_without_divergence_and_without_side_effects() -> None:
    agent, events = recorded(Policy())
    executions.clear()
    report = rerun(agent, events)
    assert report.matches, report.divergences
    assert executions == []  # nothing external ran again
    assert report.result is not None and report.result.answer == "done"


def test_a_stricter_policy_is_reported_as_a_divergence_with_both_sides() -> None:
    agent, events = recorded(Policy())
    stricter = dataclasses.replace(agent, policy=Policy(deny="pay"))
    report = rerun(stricter, events)
    assert not report.matches
    kinds = [d.what for d in report.divergences]
    assert any("model request differs" in k for k in kinds)
    assert any("ran in the record but not in the rerun" in k for k in kinds)
    differs = next(d for d in report.divergences if "request differs" in d.what)
    assert differs.step == 3
    assert "paid 5 to A" in str(differs.recorded) and "Refused" in str(differs.rerun)


def test_recorded_approvals_are_replayed() -> None:
    agent = Agent(model=ScriptedModel(SCRIPT), reasoning=ReAct(), tools=[pay, lookup],
                  policy=Policy(approve_over=1))
    session = agent.session("pay A")
    session.run()
    agent.approval_store.approve(session.pending_approvals()[0].id, approver="al")
    session.resume()
    executions.clear()
    report = rerun(agent, session.replay())
    assert report.matches, report.divergences
    assert executions == []


def test_a_model_that_would_be_asked_more_often_is_reported() -> None:
    agent, events = recorded(Policy())
    truncated = [e for e in events if e.seq <= 3]  # the record ends after the first response
    report = rerun(agent, truncated)
    assert any("more often" in d.what for d in report.divergences)


def test_text_and_calls_of_the_record_are_what_the_rerun_sees() -> None:
    both = ModelResponse(text="checking", tool_calls=(ToolCall("x", "lookup", {"account": "B"}),))
    agent = Agent(model=ScriptedModel([both, "ok"]), reasoning=ReAct(), tools=[lookup])
    session = agent.session("x")
    session.run()
    report = rerun(agent, session.replay())
    assert report.matches and report.result is not None
    assert report.result.trajectory.steps[0].text == "checking"


@tool
def flaky(account: str) -> str:
    """Fails."""
    raise ConnectionError(f"backend down for {account}")


def test_a_recorded_tool_error_is_replayed_exactly_as_recorded() -> None:
    """The record holds the error text the model saw; a rerun that wrapped it again would send
    the model a different request and report a divergence that is not there."""
    agent = Agent(model=ScriptedModel([call("flaky", {"account": "A"}), "gave up"]),
                  reasoning=ReAct(), tools=[flaky])
    session = agent.session("check A")
    session.run()
    recorded = next(e for e in session.replay() if e.type == "tool.result").data
    assert recorded["status"] == "error" and "backend down for A" in recorded["content"]
    report = rerun(agent, session.replay())
    assert report.matches, report.divergences
    assert report.result is not None and report.result.answer == "gave up"


def test_the_replayed_model_estimates_as_the_recorded_model_did() -> None:
    """A recipe whose model counts tokens its own way (a provider's framing): the rerun reserves
    what the record reserved, so budgets stop it where they stopped the original."""

    class Framed(ScriptedModel):
        def estimate_message_tokens(self, message: Any) -> int:
            return 3 * super().estimate_message_tokens(message) + 40

    agent = Agent(model=Framed(SCRIPT), reasoning=ReAct(), tools=[pay, lookup],
                  policy=Policy())
    session = agent.session("pay A")
    session.run()
    events = session.replay()
    report = rerun(agent, events)
    assert report.matches, report.divergences
    reserved = [e.data["reserved_input"] for e in events if e.type == "model.request"]
    assert report.result is not None
    assert reserved == [e.data["reserved_input"] for e in report.events
                        if e.type == "model.request"]
