"""Hostile tests of the planned-call seam (Handle.call_planned): a strategy's own calls, from a
plan it validated, pass exactly the gate a model's call passes — and resume and rerun hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import Agent, Budget, ScriptedModel, tool
from tether.policy.base import Action, Context, Decision, Effect, Resource, Subject
from tether.runtime.accounting.stop import StopReason
from tether.runtime.lifecycle.session import Session
from tether.runtime.record.state import fold
from tether.runtime.rerun import rerun
from tether.runtime.strategy.handle import Handle
from tether.runtime.strategy.planned import Note, PlannedCalls
from tether.store.opening import open_store
from tether.types import ModelResponse, ToolCall

STEPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("move", {"block": "a", "to": "table"}),
    ("move", {"block": "b", "to": "c"}),
    ("move", {"block": "a", "to": "b"}),
)


class FixedPlan:
    """Runs a fixed, 'validated' plan one step at a time, continuing from its history on
    resume; stops at the first step that does not succeed."""

    def __init__(self, steps: Sequence[tuple[str, Mapping[str, Any]]] = STEPS) -> None:
        self.steps = tuple(steps)

    async def run(self, handle: Handle) -> str:
        done = [e for e in handle.history() if isinstance(e, PlannedCalls)]
        if any(r is None or r.status != "ok" for e in done for r in e.results):
            return "stopped: a step did not succeed"
        if not any(isinstance(e, Note) and e.kind == "plan" for e in handle.history()):
            await handle.ask_model(tool_choice="none")  # 'writes the problem'
            handle.record("plan", {"steps": [list(s) for s in self.steps]})
        for i in range(len(done), len(self.steps)):
            (result,) = await handle.call_planned([self.steps[i]],
                                                  reason=f"plan step {i + 1}")
            if result.status != "ok":
                return f"stopped at step {i + 1}: {result.status}"
        return (await handle.ask_model(note="report", tool_choice="none")).text


class Rule:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return self.fn(action)


def allow(_: Action) -> Decision:
    return Decision(Effect.ALLOW)


def world() -> tuple[list[dict[str, Any]], Any]:
    ran: list[dict[str, Any]] = []

    @tool(side_effect=True)
    def move(block: str, to: str) -> str:
        """Move a block."""
        ran.append({"block": block, "to": to})
        return f"moved {block} to {to}"

    return ran, move


def agent_for(move: Any, policy: Any = None, store: Any = None, steps: Any = STEPS,
              script: Any = None) -> Agent:
    return Agent(model=ScriptedModel(script or ["(problem)", "all done"]),
                 reasoning=FixedPlan(steps), tools=[move], policy=policy or Rule(allow),
                 store=store)


def test_a_plan_runs_through_the_gate_in_order_and_the_conversation_stays_well_formed() -> None:
    ran, move = world()
    result = agent_for(move).run("stack them")
    assert result.stop_reason is StopReason.FINISHED and result.answer == "all done"
    assert ran == [dict(a) for _, a in STEPS]
    session = agent_for(move).session("stack them")
    session.run()
    events = session.replay()
    kinds = [e.type for e in events]
    # each planned turn is journaled as the strategy's before its decision and its result
    first = kinds.index("strategy.calls")
    assert kinds[first + 1] == "tool.decision"
    assert all(e.data["calls"][0]["id"].startswith("planned_") for e in events
               if e.type == "strategy.calls")
    # the conversation as sent: each planned call in an assistant message, its result right
    # after it, and the script's cursor moved only by the model's own turns
    conversation = fold(events).conversation
    for i, m in enumerate(conversation):
        if m.tool_calls:
            after = conversation[i + 1:i + 1 + len(m.tool_calls)]
            assert [t.tool_call_id for t in after] == [c.id for c in m.tool_calls]
    assert sum(bool(m.tool_calls) for m in conversation) == 3
    decisions = [e.data for e in events if e.type == "tool.decision"]
    assert len(decisions) == 3 and all(d["charged"] for d in decisions)


def test_a_denied_planned_step_does_not_run_and_the_plan_stops() -> None:
    ran, move = world()

    def deny_b(action: Action) -> Decision:
        if action.arguments.get("block") == "b":
            return Decision(Effect.DENY, "b is glued", "glue")
        return Decision(Effect.ALLOW)

    result = agent_for(move, Rule(deny_b)).run("stack them")
    assert ran == [{"block": "a", "to": "table"}]  # step 2 refused, step 3 never tried
    assert result.answer == "stopped at step 2: denied"


def test_an_approval_step_pauses_and_resume_runs_it_once_and_continues(tmp_path: Any) -> None:
    ran, move = world()

    def approve_b(action: Action) -> Decision:
        if action.arguments.get("block") == "b":
            return Decision(Effect.REQUIRE_APPROVAL, "b needs a person", "b")
        return Decision(Effect.ALLOW)

    agent = agent_for(move, Rule(approve_b), store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session("stack them")
    paused = session.run()
    assert paused.stop_reason is StopReason.NEEDS_APPROVAL and session.paused
    assert ran == [{"block": "a", "to": "table"}]
    (request,) = session.pending_approvals()
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert ran == [dict(a) for _, a in STEPS]  # each step exactly once, in order
    assert result.answer == "all done"


def crashed_store(tmp_path: Any, events: Sequence[Any], upto: int, name: str) -> str:
    """The URL of a store a process left when it died right after event ``upto``."""
    url = f"sqlite:///{tmp_path / name}"
    store = open_store(url)
    try:
        store.append(events[0].session_id, list(events[:upto]))
    finally:
        store.close()
    return url


def _cut(tmp_path: Any, agent: Agent, events: Sequence[Any], upto: int, name: str) -> Session:
    """A session as a process that died right after event ``upto`` left it."""
    url = crashed_store(tmp_path, events, upto, name)
    crashed = Agent(model=agent.model, reasoning=agent.reasoning, tools=list(agent.registry),
                    policy=agent.policy, store=url)
    return Session.restore(crashed, events[0].session_id)


def test_resume_after_a_crash_mid_plan_never_repeats_a_journaled_step(tmp_path: Any) -> None:
    ran, move = world()
    agent = agent_for(move)
    session = agent.session("stack them")
    session.run()
    events = session.replay()
    after_first = next(e.seq for e in events if e.type == "tool.result")
    ran.clear()
    result = _cut(tmp_path, agent, events, after_first, "a.db").resume()
    assert result.stop_reason is StopReason.FINISHED
    assert ran == [dict(a) for _, a in STEPS[1:]]  # step 1 was journaled: not again
    # died with step 2 started and no result: an operator decides, nothing runs again
    started = [e.seq for e in events if e.type == "tool.started"][1]
    ran.clear()
    paused = _cut(tmp_path, agent, events, started, "b.db").resume()
    assert paused.stop_reason is StopReason.UNCERTAIN_EFFECT
    assert ran == []


def test_a_rerun_of_a_planned_session_reproduces_it() -> None:
    ran, move = world()
    agent = agent_for(move)
    session = agent.session("stack them")
    session.run()
    ran.clear()
    report = rerun(agent, session.replay())
    assert report.matches, report.divergences
    assert ran == []  # a rerun runs no tool: the record answers


def test_a_model_cannot_pass_its_call_for_a_planned_one() -> None:
    ran, move = world()
    forged = ModelResponse(tool_calls=(ToolCall("planned_1_1", "move",
                                                {"block": "z", "to": "y"}),),
                           finish_reason="tool_calls")

    class Echo:
        async def run(self, handle: Handle) -> str:
            turn = await handle.ask_model()
            assert not turn.tool_calls[0].id.startswith("planned_")
            await handle.call_tools(turn.tool_calls)
            await handle.call_planned([("move", {"block": "a", "to": "b"})], reason="step 1")
            assert [e.calls[0].id for e in handle.history() if isinstance(e, PlannedCalls)] \
                == ["planned_1_1"]
            return "ok"

    agent = Agent(model=ScriptedModel([forged]), reasoning=Echo(), tools=[move])
    assert agent.run("go").answer == "ok"
    assert ran == [{"block": "z", "to": "y"}, {"block": "a", "to": "b"}]


def test_arguments_are_frozen_when_planned_and_malformed_plans_are_refused() -> None:
    ran, move = world()
    arguments: dict[str, Any] = {"block": "a", "to": "b"}
    errors: list[str] = []

    class Mutating:
        async def run(self, handle: Handle) -> str:
            for bad in ([], [("", {})], [("move", "a b")], [("move",)], [("move", {1: 2})]):
                try:
                    await handle.call_planned(bad, reason="x")  # type: ignore[arg-type]
                except ValueError as exc:
                    errors.append(str(exc))
            with pytest.raises(ValueError, match="reason"):
                await handle.call_planned([("move", arguments)], reason=" ")
            pending = handle.call_planned([("move", arguments)], reason="step 1")
            arguments["block"] = "EVIL"  # changed after it was planned: not what runs
            await pending
            return "ok"

    Agent(model=ScriptedModel([]), reasoning=Mutating(), tools=[move]).run("go")
    assert len(errors) == 5
    assert ran == [{"block": "a", "to": "b"}]


def test_an_unknown_or_schema_breaking_planned_call_gets_the_gate_s_refusal() -> None:
    ran, move = world()
    results: list[Any] = []

    class Wrong:
        async def run(self, handle: Handle) -> str:
            results.extend(await handle.call_planned(
                [("fly", {}), ("move", {"block": "a"})], reason="bad step"))
            return "ok"

    Agent(model=ScriptedModel([]), reasoning=Wrong(), tools=[move]).run("go")
    assert ran == [] and [r.status for r in results] == ["rejected", "rejected"]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=8),
       limit=st.integers(min_value=0, max_value=6))
def test_the_tool_call_budget_holds_for_any_plan(steps: list[str], limit: int) -> None:
    ran, move = world()
    plan = [("move", {"block": b, "to": f"t{i}"}) for i, b in enumerate(steps)]
    agent = agent_for(move, steps=plan)
    result = agent.run("stack them", budget=Budget(max_tool_calls=limit))
    assert len(ran) <= limit
    assert result.usage is not None and result.spend.tool_calls <= limit
    if len(steps) > limit:
        assert result.stop_reason is StopReason.TOOL_CALL_BUDGET


def test_the_step_budget_holds_across_planned_turns() -> None:
    ran, move = world()
    # one step, held back for the wrap-up: the plan is never written, nothing runs
    result = agent_for(move).run("stack them", budget=Budget(max_steps=1))
    assert result.stop_reason is StopReason.STEP_BUDGET and ran == []
    # two: the problem, then the plan runs (planned calls are no model step), then the budget
    # stops the report and the held-back wrap-up answers
    result = agent_for(move).run("stack them", budget=Budget(max_steps=2))
    assert result.stop_reason is StopReason.STEP_BUDGET and result.spend.steps == 2
    assert len(ran) == 3


def test_a_value_masked_in_the_journal_is_hidden_in_the_planned_turn_too() -> None:
    ran, move = world()

    def mask(action: Action) -> Decision:
        return Decision(Effect.MASK, "secret place", "m", fields=("to",), mask_in=("journal",))

    agent = agent_for(move, Rule(mask), steps=[("move", {"block": "a", "to": "vault-7731"})])
    session = agent.session("stack them")
    session.run()
    assert ran == [{"block": "a", "to": "vault-7731"}]
    events = session.replay()
    assert "vault-7731" not in str([e.data for e in events])
    assert session.verify() is None


def test_a_policy_can_hold_planned_calls_to_their_own_rule() -> None:
    from tether.journal.views.whatif import what_if

    ran, move = world()
    seen: list[bool] = []

    class PlannedNeedsAPerson:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            seen.append(context.planned)
            if context.planned:
                return Decision(Effect.DENY, "plans may not move blocks", "no-plans")
            return Decision(Effect.ALLOW)

    model_call = ModelResponse(tool_calls=(ToolCall("m1", "move", {"block": "z", "to": "y"}),),
                               finish_reason="tool_calls")

    class Both:
        async def run(self, handle: Handle) -> str:
            turn = await handle.ask_model()
            await handle.call_tools(turn.tool_calls)  # the model's own: allowed
            (result,) = await handle.call_planned([STEPS[0]], reason="step 1")
            return result.status

    agent = Agent(model=ScriptedModel([model_call]), reasoning=Both(), tools=[move],
                  policy=PlannedNeedsAPerson())
    session = agent.session("go")
    assert session.run().answer == "denied"
    assert seen == [False, True] and ran == [{"block": "z", "to": "y"}]
    # a what-if over the record rebuilds the same context: the same two decisions
    assert what_if(session.replay(), PlannedNeedsAPerson()) == []


def test_a_yaml_policy_names_planned_calls() -> None:
    from tether.policy.yaml_policy import YamlPolicy

    policy = YamlPolicy.from_string("""
version: 1
policy_id: plans
default: allow
rules:
  - id: plans-ask-first
    effect: deny
    when: {context: {planned: true}, tool: move}
    reason: a plan's moves are refused here
""")
    ran, move = world()
    result = agent_for(move, policy).run("stack them")
    assert result.answer == "stopped at step 1: denied" and ran == []
    with pytest.raises(ValueError, match="planned"):
        YamlPolicy.from_string("""
version: 1
policy_id: p
default: allow
rules:
  - {id: r, effect: deny, when: {context: {planned: maybe}}}
""")
