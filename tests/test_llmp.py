"""LLM+P with a real planner (Fast Downward) and an independent validator (pddl-pyvalidator):
the plan's actions run through the gate, in order; replanning on failure and refusal; invalid
problems get errors the model can act on, within bounds; pause, resume, crash and rerun hold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_planned_calls import Rule, allow
from tether import Agent, Budget, ScriptedModel
from tether.journal.views.timeline import timeline
from tether.policy.base import Action, Decision, Effect
from tether.reasoning.llmp import LLMP
from tether.reasoning.pddl import Domain, blocksworld, logistics
from tether.reasoning.pddl.worlds import BlocksWorld, Logistics
from tether.reasoning.planner import PlanAction, PlanningError, problem_text
from tether.runtime.accounting.stop import StopReason
from tether.runtime.lifecycle.session import Session
from tether.runtime.rerun import rerun
from tether.store.opening import open_store
from tether.types import ModelResponse, ToolCall

from conftest import import_or_unavailable

import_or_unavailable("unified_planning", "planning")
import_or_unavailable("pyval", "planning")

TASK = "Blocks: a is on b; b and c are on the table. Put c on a and b on c."
GOAL = {"b": "c", "c": "a"}
PROBLEM = """Here it is:
```pddl
(define (problem swap) (:domain blocksworld)
  (:objects a b c)
  (:init (on a b) (ontable b) (ontable c) (clear a) (clear c) (handempty))
  (:goal (and (on b c) (on c a))))
```"""


def blocks() -> BlocksWorld:
    return BlocksWorld({"a": "b", "b": "table", "c": "table"})


def agent(world: Any, script: Sequence[Any], domain: Domain | None = None, policy: Any = None,
          store: str | None = None, **kw: Any) -> Agent:
    return Agent(model=ScriptedModel(list(script)), reasoning=LLMP(domain or blocksworld(), **kw),
                 tools=world.tools(), policy=policy or Rule(allow), store=store)


def notes(events: Sequence[Any], kind: str) -> list[dict[str, Any]]:
    return [e.data["data"] for e in events if e.type == "strategy.note" and e.data["kind"] == kind]


def test_the_planner_s_plan_runs_through_the_gate_and_audit_shows_it() -> None:
    world = blocks()
    session = agent(world, [PROBLEM, "Done."]).session(TASK)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED and result.answer == "Done."
    assert world.satisfies(GOAL)
    events = session.replay()
    (plan,) = notes(events, "plan")
    assert plan["validation"] == {"valid": True, "status": "VALID", "validator": "PyVal"}
    assert "(:goal (and (on b c) (on c a)))" in plan["problem"]
    decided = [(e.data["tool"], e.data["arguments"]) for e in events
               if e.type == "tool.decision"]
    planned = [blocksworld().call_for(PlanAction(a[0], tuple(a[1:]))) for a in plan["actions"]]
    assert decided == planned  # exactly the validated plan's steps, in order
    shown = "\n".join(timeline(events))
    assert "strategy plan 1 for domain blocksworld (6 steps; PyVal: VALID): (unstack a b)" in shown
    assert "strategy's planned calls (no model asked): plan 1 step 1/6" in shown


def test_an_invalid_problem_gets_an_error_the_model_can_act_on() -> None:
    world = blocks()
    broken = PROBLEM.replace("(clear c)", "(shiny c)")
    session = agent(world, [broken, "(define (problem p) (:domain gripper))", PROBLEM,
                            "Done."]).session(TASK)
    assert session.run().stop_reason is StopReason.FINISHED and world.satisfies(GOAL)
    events = session.replay()
    whys = [n["why"] for n in notes(events, "problem.invalid")]
    assert "does not parse" in whys[0] and "shiny" in whys[0]
    assert "must be (:domain blocksworld)" in whys[1]
    requests = [e.data["new"] for e in events if e.type == "model.request"]
    assert "cannot be used" in requests[1][-1]["content"]  # the model got the reason back


def test_problems_are_retried_a_bounded_number_of_times_and_nothing_runs() -> None:
    world = blocks()
    session = agent(world, ["no idea", "(define (problem p", PROBLEM.replace(
        "(on c a)", "(on c c)"), "I could not plan it."], max_problems=3).session(TASK)
    result = session.run()
    assert result.answer == "I could not plan it." and world.moves == 0
    whys = [n["why"] for n in notes(session.replay(), "problem.invalid")]
    assert len(whys) == 3
    assert "no PDDL problem found" in whys[0] and "parentheses never close" in whys[1]
    assert "no plan reaches the goal" in whys[2]
    assert notes(session.replay(), "plan.abandoned")


def test_a_failed_step_replans_from_the_world_as_it_is() -> None:
    world = BlocksWorld({"a": "b", "b": "table", "c": "table", "d": "c"})  # d hides on c
    fixed = """(define (problem again) (:domain blocksworld) (:objects a b c d)
      (:init (ontable a) (ontable b) (on d c) (ontable c) (clear a) (clear b) (clear d)
             (handempty))
      (:goal (and (on b c) (on c a))))"""
    session = agent(world, [PROBLEM, fixed, "Done."]).session(TASK)
    assert session.run().stop_reason is StopReason.FINISHED
    assert world.satisfies(GOAL)
    events = session.replay()
    assert len(notes(events, "plan")) == 2
    replan = [e.data["new"] for e in events if e.type == "model.request"][1][-1]["content"]
    assert "ended error" in replan and "(on d c)" in replan  # the world, from the tool


def test_a_refused_step_is_never_planned_again_and_the_plan_reroutes() -> None:
    world = Logistics({"t1": "depot"}, {"p1": "depot"},
                      [("depot", "south"), ("depot", "north"), ("north", "south")])
    problem = """(define (problem d) (:domain logistics)
      (:objects t1 - truck p1 - package depot north south - place)
      (:init (at t1 depot) (at p1 depot) (road depot south) (road depot north)
             (road north south))
      (:goal (at p1 south)))"""

    def no_direct_road(action: Action) -> Decision:
        if action.tool == "drive" and action.arguments == {
                "truck": "t1", "origin": "depot", "destination": "south"}:
            return Decision(Effect.DENY, "the direct road is closed", "roads")
        return Decision(Effect.ALLOW)

    # the model describes the world as the tools left it (p1 in t1), without the closed road
    detour = problem.replace("(road depot south) ", "").replace("(at p1 depot)", "(in p1 t1)")
    session = agent(world, [problem, problem, detour, "Delivered."], logistics(),
                    Rule(no_direct_road)).session("Get p1 from the depot to south.")
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert world.satisfies({"p1": "south"}) and world.trucks["t1"] == "south"
    events = session.replay()
    plans = notes(events, "plan")  # the planner is told: no plan after the refusal needs it
    assert [["drive", "t1", "depot", "south"] in p["actions"] for p in plans] == [
        True] + [False] * (len(plans) - 1)
    assert all(p["refused"] == ["(drive t1 depot south)"] for p in plans[1:])
    assert [a[0] for a in plans[-1]["actions"]] == ["drive", "drive", "unload"]


def test_an_approval_step_pauses_and_the_plan_continues_on_resume(tmp_path: Any) -> None:
    world = blocks()

    def approve_stacks(action: Action) -> Decision:
        if action.tool == "stack":
            return Decision(Effect.REQUIRE_APPROVAL, "stacking needs a person", "ops")
        return Decision(Effect.ALLOW)

    recipe = agent(world, [PROBLEM, "Done."], policy=Rule(approve_stacks),
                   store=f"sqlite:///{tmp_path / 'j.db'}")
    session = recipe.session(TASK)
    for _ in range(2):  # two stacks: two pauses
        result = session.run() if not session.paused else Session.restore(
            recipe, session.id).resume()
        assert result.stop_reason is StopReason.NEEDS_APPROVAL
        (request,) = recipe.approval_store.pending(session.id)
        recipe.approval_store.approve(request.id, approver="ops")
        session = Session.restore(recipe, session.id)
    result = session.resume()
    assert result.stop_reason is StopReason.FINISHED and world.satisfies(GOAL)
    assert world.moves == 6  # each step once
    assert result.spend.steps == 2  # the problem and the report: no new problem on resume


def test_the_model_s_calls_never_run_and_steps_come_from_the_validated_plan() -> None:
    world = blocks()
    sneaky = ModelResponse(PROBLEM, (ToolCall("x1", "stack", {"block": "a", "onto": "c"}),),
                           finish_reason="tool_calls")
    after = ModelResponse("Also stacking a on c.", (ToolCall("x2", "put_down",
                                                             {"block": "a"}),),
                          finish_reason="tool_calls")
    session = agent(world, [sneaky, after]).session(TASK)
    session.run()
    assert world.satisfies(GOAL) and world.moves == 6
    events = session.replay()
    skipped = [e.data["call_id"] for e in events
               if e.type == "tool.result" and e.data["status"] == "skipped"]
    assert skipped == ["x1", "x2"]  # neither of the model's own calls ran


def test_a_crash_mid_plan_resumes_without_repeating_a_step(tmp_path: Any) -> None:
    world = blocks()
    recipe = agent(world, [PROBLEM, "Done."])
    session = recipe.session(TASK)
    session.run()
    events = session.replay()
    third = [e.seq for e in events if e.type == "tool.result"][2]
    url = f"sqlite:///{tmp_path / 'cut.db'}"
    store = open_store(url)
    store.append(session.id, list(events[:third]))
    store.close()
    world2 = BlocksWorld({"a": "table", "b": "table"})  # as the three steps left it
    world2.holding = "c"
    moved = world2.moves
    resumed = Session.restore(agent(world2, [PROBLEM, "Done."], store=url), session.id)
    result = resumed.resume()
    assert result.stop_reason is StopReason.FINISHED and world2.satisfies(GOAL)
    assert world2.moves - moved == 3  # the three steps left, none again
    assert result.spend.steps == 2


def test_a_rerun_reproduces_the_plan() -> None:
    world = blocks()
    recipe = agent(world, [PROBLEM, "Done."])
    session = recipe.session(TASK)
    session.run()
    report = rerun(agent(blocks(), [PROBLEM, "Done."]), session.replay())
    assert report.matches, report.divergences


def test_the_tool_call_budget_stops_the_plan() -> None:
    world = blocks()
    result = agent(world, [PROBLEM, "Partly done."]).run(TASK, budget=Budget(max_tool_calls=3))
    assert result.stop_reason is StopReason.TOOL_CALL_BUDGET
    assert world.moves == 3


def test_problem_text_and_domain_binding_checks() -> None:
    assert problem_text("x (define (problem p) (a (b))) y") == "(define (problem p) (a (b)))"
    with pytest.raises(PlanningError):
        problem_text("(define (domain d))")
    with pytest.raises(ValueError, match="bind each action"):
        Domain(blocksworld().pddl, {"stack": blocksworld().actions["stack"]})
    with pytest.raises(ValueError, match="no action of domain"):
        blocksworld().call_for(PlanAction("fly", ("a",)))
    with pytest.raises(ValueError):
        LLMP(blocksworld(), max_problems=0)


def test_concurrent_sessions_plan_and_validate_safely() -> None:
    import asyncio

    worlds = [blocks() for _ in range(6)]

    async def all_of_them() -> list[Any]:
        return await asyncio.gather(*(agent(w, [PROBLEM, "Done."]).session(TASK).arun()
                                      for w in worlds))

    results = asyncio.run(all_of_them())
    assert all(r.stop_reason is StopReason.FINISHED for r in results)
    assert all(w.satisfies(GOAL) for w in worlds)


def test_reflexion_around_llmp_plans_each_attempt_afresh() -> None:
    from tether.reasoning.graders import state
    from tether.reasoning.reflexion import GraderCheck, Reflexion

    world = blocks()
    misread = PROBLEM.replace("(:goal (and (on b c) (on c a)))", "(:goal (on a c))")
    again = """(define (problem again) (:domain blocksworld) (:objects a b c)
      (:init (on a c) (ontable c) (ontable b) (clear a) (clear b) (handempty))
      (:goal (and (on b c) (on c a))))"""
    check = GraderCheck(state(lambda w: w.satisfies(GOAL)), environment=world)
    recipe = Agent(model=ScriptedModel([misread, "Done.", "I misread the goal.", again,
                                        "Done now."]),
                   reasoning=Reflexion(actor=LLMP(blocksworld()), evaluator=check),
                   tools=world.tools())
    session = recipe.session(TASK)
    assert session.run().answer == "Done now."
    assert world.satisfies(GOAL)
    events = session.replay()
    assert [n["passed"] for n in notes(events, "evaluation")] == [False, True]
    assert [n["plan"] for n in notes(events, "plan")] == [1, 1]  # each attempt its own plan


@settings(max_examples=10, deadline=None)
@given(steps=st.integers(min_value=1, max_value=5), calls=st.integers(min_value=0, max_value=8))
def test_the_budget_holds_across_replans(steps: int, calls: int) -> None:
    world = BlocksWorld({"a": "b", "b": "table", "c": "table", "d": "c"})  # the first plan fails
    fixed = """(define (problem again) (:domain blocksworld) (:objects a b c d)
      (:init (ontable a) (ontable b) (on d c) (ontable c) (clear a) (clear b) (clear d)
             (handempty))
      (:goal (and (on b c) (on c a))))"""
    result = agent(world, [PROBLEM, fixed, "Done."]).run(
        TASK, budget=Budget(max_steps=steps, max_tool_calls=calls))
    assert result.spend.steps <= steps and result.spend.tool_calls <= calls
    assert world.moves <= calls
