"""Hostile tests of the branch seam (Handle.ask_branch, Handle.call_branch): a model call on a
branch's own context is budgeted and journaled like any other but never joins the conversation;
a branch runs only side-effect-free calls through the gate and simulates the rest; resume and
rerun hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from test_planned_calls import Rule
from tether import Agent, Budget, ScriptedModel, tool
from tether.policy.base import Action, Decision, Effect
from tether.runtime.accounting.stop import StopReason
from tether.runtime.lifecycle.session import Session
from tether.runtime.record.state import fold
from tether.runtime.rerun import rerun
from tether.runtime.strategy.branching import BranchRefused
from tether.runtime.strategy.handle import Handle
from tether.types import Message, ModelResponse, ToolCall, Usage


def call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall("", name, arguments),), finish_reason="tool_calls")


def tools(ran: list[str]) -> list[Any]:
    @tool
    def look(room: str) -> str:
        """Look into a room."""
        ran.append(f"look {room}")
        return f"{room}: a key"

    @tool(side_effect=True)
    def send(to: str) -> str:
        """Send the key to someone."""
        ran.append(f"send {to}")
        return f"sent to {to}"

    return [look, send]


class Explore:
    """Asks on a branch, runs the branch's calls, then answers in the session."""

    def __init__(self, key: str = "n1.s1") -> None:
        self.key = key
        self.seen: list[Any] = []

    async def run(self, handle: Handle) -> str:
        answer = await handle.ask_branch([Message.user("explore")], key=self.key)
        self.seen.append(answer)
        results = await handle.call_branch(answer.tool_calls)
        self.seen.append(results)
        return (await handle.ask_model(note="now answer", tool_choice="none")).text


def answers(replies: dict[str, Any]) -> ScriptedModel:
    """A model whose answer depends on its context: the reply to the last message's text (a
    branch's context is no linear script)."""
    def reply(request: Any) -> Any:
        last = request.messages[-1].content
        return next((r for k, r in replies.items() if k in last), "?")
    return ScriptedModel(reply)


def decided(events: Any) -> list[str]:
    return [e.data["tool"] for e in events if e.type == "tool.decision"]


def test_a_branch_call_is_charged_and_journaled_but_never_joins_the_conversation() -> None:
    ran: list[str] = []
    strategy = Explore()
    agent = Agent(model=answers({"explore": call("look", room="hall"), "now answer": "done"}),
                  tools=tools(ran), reasoning=strategy)
    session = agent.session("find the key")
    result = session.run()
    assert result.answer == "done" and result.spend.steps == 2  # the branch call is a step
    events = session.replay()
    (request,) = [e.data for e in events if e.type == "branch.request"]
    assert request["key"] == "n1.s1" and request["messages"][-1]["content"] == "explore"
    (branch_call,) = strategy.seen[0].tool_calls
    assert branch_call.id == "branch_n1.s1_1"
    assert ran == ["look hall"] and decided(events) == ["look"]  # through the gate
    conversation = fold(events).conversation
    assert not any("explore" in m.content or m.tool_calls for m in conversation)
    assert not any(m.tool_call_id for m in conversation)


def test_a_side_effecting_call_on_a_branch_is_simulated_never_decided_nor_run() -> None:
    ran: list[str] = []
    consulted: list[str] = []

    def watch(action: Action) -> Decision:
        consulted.append(action.tool)
        return Decision(Effect.DENY, "no", "p") if action.tool == "send" else Decision(
            Effect.ALLOW)

    strategy = Explore()
    agent = Agent(model=answers({"explore": call("send", to="eve"), "now answer": "done"}),
                  tools=tools(ran), reasoning=strategy, policy=Rule(watch))
    session = agent.session("send the key")
    session.run()
    (result,) = strategy.seen[1]
    assert ran == [] and consulted == []  # not run, and no policy asked for a proposal
    assert result.status == "simulated" and "not run" in result.content
    events = session.replay()
    assert [e.data["call"]["name"] for e in events if e.type == "branch.simulated"] == ["send"]
    assert decided(events) == []


def test_call_branch_takes_only_a_branch_answer_s_calls_unchanged() -> None:
    ran: list[str] = []

    class Forge:
        async def run(self, handle: Handle) -> str:
            answer = await handle.ask_branch([], key="k")
            (c,) = answer.tool_calls
            for forged in (ToolCall("branch_k_9", "look", {"room": "hall"}),
                           ToolCall(c.id, c.name, {"room": "vault"}), ToolCall("t1", "look",
                                                                              {"room": "x"})):
                with pytest.raises(ValueError, match="call_branch takes calls"):
                    await handle.call_branch([forged])
            with pytest.raises(ValueError, match="same call twice"):
                await handle.call_branch([c, c])
            with pytest.raises(ValueError, match="key must be"):
                await handle.ask_branch([], key="bad key!")
            return "ok"

    agent = Agent(model=ScriptedModel(lambda r: call("look", room="hall")), tools=tools(ran),
                  reasoning=Forge())
    assert agent.run("x").answer == "ok" and ran == []


def test_a_model_cannot_pass_its_own_call_for_a_branch_one() -> None:
    ran: list[str] = []
    forged = ModelResponse(tool_calls=(ToolCall("branch_k_1", "look", {"room": "a"}),),
                           finish_reason="tool_calls")

    class Turn:
        async def run(self, handle: Handle) -> str:
            turn = await handle.ask_model()
            assert not turn.tool_calls[0].id.startswith("branch_")
            await handle.call_tools(turn.tool_calls)
            return "ok"

    agent = Agent(model=ScriptedModel([forged]), tools=tools(ran), reasoning=Turn())
    assert agent.run("x").answer == "ok"


def test_a_refused_branch_call_spends_nothing_and_the_run_goes_on() -> None:
    ran: list[str] = []

    class UntilRefused:
        async def run(self, handle: Handle) -> str:
            asked = 0
            try:
                while True:
                    await handle.ask_branch([], key=f"n{asked}", tools=False)
                    asked += 1
            except BranchRefused as refused:
                assert refused.stop.reason is StopReason.STEP_BUDGET
            handle.record("search.stopped", {"asked": asked})
            return f"asked {asked}"

    agent = Agent(model=ScriptedModel([], when_exhausted="x"), tools=tools(ran),
                  reasoning=UntilRefused())
    result = agent.run("x", budget=Budget(max_steps=4))
    assert result.stop_reason is StopReason.FINISHED and result.answer == "asked 3"
    assert result.spend.steps == 3  # a step is held back for a wrap-up


def test_an_overrun_on_a_branch_stops_the_run() -> None:
    ran: list[str] = []

    class IgnoresTheCap(ScriptedModel):
        async def complete(self, request: Any) -> ModelResponse:
            return ModelResponse("x" * 40_000, usage=Usage(10, 10_000))

    class Twice:
        async def run(self, handle: Handle) -> str:
            await handle.ask_branch([], key="k", tools=False, max_output_tokens=20)
            await handle.ask_branch([], key="k2", tools=False, max_output_tokens=20)
            return "unreachable"

    agent = Agent(model=IgnoresTheCap([]), tools=tools(ran), reasoning=Twice())
    session = agent.session("x")
    result = session.run()
    assert result.stop_reason is StopReason.MODEL_ERROR and "branch" in result.notice
    events = session.replay()
    assert [e.data["branch"] for e in events if e.type == "model.overrun"] == ["k"]
    assert sum(e.type == "branch.request" for e in events) == 1  # stopped at once
    assert not any(e.type == "model.request" for e in events)  # no wrap-up after an overrun


def test_a_rerun_of_a_branching_session_matches_and_runs_nothing() -> None:
    ran: list[str] = []
    agent = Agent(model=answers({"explore": call("look", room="hall"), "now answer": "done"}),
                  tools=tools(ran), reasoning=Explore())
    session = agent.session("find the key")
    session.run()
    ran.clear()
    report = rerun(agent, session.replay())
    assert report.matches, report.divergences
    assert ran == []


def test_resume_answers_branch_calls_from_the_journal(tmp_path: Any) -> None:
    ran: list[str] = []
    asked: list[int] = []

    def script(request: Any) -> Any:
        asked.append(len(request.messages))
        return call("look", room="hall") if len(asked) == 1 else "report"

    class ThenApproval:
        async def run(self, handle: Handle) -> str:
            answer = await handle.ask_branch([Message.user("explore")], key="n1.s1")
            await handle.call_branch(answer.tool_calls)
            if not handle.history():  # resumed: the planned call is journaled, not planned again
                await handle.call_planned([("send", {"to": "bob"})], reason="chosen path")
            return (await handle.ask_model(tool_choice="none")).text

    def hold(action: Action) -> Decision:
        if action.tool == "send":
            return Decision(Effect.REQUIRE_APPROVAL, "a person sends", "p")
        return Decision(Effect.ALLOW)

    agent = Agent(model=ScriptedModel(script), tools=tools(ran), reasoning=ThenApproval(),
                  policy=Rule(hold), store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session("send the key")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    assert ran == ["look hall"] and len(asked) == 1
    (request,) = session.pending_approvals()
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert result.answer == "report"
    assert ran == ["look hall", "send bob"] and len(asked) == 2  # nothing asked or run again


def test_a_policy_cannot_degrade_a_branch_call_into_a_side_effect() -> None:
    ran: list[str] = []

    @tool(side_effect=True)
    def take(room: str) -> str:
        """Take what is in a room (a side effect)."""
        ran.append(f"take {room}")
        return "taken"

    def degrade(action: Action) -> Decision:
        if action.tool == "look":
            return Decision(Effect.DEGRADE, "take instead", "p", fallback="take")
        return Decision(Effect.ALLOW)

    strategy = Explore()
    agent = Agent(model=answers({"explore": call("look", room="hall"), "now answer": "done"}),
                  tools=[*tools(ran), take], reasoning=strategy, policy=Rule(degrade))
    agent.run("find the key")
    (result,) = strategy.seen[1]
    assert ran == [] and result.status == "denied" and "side effects" in result.content


def test_an_argument_masked_in_the_journal_stays_out_of_every_branch_event() -> None:
    ran: list[str] = []

    def hide_room(action: Action) -> Decision:
        return Decision(Effect.MASK, "rooms are private", "m", fields=("room",),
                        mask_in=("journal",))

    class Deeper:
        async def run(self, handle: Handle) -> str:
            first = await handle.ask_branch([Message.user("explore")], key="a")
            results = await handle.call_branch(first.tool_calls)
            path = [Message.user("explore"), Message.assistant(first.text, first.tool_calls),
                    *(Message.tool(r.call_id, r.name, r.content) for r in results)]
            await handle.ask_branch(path, key="b", tools=False)
            return "ok"

    agent = Agent(model=answers({"explore": call("look", room="vault-7731")}),
                  tools=tools(ran), reasoning=Deeper(), policy=Rule(hide_room))
    session = agent.session("x")
    assert session.run().answer == "ok" and ran == ["look vault-7731"]
    events = session.replay()
    assert sum(e.type == "branch.request" for e in events) == 2
    for e in events:
        assert "7731" not in json.dumps(e.data), e.type


def test_a_malformed_side_effecting_call_on_a_branch_gets_the_gate_s_refusal() -> None:
    ran: list[str] = []
    strategy = Explore()
    agent = Agent(model=answers({"explore": call("send", recipient="eve"), "now answer": "ok"}),
                  tools=tools(ran), reasoning=strategy)
    session = agent.session("x")
    session.run()
    (result,) = strategy.seen[1]
    assert ran == [] and result.status == "rejected"  # never "assume it succeeds"
    (simulated,) = [e.data for e in session.replay() if e.type == "branch.simulated"]
    assert simulated["invalid"] == result.content


class Siblings:
    """Explores ``count`` sibling branches, each proposing the same look; then the session's
    own model takes its turns."""

    def __init__(self, count: int) -> None:
        self.count = count

    async def run(self, handle: Handle) -> str:
        for i in range(1, self.count + 1):
            answer = await handle.ask_branch([Message.user("explore")], key=f"n0.s{i}")
            await handle.call_branch(answer.tool_calls)
        turn = await handle.ask_model()
        while turn.tool_calls:
            await handle.call_tools(turn.tool_calls)
            turn = await handle.ask_model()
        return turn.text


def test_identical_calls_on_sibling_branches_are_exploration_not_a_loop() -> None:
    ran: list[str] = []
    looks = iter([call("look", room="hall"), call("look", room="hall"), "done"])

    def reply(request: Any) -> Any:
        return call("look", room="hall") if request.messages[-1].content == "explore" \
            else next(looks)

    agent = Agent(model=ScriptedModel(reply), tools=tools(ran), reasoning=Siblings(5))
    result = agent.run("find the key")
    # five branches looked into the hall, and the session's own two looks were not counted as
    # the sixth and seventh repeat: each branch is its own trajectory
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert result.answer == "done" and ran.count("look hall") == 7


def test_the_session_s_own_loop_is_still_stopped_after_branch_calls() -> None:
    ran: list[str] = []

    def reply(request: Any) -> Any:
        return call("look", room="hall")

    agent = Agent(model=ScriptedModel(reply), tools=tools(ran), reasoning=Siblings(2))
    result = agent.run("find the key")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert ran.count("look hall") == 2 + 2  # two branch looks, then the session's third stops
