"""The one governed model call (tether.runtime.chokepoint.model_call), through each of its six
doors.

Every door — the session turn, a search branch, a compaction summary, the request planner, a
tool's sampling request and a foreign framework's call — is given a model that reports the same
usage, and must: charge what was reported at its price; refuse to charge usage that is not whole
numbers as reported (charging the reservation instead); and catch an answer past its
reservation. A mutation of the one place (skip the usage check, charge nothing, miss an
overrun) fails each of these tests for all six doors."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from test_compaction_hostile import Liar
from test_compaction_hostile import _agent as compacting_agent
from test_integration_governed import governed
from test_mcp_client_requests import SAMPLING, asking
from test_model_planner import DINNER, SETTLE, Planner
from test_model_planner import agent as planning_agent
from tether import Agent, Budget, ModelPlanner, ReAct, ScriptedModel
from tether.integrations.governed import RunStopped
from tether.mcp import connect
from tether.models.pricing import Price
from tether.runtime.strategy.handle import Handle
from tether.types import ModelRequest, ModelResponse, ToolCall, Usage

PRICE = Price(Decimal("1"), Decimal("2"))  # USD per million tokens
BUDGET = Budget(max_tokens=50_000, max_cost_usd=Decimal("1"))
Events = list[tuple[str, dict[str, Any]]]


class Reports(ScriptedModel):
    """Answers from its script, reporting ``usage`` for every call ``mine`` picks out."""

    def __init__(self, script: Any, usage: Usage,
                 mine: Callable[[ModelRequest], bool] = lambda _: True) -> None:
        super().__init__(script, price=PRICE)
        self.usage, self.mine = usage, mine

    async def complete(self, request: ModelRequest) -> ModelResponse:
        answer = await super().complete(request)
        if not self.mine(request):
            return answer
        return ModelResponse(answer.text, answer.tool_calls, self.usage, "m",
                             answer.finish_reason)


def _session_events(agent: Agent, request: str) -> Events:
    session = agent.session(request, budget=BUDGET)
    session.run()
    assert session.verify() is None
    return [(e.type, dict(e.data)) for e in session.replay()]


def turn(usage: Usage) -> Events:
    return _session_events(Agent(model=Reports(["done"], usage), reasoning=ReAct(),
                                 price=PRICE), "hi")


class OneBranch:
    async def run(self, handle: Handle) -> str:
        await handle.ask_branch([], key="k", tools=False, max_output_tokens=20)
        return "done"


def branch(usage: Usage) -> Events:
    return _session_events(Agent(model=Reports(["a branch"], usage), reasoning=OneBranch(),
                                 price=PRICE), "hi")


def compaction(usage: Usage) -> Events:
    summariser = Liar(usage=usage)
    summariser.price = PRICE
    return _session_events(compacting_agent(summariser), "fetch the records")


def planner(usage: Usage) -> Events:
    return _session_events(planning_agent(ModelPlanner(Planner(SETTLE, usage, PRICE)), []),
                           DINNER)


def sampling(usage: Usage) -> Events:
    def respond(request: ModelRequest) -> ModelResponse | str:
        if request.messages[0].content.startswith(SAMPLING):
            return "sampled"
        if any(m.role == "assistant" for m in request.messages):
            return "done"
        return ModelResponse(tool_calls=(ToolCall("c1", "asking_sample", {"prompt": "hi"}),))

    model = Reports(respond, usage, lambda r: r.messages[0].content.startswith(SAMPLING))
    with connect(asking(sampling="session")) as tools:
        return _session_events(Agent(model=model, reasoning=ReAct(), tools=[*tools],
                                     price=PRICE), "use the asking tools")


def framework(usage: Usage) -> Events:
    run = governed(budget=BUDGET, price=PRICE)

    async def one_call() -> None:
        metered = await run.reserve(100, ceiling=100)
        with contextlib.suppress(RunStopped):  # (an overrun, or usage it cannot charge)
            await run.charge(metered, ModelResponse("ok", (), usage, "m"))

    asyncio.run(one_call())
    return [(e.type, dict(e.data)) for e in run.journal.events()]


# (the door, its response event, its record of a call charged at its reservation)
DOORS = [(turn, "model.response", "model.unmetered"),
         (branch, "branch.response", "model.unmetered"),
         (compaction, "compaction.response", "compaction.error"),
         (planner, "plan.response", "plan.error"),
         (sampling, "sampling.response", "sampling.error"),
         (framework, "model.response", "model.unmetered")]
REQUESTS = {"model.response": "model.request", "branch.response": "branch.request",
            "compaction.response": "compaction.request", "plan.response": "plan.request",
            "sampling.response": "sampling.request"}
IDS = [d[0].__name__ for d in DOORS]


def of(events: Events, kind: str) -> list[dict[str, Any]]:
    return [d for t, d in events if t == kind]


@pytest.mark.parametrize(("door", "response", "unmetered"), DOORS, ids=IDS)
def test_a_call_is_charged_what_it_reported_at_its_price(
        door: Callable[[Usage], Events], response: str, unmetered: str) -> None:
    usage = Usage(300, 7)
    answered = of(door(usage), response)
    assert answered, f"the {door.__name__} door answered nothing"
    assert Decimal(str(answered[0]["cost_usd"])) == PRICE.cost(usage) > 0


@pytest.mark.parametrize(("door", "response", "unmetered"), DOORS, ids=IDS)
def test_the_request_is_journaled_with_its_reservation_before_its_answer(
        door: Callable[[Usage], Events], response: str, unmetered: str) -> None:
    events = door(Usage(300, 7))
    kinds = [t for t, _ in events]
    asked = kinds.index(REQUESTS[response])
    assert asked < kinds.index(response)
    reserved = events[asked][1]
    assert reserved["reserved_input"] > 0 and reserved["max_output_tokens"] > 0


@pytest.mark.parametrize(("door", "response", "unmetered"), DOORS, ids=IDS)
def test_usage_that_is_not_whole_numbers_is_charged_at_the_reservation(
        door: Callable[[Usage], Events], response: str, unmetered: str) -> None:
    events = door(Usage(-5, 7))
    assert not of(events, response)  # never charged as reported
    (charged,) = [d for d in of(events, unmetered) if "unusable usage" in d["error"]]
    assert charged["input_tokens"] > 0 and charged["output_tokens"] > 0


@pytest.mark.parametrize(("door", "response", "unmetered"), DOORS, ids=IDS)
def test_an_answer_past_its_reservation_is_an_overrun(
        door: Callable[[Usage], Events], response: str, unmetered: str) -> None:
    events = door(Usage(300, 90_000))  # past every output cap the doors send
    (answered,) = of(events, response)[-1:]
    if door is sampling:  # a guest's call: its answer withheld, the session goes on
        assert answered["overrun"] and not of(events, "model.overrun")
        return
    (overrun,) = of(events, "model.overrun")
    assert overrun["reported"]["output_tokens"] == 90_000
    assert overrun["reserved"]["output_tokens"] < 90_000
    where = {"branch": {"branch": "k"}, "compaction": {"purpose": "compaction"},
             "planner": {"purpose": "plan"}}.get(door.__name__, {})
    assert {k: overrun.get(k) for k in ("branch", "purpose")} == {
        "branch": None, "purpose": None, **where}
