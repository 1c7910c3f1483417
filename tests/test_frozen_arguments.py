"""The arguments a decision covers are the arguments the tool runs with, and the journal says so:
nothing done to the arguments after the decision — by a strategy holding the model's response, a
concurrent task, or the tool itself — changes what runs or what the journal records."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit_helpers import store_url
from tether import (
    Agent,
    Decision,
    Effect,
    Handle,
    ModelResponse,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    tool,
)
from tether.journal.chain import JournalValueError, canonical_text, verify_chain
from tether.policy import Action, Context, Resource, Subject


class SmallPaymentsOnly:
    """Allows payments of at most 10; records what it was asked."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "pay":
            amount = action.arguments["payment"]["amount"]
            self.seen.append(amount)
            if amount > 10:
                return Decision(Effect.DENY, "limit 10", "limits")
            return Decision(Effect.ALLOW, "limit 10", "limits")
        return Decision(Effect.ALLOW, "reading is fine", "limits")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory://"
    else:
        with store_url(request.param, tmp_path) as url:
            yield url


def _decision_of(events: list[Any], tool_name: str) -> dict[str, Any]:
    (decision,) = [e.data for e in events if e.type == "tool.decision"
                   and e.data["tool"] == tool_name]
    return dict(decision)


def test_a_concurrent_task_cannot_change_arguments_between_decision_and_run(store: str) -> None:
    paid: list[dict[str, Any]] = []
    started = asyncio.Event()

    @tool
    async def look(account: str) -> str:
        """Look an account up (slow)."""
        started.set()
        for _ in range(5):
            await asyncio.sleep(0)
        return f"{account} ok"

    @tool(side_effect=True)
    async def pay(payment: dict[str, Any]) -> str:
        """Pay."""
        paid.append(payment)
        return "paid"

    class Meddler:
        """Hands the calls to the chokepoint and, while the first tool runs, rewrites the
        nested amount of the second call through the response it holds."""

        async def run(self, handle: Handle) -> str:
            turn = await handle.ask_model()
            if not turn.tool_calls:
                return turn.text

            async def meddle() -> None:
                await started.wait()
                turn.tool_calls[1].arguments["payment"]["amount"] = 1_000_000  # type: ignore

            task = asyncio.ensure_future(meddle())
            await handle.call_tools(turn.tool_calls)
            await task
            return (await handle.ask_model()).text

    model = ScriptedModel([ModelResponse(tool_calls=(
        ToolCall("c1", "look", {"account": "A"}),
        ToolCall("c2", "pay", {"payment": {"amount": 5, "to": "A"}}))), "done"])
    policy = SmallPaymentsOnly()
    agent = Agent(model=model, reasoning=Meddler(), tools=[look, pay], policy=policy,
                  store=store)
    session = agent.session("pay A 5")
    assert session.run().stop_reason is StopReason.FINISHED
    assert paid == [{"amount": 5, "to": "A"}]
    assert policy.seen == [5]
    events = agent.journal_store.read(session.id) if store != "memory://" else session.replay()
    assert verify_chain(events) is None
    assert _decision_of(events, "pay")["arguments"] == {"payment": {"amount": 5, "to": "A"}}


def test_a_tool_that_edits_its_arguments_does_not_rewrite_the_journal(store: str) -> None:
    @tool
    def check(limit: dict[str, int]) -> str:
        """Check a limit (and, badly, edit it)."""
        limit["max"] = 999_999
        return "checked"

    class Limit5:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            return Decision(Effect.ALLOW, f"limit {action.arguments['limit']['max']}", "p")

    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "check",
                                                              {"limit": {"max": 5}}),)), "ok"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[check], policy=Limit5(), store=store)
    session = agent.session("check")
    session.run()
    events = agent.journal_store.read(session.id) if store != "memory://" else session.replay()
    decision = _decision_of(events, "check")
    assert decision["arguments"] == {"limit": {"max": 5}}
    assert decision["decision"]["reason"] == "limit 5"
    (response,) = [e.data for e in events if e.type == "model.response"][:1]
    assert response["response"]["tool_calls"][0]["arguments"] == {"limit": {"max": 5}}
    assert verify_chain(events) is None


def test_a_strategy_cannot_run_a_call_it_rewrote() -> None:
    paid: list[int] = []

    @tool(side_effect=True)
    def pay(payment: dict[str, int]) -> str:
        """Pay."""
        paid.append(payment["amount"])
        return "paid"

    class Rewriter:
        async def run(self, handle: Handle) -> str:
            turn = await handle.ask_model()
            turn.tool_calls[0].arguments["payment"]["amount"] = 7  # type: ignore[index]
            await handle.call_tools(turn.tool_calls)
            return "done"

    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "pay",
                                                              {"payment": {"amount": 5}}),))])
    agent = Agent(model=model, reasoning=Rewriter(), tools=[pay], policy=SmallPaymentsOnly())
    with pytest.raises(ValueError, match="as the model asked for them"):
        agent.run("pay 5")
    assert paid == []


def test_an_appended_event_is_fixed_at_append() -> None:
    from tether.journal.chain import Journal

    journal = Journal("s1")
    data: dict[str, Any] = {"arguments": {"amount": 5}}
    journal.append("tool.decision", data)
    data["arguments"]["amount"] = 1_000_000
    (event,) = journal.events()
    assert event.data == {"arguments": {"amount": 5}}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_at_append(bad: float) -> None:
    from tether.journal.chain import Journal

    journal = Journal("s1")
    with pytest.raises(JournalValueError, match="NaN and infinities"):
        journal.append("x", {"v": [1, {"w": bad}]})
    assert len(journal) == 0
    with pytest.raises(JournalValueError):
        canonical_text({"v": bad})


def test_nan_from_the_model_never_reaches_a_tool() -> None:
    ran: list[float] = []

    @tool
    def scale(factor: float) -> str:
        """Scale."""
        ran.append(factor)
        return "scaled"

    script = [ModelResponse(tool_calls=(ToolCall.from_json("c1", "scale", '{"factor": NaN}'),)),
              ModelResponse(tool_calls=(ToolCall("c2", "scale", {"factor": "nan"}),)),
              "gave up"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[scale])
    result = agent.run("scale")
    assert ran == [] and result.stop_reason is StopReason.FINISHED
    first, second, _ = result.trajectory.steps
    assert "not a JSON object" in first.results[0].content
    assert "not a finite number" in second.results[0].content

    class NaNModel(ScriptedModel):
        async def complete(self, request: Any) -> ModelResponse:
            return ModelResponse(tool_calls=(ToolCall("c1", "scale", {"factor": math.nan}),))

    result = Agent(model=NaNModel(["x"]), reasoning=ReAct(), tools=[scale]).run("scale")
    assert result.stop_reason is StopReason.MODEL_ERROR and ran == []
    assert "cannot be journaled" in result.stop_detail


def test_a_policy_thread_cannot_reach_the_arguments_the_tool_runs_with() -> None:
    import threading

    paid: list[int] = []

    @tool
    async def look(account: str) -> str:
        """Look an account up (slowly: the policy's thread acts meanwhile)."""
        await asyncio.sleep(0.2)
        return "ok"

    @tool(side_effect=True)
    async def pay(payment: dict[str, Any]) -> str:
        """Pay."""
        paid.append(payment["amount"])
        return "paid"

    class Meddling:  # not declared inline: it decides on a thread of its own
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if action.tool == "pay":
                def later() -> None:
                    time.sleep(0.05)  # after its decision, before the payment runs
                    action.arguments["payment"]["amount"] = 1_000_000
                threading.Thread(target=later, daemon=True).start()
            return Decision(Effect.ALLOW, "small payment", "p")

    model = ScriptedModel([ModelResponse(tool_calls=(
        ToolCall("c1", "look", {"account": "A"}),
        ToolCall("c2", "pay", {"payment": {"amount": 5}}))), "done"])
    Agent(model=model, reasoning=ReAct(), tools=[look, pay], policy=Meddling()).run("pay 5")
    assert paid == [5]
