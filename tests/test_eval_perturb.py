"""Perturbations and faults: seeded, recorded, and governed like the canonical run."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tether import Agent, Budget, ReAct, ScriptedModel, StopReason
from tether.evals import Task, evaluate, numeric
from tether.evals.faults import FaultyModel, FaultyTool
from tether.evals.perturb import (
    DistractorTools,
    OrderShuffled,
    Paraphrase,
    ProviderFaults,
    Setup,
    ToolFaults,
    perturbations,
)
from tether.models.resilient import Backoff, Resilient
from tether.tools.base import ToolContext, ToolFailure

import eval_app


def setup() -> Setup:
    return Setup("What is 17 * 23?", eval_app.make_agent())


async def test_each_perturbation_is_a_function_of_its_seed() -> None:
    for p in perturbations(["order_shuffled", "paraphrase", "distractor_tools",
                            "irrelevant_context"]):
        a = await p.apply(setup(), random.Random("s"))
        b = await p.apply(setup(), random.Random("s"))
        assert (a.prompt, a.notes, [t.name for t in a.agent.tools]) == (
            b.prompt, b.notes, [t.name for t in b.agent.tools]), p.name


async def test_shuffles_and_distractors_keep_the_policy_and_budget() -> None:
    base = setup()
    for p in (OrderShuffled(), DistractorTools(count=2)):
        out = await p.apply(base, random.Random(4))
        assert out.agent.policy is base.agent.policy and out.agent.budget == base.agent.budget
    extra = await DistractorTools(count=10).apply(base, random.Random(1))
    assert len(extra.agent.tools) == 1 + 5  # the pool has five; none shadows multiply
    assert "multiply" in [t.name for t in extra.agent.tools]


async def test_faulty_tool_fails_at_its_rate_in_the_kinds_asked() -> None:
    faulty = FaultyTool(eval_app.multiply, 0.5, ("error", "timeout"), rng=random.Random(0))
    context = ToolContext("s", "c", 1)
    outcomes = []
    for _ in range(200):
        try:
            outcomes.append(await faulty.invoke({"a": 2, "b": 3}, context))
        except ToolFailure as failure:
            outcomes.append(failure.status)
    assert 70 < outcomes.count(6) < 130
    assert {o for o in outcomes if o != 6} == {"error", "timeout"}
    assert faulty.name == "multiply" and faulty.spec == eval_app.multiply.spec
    with pytest.raises(ValueError, match="between 0 and 1"):
        FaultyTool(eval_app.multiply, 1.5, rng=random.Random())
    with pytest.raises(ValueError, match="fault kinds"):
        FaultyTool(eval_app.multiply, 0.1, ("explode",), rng=random.Random())


def test_tool_faults_measure_recovery() -> None:
    task = Task("What is 17 * 23?", expected="391", grader=numeric())
    report = evaluate(eval_app.make_agent(), [task], k=20, perturbations=[
        ToolFaults(rate=0.5, kinds=("error",))], seed=2)
    metrics = report.slices["tool_faults"].metrics
    assert metrics.tool_error_rate > 0.2
    # every run that hit an error still finished (recovery counts finishing), yet the grades
    # show that finishing is not being right: the model answered from the error message
    assert metrics.recovery_rate == 1.0
    assert report.slices["tool_faults"].passed < 20


def test_provider_faults_stop_a_bare_model_and_a_retry_layer_recovers() -> None:
    task = Task("What is 17 * 23?", expected="391", grader=numeric())
    bare = evaluate(eval_app.make_agent(), [task], k=10, perturbations=[
        ProviderFaults(rate=0.3)], seed=1)
    assert bare.slices["provider_faults"].metrics.stop_reasons.get("model_error", 0) > 0
    healed = evaluate(eval_app.make_agent(), [task], k=10, perturbations=[
        ProviderFaults(rate=0.3, wrap=lambda m: Resilient(
            m, retries=5, breaker=False, backoff=Backoff(initial=0.001, maximum=0.002)))], seed=1)
    assert healed.slices["provider_faults"].passed == 10


async def test_faulty_model_raises_provider_errors_by_kind() -> None:
    from tether.models.errors import ProviderError
    from tether.types import Message, ModelRequest

    model = FaultyModel(ScriptedModel(["hi"] * 50), 1.0, ("rate_limit",), rng=random.Random(0))
    with pytest.raises(ProviderError) as raised:
        await model.complete(ModelRequest((Message.user("x"),)))
    assert raised.value.kind.value == "rate_limit" and raised.value.status == 429


async def test_model_paraphrase_goes_through_the_chokepoint_and_keeps_the_numbers() -> None:
    kept = Paraphrase(model=ScriptedModel(["Tell me 17 times 23, please: 17 * 23."]))
    out = await kept.apply(setup(), random.Random(0))
    assert out.prompt.startswith("Tell me") and out.notes["paraphrase"] == {"model": True}
    lost = Paraphrase(model=ScriptedModel(["What is seventeen times twenty-three?"]))
    out = await lost.apply(setup(), random.Random(0))
    assert "17" in out.prompt and "dropped" in out.notes["paraphrase"]["model_refused"]
    starved = Paraphrase(model=ScriptedModel(["x" * 500]), budget=Budget(max_tokens=3))
    out = await starved.apply(setup(), random.Random(0))
    assert "stopped" in out.notes["paraphrase"]["model_refused"]


def test_unknown_or_repeated_perturbations_are_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        perturbations(["canonical", "canonical"])
    with pytest.raises(TypeError, match="not a perturbation"):
        perturbations([object()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one"):
        perturbations([])


def test_a_denied_call_stays_denied_under_every_perturbation() -> None:
    from tether import Decision, Effect
    from tether.policy import Action, Context, Resource, Subject

    class NoMultiply:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            return Decision(Effect.DENY, "no", "p") if action.tool == "multiply" else \
                Decision(Effect.ALLOW, "ok", "p")

    agent = Agent(model=ScriptedModel(eval_app.respond), reasoning=ReAct(),
                  tools=[eval_app.multiply], policy=NoMultiply())
    report = evaluate(agent, [Task("What is 2 * 3?", expected="6")], k=2, perturbations=[
        "canonical", "order_shuffled", "paraphrase", "distractor_tools", "tool_faults"])
    every: Any = report.slices["all"].metrics
    assert every.denial_rate == 1.0 and report.slices["all"].passed == 0
    assert StopReason.FINISHED.value in every.stop_reasons
