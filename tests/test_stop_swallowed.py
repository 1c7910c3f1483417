"""A stop cannot be swallowed: once the chokepoint stops a run, the session ends (or pauses) with
that reason whatever the strategy does with the exception."""

from __future__ import annotations

from typing import Any

import pytest

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    Handle,
    ReAct,
    ScriptedModel,
    StopReason,
    tool,
)
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.accounting.stop import Stop

from conftest import call


class ApproveMoney:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "a human approves transfers", "p")
        return Decision(Effect.ALLOW, "ok", "p")


class SwallowsException:
    """A strategy with an ordinary retry loop: any Exception is retried, then given up on."""

    def __init__(self) -> None:
        self.later_calls: list[str] = []

    async def run(self, handle: Handle) -> str:
        for _ in range(3):
            try:
                turn = await handle.ask_model()
                if turn.tool_calls:
                    await handle.call_tools(turn.tool_calls)
                    continue
                return turn.text
            except Exception as exc:
                self.later_calls.append(type(exc).__name__)
        return "gave up quietly"


class SwallowsEverything:
    """A strategy that catches BaseException, keeps asking, then returns an answer."""

    def __init__(self) -> None:
        self.refusals: list[str] = []

    async def run(self, handle: Handle) -> str:
        try:
            turn = await handle.ask_model()
            await handle.call_tools(turn.tool_calls)
        except BaseException:
            pass
        for _ in range(2):  # every later call is refused with the same stop
            try:
                await handle.ask_model()
            except BaseException as exc:
                self.refusals.append(str(exc))
        return "all fine, nothing to see"


class SwallowsAndRaisesOther:
    async def run(self, handle: Handle) -> str:
        try:
            turn = await handle.ask_model()
            await handle.call_tools(turn.tool_calls)
        except BaseException:
            raise RuntimeError("something else went wrong") from None
        return "unreachable"


def _transfer_agent(strategy: Any, runs: list[int]) -> Agent:
    @tool(side_effect=True)
    def transfer(amount: int) -> str:
        """Move money."""
        runs.append(amount)
        return "moved"

    model = ScriptedModel([call("transfer", {"amount": 5}), "done"])
    return Agent(model=model, reasoning=strategy, tools=[transfer], policy=ApproveMoney())


def test_stop_is_not_an_ordinary_exception() -> None:
    assert not issubclass(Stop, Exception)
    assert issubclass(Stop, BaseException)


@pytest.mark.parametrize("strategy_type", [SwallowsException, SwallowsEverything,
                                           SwallowsAndRaisesOther])
def test_an_approval_pause_survives_a_strategy_that_catches_it(strategy_type: type) -> None:
    runs: list[int] = []
    agent = _transfer_agent(strategy_type(), runs)
    session = agent.session("move 5")
    result = session.run()
    assert result.stop_reason is StopReason.NEEDS_APPROVAL and session.paused
    (request,) = session.pending_approvals()
    agent.approval_store.approve(request.id, approver="maria")
    assert session.resume().stop_reason is not StopReason.NEEDS_APPROVAL
    assert runs == [5]  # the approved call ran once, without the model asking again


def test_every_later_call_is_refused_with_the_same_stop() -> None:
    runs: list[int] = []
    strategy = SwallowsEverything()
    agent = _transfer_agent(strategy, runs)
    result = agent.run("move 5")
    assert result.stop_reason is StopReason.NEEDS_APPROVAL
    assert len(strategy.refusals) == 2
    assert all(r.startswith("needs_approval") for r in strategy.refusals)
    assert runs == []


def test_a_swallowed_budget_stop_still_ends_with_its_reason() -> None:
    steps: list[int] = []

    class KeepsGoing:
        async def run(self, handle: Handle) -> str:
            while True:
                try:
                    turn = await handle.ask_model()
                    steps.append(1)
                    await handle.call_tools(turn.tool_calls)
                except BaseException:
                    return "finished, honestly"

    @tool
    def ping(n: int) -> str:
        """Ping."""
        return "pong"

    model = ScriptedModel(lambda request: call("ping", {"n": len(request.messages)}))
    agent = Agent(model=model, reasoning=KeepsGoing(), tools=[ping])
    result = agent.run("ping forever", budget=Budget(max_steps=3))
    assert result.stop_reason is StopReason.STEP_BUDGET
    assert result.answer != "finished, honestly"
    assert len(steps) <= 3


def test_a_tool_or_model_raising_stop_cannot_choose_how_the_run_ends() -> None:
    @tool
    def sneaky() -> str:
        """Pretends to be the chokepoint."""
        raise Stop(StopReason.FINISHED, "nothing more to do")

    model = ScriptedModel([call("sneaky", {}), "carried on"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[sneaky])
    result = agent.run("go")
    assert result.stop_reason is StopReason.FINISHED and result.answer == "carried on"
    (step, _) = result.trajectory.steps
    assert step.results[0].status == "error"

    class StoppingModel(ScriptedModel):
        async def complete(self, request: Any) -> Any:
            raise Stop(StopReason.FINISHED, "the model says so")

    agent = Agent(model=StoppingModel(["x"]), reasoning=ReAct())
    assert agent.run("go").stop_reason is StopReason.MODEL_ERROR


def test_a_strategy_cannot_raise_a_stop_of_its_own() -> None:
    class Impostor:
        async def run(self, handle: Handle) -> str:
            raise Stop(StopReason.NEEDS_APPROVAL, "pretend someone must approve")

    agent = Agent(model=ScriptedModel(["x"]), reasoning=Impostor())
    session = agent.session("go")
    with pytest.raises(TypeError, match="Stop of its own"):
        session.run()
    assert not session.paused
    assert session.replay()[-1].type == "session.error"
