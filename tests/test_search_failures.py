"""Searches and plans that say when they failed: an unsolved LATS search does not hand over an
answer its own value function judged wrong as if it were right; LLM+P plans around a step the
policy refused when another plan exists."""

from __future__ import annotations

from typing import Any

from test_lats import TASK, drawers, model, notes
from tether import Agent, Budget, ModelRequest, ScriptedModel
from tether.reasoning.graders import contains
from tether.reasoning.lats import LATS, GraderValue
from tether.runtime.accounting.stop import StopReason


def owning_up(request: ModelRequest) -> Any:
    if "not verified" in request.messages[-1].content:
        return "I could not verify where the key is; my best guess, judged wrong, is drawer 1."
    return model(request)


def test_an_unsolved_search_does_not_pass_off_an_answer_judged_wrong() -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(owning_up), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(contains("no such drawer")), n=2,
                                 max_iterations=3))
    session = agent.session(TASK, budget=Budget(max_steps=30))
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    events = session.replay()
    (tree,) = notes(events, "lats.tree")
    chosen = {n["id"]: n for n in tree["nodes"]}[tree["chosen"]]
    assert tree["solved"] is False and chosen["terminal"] and chosen["value"] < 0.9
    assert result.answer.startswith("I could not verify")  # not the answer judged wrong
    last = [e.data for e in events if e.type == "model.request"][-1]
    told = last["new"][-1]["content"]
    assert "not verified" in told and "judged" in told and tree["stopped"] in told
    assert not any(r.startswith("send") for r in ran)


LOGISTICS = """(define (problem d) (:domain logistics)
  (:objects t1 - truck p1 - package depot north south - place)
  (:init (at t1 depot) (at p1 depot) (road depot south) (road depot north) (road north south))
  (:goal (at p1 south)))"""


def test_a_refused_step_is_planned_around_when_another_plan_exists() -> None:
    from conftest import import_or_unavailable

    import_or_unavailable("unified_planning", "planning")
    import_or_unavailable("pyval", "planning")
    from test_planned_calls import Rule
    from tether.policy.base import Action, Decision, Effect
    from tether.reasoning.llmp import LLMP
    from tether.reasoning.pddl import logistics
    from tether.reasoning.pddl.worlds import Logistics

    world = Logistics({"t1": "depot"}, {"p1": "depot"},
                      [("depot", "south"), ("depot", "north"), ("north", "south")])

    def direct_road_closed(action: Action) -> Decision:
        if action.tool == "drive" and action.arguments == {
                "truck": "t1", "origin": "depot", "destination": "south"}:
            return Decision(Effect.DENY, "the direct road is closed", "roads")
        return Decision(Effect.ALLOW)

    def planner_model(request: ModelRequest) -> str:
        """Describes the world as the tools left it, the closed road included: a model cannot
        know which road a policy closes; the planner is told."""
        last = request.messages[-1].content
        if "Tell the user" in last:
            return "Delivered." if "The plan ran" in last else "Not delivered."
        loaded = any(m.role == "tool" and "p1" in m.content and "t1" in m.content
                     for m in request.messages)
        return LOGISTICS.replace("(at p1 depot)", "(in p1 t1)") if loaded else LOGISTICS

    agent = Agent(model=ScriptedModel(planner_model), reasoning=LLMP(logistics()),
                  tools=world.tools(), policy=Rule(direct_road_closed))
    session = agent.session("Get p1 from the depot to south.")
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert world.satisfies({"p1": "south"}) and world.trucks["t1"] == "south"
    events = session.replay()
    plans = [n["actions"] for n in notes(events, "plan")]
    assert plans[-1] == [["drive", "t1", "depot", "north"], ["drive", "t1", "north", "south"],
                         ["unload", "p1", "t1", "south"]]
    assert len(plans) == 2 and notes(events, "problem.invalid") == []
    assert notes(events, "plan")[-1]["refused"] == ["(drive t1 depot south)"]
    assert result.answer == "Delivered."


def test_a_plan_that_still_needs_a_refused_step_is_sent_back_and_never_runs_it() -> None:
    """A planner and a validator that ignore the guard (stand-ins): the plan is refused before
    anything of it runs, and the model is told why."""
    from conftest import import_or_unavailable

    import_or_unavailable("unified_planning", "planning")
    from test_planned_calls import Rule
    from tether.policy.base import Action, Decision, Effect
    from tether.reasoning.llmp import LLMP
    from tether.reasoning.pddl import logistics
    from tether.reasoning.pddl.worlds import Logistics
    from tether.reasoning.planner import PlanAction, Validation

    class Stubborn:
        def solve(self, domain: str, problem: str) -> tuple[PlanAction, ...]:
            return (PlanAction("drive", ("t1", "depot", "south")),)

        def validate(self, domain: str, problem: str,
                     plan: tuple[PlanAction, ...]) -> Validation:
            return Validation(True, "VALID", "")

    world = Logistics({"t1": "depot"}, {"p1": "depot"}, [("depot", "south")])
    drives: list[Action] = []

    def closed(action: Action) -> Decision:
        drives.append(action)
        return Decision(Effect.DENY, "the road is closed", "roads")

    agent = Agent(model=ScriptedModel([], when_exhausted=LOGISTICS), tools=world.tools(),
                  reasoning=LLMP(logistics(), planner=Stubborn(), validator=Stubborn()),
                  policy=Rule(closed))
    session = agent.session("Get the truck to south.")
    session.run()
    events = session.replay()
    assert len(drives) == 1 and world.trucks["t1"] == "depot"  # refused once, never again
    whys = [n["why"] for n in notes(events, "problem.invalid")]
    assert whys and all("which the policy refuses" in w for w in whys)


def test_forbid_guards_an_action_without_precondition_in_a_domain_without_requirements() -> None:
    from conftest import import_or_unavailable

    import_or_unavailable("unified_planning", "planning")
    from tether.reasoning.planner import FastDownward, PlanAction, forbid

    domain = """(define (domain hops) (:predicates (at ?x) (link ?x ?y))
      (:action jump :parameters (?x ?y) :effect (and (not (at ?x)) (at ?y)))
      (:action walk :parameters (?x ?y) :precondition (and (at ?x) (link ?x ?y))
        :effect (and (not (at ?x)) (at ?y))))"""
    problem = """(define (problem p) (:domain hops) (:objects a b c)
      (:init (at a) (link a b) (link b c)) (:goal (at c)))"""
    assert FastDownward().solve(domain, problem) == (PlanAction("jump", ("a", "c")),)
    jumps = [PlanAction("jump", (x, y)) for x in "abc" for y in "abc"]
    plan = FastDownward().solve(*forbid(domain, problem, [*jumps, PlanAction("walk", ("z", "c"))]))
    assert plan == (PlanAction("walk", ("a", "b")), PlanAction("walk", ("b", "c")))
    assert forbid(domain, problem, [PlanAction("walk", ("z", "c"))]) == (domain, problem)
