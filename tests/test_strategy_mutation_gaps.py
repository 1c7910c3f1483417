"""Checks a mutation run found missing: each fails with a small plausible bug in the strategy
seams (LATS's all-or-none finish, LLM+P's validator check, planned turns' ids and history) and
passes without it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from test_planned_calls import Rule, allow
from tether import Agent, Budget, ScriptedModel, tool
from tether.reasoning.lats import LATS, Judgement, Trajectory
from tether.reasoning.planner import PlanAction, PyVal, Validation
from tether.runtime.accounting.stop import StopReason
from tether.runtime.strategy.handle import Handle
from tether.runtime.strategy.planned import PlannedCalls
from tether.types import ModelRequest, ModelResponse, ToolCall

from conftest import import_or_unavailable


def effects(ran: list[str]) -> list[Any]:
    @tool
    def look(what: str) -> str:
        """Look at something (changes nothing)."""
        ran.append(f"look {what}")
        return f"{what} looks fine"

    @tool(side_effect=True)
    def pay(who: str) -> str:
        """Pay someone (a side effect)."""
        ran.append(f"pay {who}")
        return f"paid {who}"

    return [look, pay]


class ByDepth:
    """Values a path by what it did: an answer solves it; one step is promising, more less so
    (so the search keeps the one-effect path as its best while it explores the longer one)."""

    async def judge(self, handle: Handle, task: str, path: Trajectory) -> Judgement:
        if path.answer is not None:
            return Judgement(1.0, "answered")
        return Judgement(0.5 if len(path.calls) == 1 else 0.1, "partway")


def two_payments(request: ModelRequest) -> Any:
    seen = sum(m.role == "tool" for m in request.messages)
    if request.tool_choice == "none" or not request.tools:
        return "Told the user what was and was not done."
    if seen == 0:
        return ModelResponse(tool_calls=(ToolCall("", "pay", {"who": "alice"}),),
                             finish_reason="tool_calls")
    if seen == 1:
        return ModelResponse(tool_calls=(ToolCall("", "look", {"what": "ledger"}),
                                         ToolCall("", "pay", {"who": "bob"})),
                             finish_reason="tool_calls")
    return "Paid alice and bob."


def test_lats_runs_none_of_its_chosen_path_when_the_budget_cannot_cover_all_of_it() -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(two_payments), tools=effects(ran),
                  reasoning=LATS(value=ByDepth(), n=1, max_iterations=5))
    session = agent.session("Pay alice and bob.", budget=Budget(max_tool_calls=2))
    result = session.run()
    events = session.replay()
    (tree,) = [e.data["data"] for e in events
               if e.type == "strategy.note" and e.data["kind"] == "lats.tree"]
    chosen = {n["id"]: n for n in tree["nodes"]}[tree["chosen"]]
    assert tree["solved"] and chosen["terminal"]  # the path was found: two payments
    assert ran == ["look ledger"]  # the branch's look ran (one call); one call is left for two
    # payments, so neither ran: all of the path's side effects, or none
    assert not [e for e in events if e.type == "strategy.calls"]
    assert result.stop_reason is StopReason.FINISHED, result.notice


class Invalid:
    """A planner whose plan breaks the domain's rules (stacking with an empty hand)."""

    def __init__(self) -> None:
        self.asked = 0

    def solve(self, domain: str, problem: str) -> tuple[PlanAction, ...]:
        self.asked += 1
        return (PlanAction("stack", ("c", "a")), PlanAction("stack", ("b", "c")))


def test_llmp_runs_nothing_of_a_plan_its_validator_rejected() -> None:
    import_or_unavailable("pyval", "planning")
    from test_llmp import PROBLEM, blocks
    from tether.reasoning.llmp import LLMP
    from tether.reasoning.pddl import blocksworld

    world = blocks()
    before = world.facts()
    planner = Invalid()
    agent = Agent(model=ScriptedModel([PROBLEM] * 3 + ["Could not plan it."]),
                  reasoning=LLMP(blocksworld(), planner=planner, validator=PyVal()),
                  tools=world.tools(), policy=Rule(allow))
    session = agent.session("Put c on a and b on c.")
    result = session.run()
    events = session.replay()
    assert planner.asked == 3  # each problem was planned, and each plan rejected
    invalid = [e.data["data"] for e in events
               if e.type == "strategy.note" and e.data["kind"] == "problem.invalid"]
    assert len(invalid) == 3 and all("does not validate" in i["why"] for i in invalid)
    assert not [e for e in events if e.type in ("tool.decision", "strategy.calls")]
    assert world.facts() == before and world.moves == 0
    assert result.answer == "Could not plan it."


def test_the_real_validator_rejects_the_stub_plan() -> None:
    import_or_unavailable("pyval", "planning")
    from test_llmp import PROBLEM
    from tether.reasoning.pddl import blocksworld
    from tether.reasoning.planner import problem_text

    verdict: Validation = PyVal().validate(blocksworld().pddl, problem_text(PROBLEM),
                                           Invalid().solve("", ""))
    assert not verdict.valid


class Turns:
    """Three planned turns: two calls, one call, two calls; then reports what history gave."""

    def __init__(self) -> None:
        self.history: tuple[Any, ...] = ()

    async def run(self, handle: Handle) -> str:
        plan: Sequence[Sequence[tuple[str, dict[str, Any]]]] = (
            [("look", {"what": "a"}), ("look", {"what": "b"})],
            [("look", {"what": "c"})],
            [("look", {"what": "d"}), ("look", {"what": "e"})])
        for i, turn in enumerate(plan, start=1):
            await handle.call_planned(turn, reason=f"turn {i}")
        self.history = handle.history()
        return "done"


def test_planned_turns_get_distinct_ids_and_history_gives_each_turn_its_own_results() -> None:
    ran: list[str] = []
    strategy = Turns()
    agent = Agent(model=ScriptedModel(["unused"]), tools=effects(ran), reasoning=strategy)
    session = agent.session("look at five things")
    assert session.run().answer == "done"
    turns = [e for e in strategy.history if isinstance(e, PlannedCalls)]
    assert [t.reason for t in turns] == ["turn 1", "turn 2", "turn 3"]
    ids = [c.id for t in turns for c in t.calls]
    assert len(ids) == len(set(ids)) == 5
    for turn in turns:
        assert [r.call_id for r in turn.results if r] == [c.id for c in turn.calls]
        assert [r.content for r in turn.results if r] == [
            f"{c.arguments['what']} looks fine" for c in turn.calls]
    # a turn's read-only calls run together: their order within a turn is the scheduler's (a
    # loaded machine ran "look b" first); that each ran once is what is asserted
    assert sorted(ran) == ["look a", "look b", "look c", "look d", "look e"]
    results = [e.data["call_id"] for e in session.replay() if e.type == "tool.result"]
    assert results == ids  # each id journaled once, with its own result
