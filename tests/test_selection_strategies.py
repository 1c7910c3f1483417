"""Tool selection under the strategies that do not take turns: LATS's branches and LLM+P's plans.

Hostile first: with any ``ToolSelection`` a LATS branch was refused every call as an unknown tool
(its calls came before any turn's offer) while its model was shown every tool, and an LLM+P
plan's steps were refused as unknown whenever ``k`` was below the domain's tool count. A branch
is now offered — and shown — a selection of its own, and its calls are held to it; a validated
plan's steps are decided at the gate (the offer limits what the model is shown, not what a plan
the strategy validated may run) and a tool the policy denies still never runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from test_lats import RIGHT, TASK, call, drawers, model
from test_planned_calls import Rule, allow, crashed_store
from tether import Agent, ScriptedModel, tool
from tether.journal.views.timeline import timeline
from tether.policy.base import Action, Decision, Effect
from tether.reasoning.lats import LATS, GraderValue
from tether.runtime.accounting.stop import StopReason
from tether.runtime.lifecycle.session import Session
from tether.runtime.rerun import rerun
from tether.runtime.strategy.handle import Handle
from tether.tools.selection import ToolSelection
from tether.types import Message, ModelRequest, ModelResponse, ToolCall

ARGUMENTS: dict[str, dict[str, Any]] = {"open_drawer": {"n": 1}, "send_key": {"to": "bob"}}
CATALOG_NAMES = ["open_drawer", "send_key", "inventory_0", "inventory_1", "inventory_2",
                 "inventory_3"]


def distractors(n: int) -> list[Any]:
    out = []
    for i in range(n):
        def manage(item: str = "") -> str:
            return "managed"
        manage.__name__ = f"inventory_{i}"
        manage.__doc__ = f"Manage inventory item number {i} in the warehouse."
        out.append(tool(manage))
    return out


def branch_events(events: Sequence[Any], kind: str) -> list[Any]:
    return [e.data for e in events if e.type == kind]


def test_lats_branches_are_offered_a_selection_and_their_calls_run() -> None:
    ran: list[str] = []
    shown: list[list[str]] = []

    def watching(request: ModelRequest) -> Any:
        shown.append([s.name for s in request.tools])
        return model(request)

    agent = Agent(model=ScriptedModel(watching), tools=[*drawers(ran), *distractors(12)],
                  reasoning=LATS(value=GraderValue(RIGHT), n=2),
                  tool_selection=ToolSelection(k=2))
    session = agent.session(TASK)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert result.answer == "Sent bob the key from drawer 2."
    assert ran.count("send bob") == 1 and "send alice" not in ran
    assert "open 2" in ran  # the branch's side-effect-free call ran through the gate
    events = session.replay()
    results = [d for d in branch_events(events, "tool.result")
               if d["call_id"].startswith("branch_")]
    assert results and all(d["status"] == "ok" for d in results), results
    # each branch call was shown its own selection, never the whole catalog, and journaled it
    requests = branch_events(events, "branch.request")
    offered = [tuple(r["tools"]) for r in requests if r["tools"]]
    assert offered and all(0 < len(t) <= 2 for t in offered), offered
    assert all(len(s) <= 2 for s in shown), shown
    selected = [d for d in branch_events(events, "tools.selected") if "branch" in d]
    assert {d["branch"] for d in selected} == {r["key"] for r in requests if r["tools"]}
    ran.clear()  # a rerun offers each branch what the record offered, and runs nothing
    report = rerun(agent, events)
    assert report.matches, report.divergences
    assert ran == []


def test_a_search_resumed_in_another_process_holds_branch_calls_to_their_offer(
        tmp_path: Any) -> None:
    ran: list[str] = []

    def build(store: str | None = None) -> Agent:
        return Agent(model=ScriptedModel(model), tools=[*drawers(ran), *distractors(12)],
                     reasoning=LATS(value=GraderValue(RIGHT), n=2),
                     tool_selection=ToolSelection(k=2), store=store)

    full = build().session(TASK)
    full.run()
    events = full.replay()
    # a process that died right after the first branch answer asking for a call: the call is
    # owed, and a new recipe object must judge it by that branch's journaled offer
    cut = next(i for i, e in enumerate(events) if e.type == "branch.response"
               and e.data["response"]["tool_calls"]) + 1
    url = crashed_store(tmp_path, events, cut, "crashed.db")
    resumed = Session.restore(build(url), events[0].session_id)
    ran.clear()
    result = resumed.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert ran.count("send bob") == 1 and "open 2" in ran
    branch = [e.data for e in resumed.replay() if e.type == "tool.result"
              and e.data["call_id"].startswith("branch_")]
    assert branch and all(d["status"] == "ok" for d in branch), branch


def test_a_branch_call_to_a_tool_its_branch_was_not_offered_is_an_unknown_tool() -> None:
    ran: list[str] = []

    def stubborn(request: ModelRequest) -> Any:
        last = request.messages[-1].content
        if "one number from 0 to 10" in last:
            return "2"
        if any(m.role == "tool" for m in request.messages):
            return "I give up."
        return call("inventory_3", item="x")  # never offered: the task is about drawers

    agent = Agent(model=ScriptedModel(stubborn), tools=[*drawers(ran), *distractors(12)],
                  reasoning=LATS(n=1, max_iterations=1), tool_selection=ToolSelection(k=2))
    session = agent.session(TASK)
    session.run()
    events = session.replay()
    (refused,) = [d for d in branch_events(events, "tool.result")
                  if d["call_id"].startswith("branch_")]
    assert refused["status"] == "rejected" and "inventory_3" in refused["content"]
    offered = branch_events(events, "branch.request")[0]["tools"]
    assert "inventory_3" not in offered
    assert all(name in refused["content"] for name in offered)  # it lists the branch's offer
    assert not [d for d in branch_events(events, "tool.decision")
                if d["call_id"].startswith("branch_")]  # the policy was not asked


def llmp_agent(world: Any, script: Sequence[Any], policy: Any, k: int) -> Agent:
    from tether.reasoning.llmp import LLMP
    from tether.reasoning.pddl import blocksworld

    return Agent(model=ScriptedModel(list(script)), reasoning=LLMP(blocksworld()),
                 tools=[*world.tools(), *distractors(12)], policy=policy,
                 tool_selection=ToolSelection(k=k))


def test_an_llmp_plan_runs_its_validated_steps_whatever_the_offer() -> None:
    from test_llmp import GOAL, PROBLEM, blocks

    world = blocks()
    session = llmp_agent(world, [PROBLEM, "Done."], Rule(allow), k=1).session(
        "Blocks: a is on b; b and c are on the table. Put c on a and b on c.")
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert world.satisfies(GOAL)
    events = session.replay()
    statuses = [d["status"] for d in branch_events(events, "tool.result")]
    assert statuses and set(statuses) == {"ok"}
    # each step was decided at the gate
    assert len(branch_events(events, "tool.decision")) == len(statuses)


def test_a_planned_step_the_policy_denies_never_runs_under_selection() -> None:
    from test_llmp import PROBLEM, blocks

    def no_stacking(action: Action) -> Decision:
        if action.tool == "stack":
            return Decision(Effect.DENY, "no stacking today", "no-stack")
        return Decision(Effect.ALLOW)

    world = blocks()
    session = llmp_agent(world, [PROBLEM] * 4 + ["Could not."] * 3, Rule(no_stacking),
                         k=1).session("Put c on a and b on c.")
    session.run()
    events = session.replay()
    stacked = [d for d in branch_events(events, "tool.result") if d["tool"] == "stack"]
    assert stacked and all(d["status"] == "denied" for d in stacked)
    assert "(on c a)" not in world.facts()


class ForcesABranch:
    """A strategy of one branch call that forces a tool on it."""

    def __init__(self, forced: str) -> None:
        self.forced = forced

    async def run(self, handle: Handle) -> str:
        said = await handle.ask_branch([Message.user("go")], key="only",
                                       tool_choice=self.forced)
        return said.text or "called"


def test_a_tool_forced_on_a_branch_is_offered_unless_the_policy_denies_it_outright() -> None:
    def no_inventory_5(action: Action) -> Decision:
        if action.tool == "inventory_5":
            return Decision(Effect.DENY, "not that one", "inv")
        return Decision(Effect.ALLOW)

    for forced, offered in (("inventory_3", True), ("inventory_5", False)):
        ran: list[str] = []
        shown: list[ModelRequest] = []
        agent = Agent(model=ScriptedModel(lambda r, shown=shown: shown.append(r) or "ok"),
                      tools=[*drawers(ran), *distractors(12)],
                      reasoning=ForcesABranch(forced), policy=Rule(no_inventory_5),
                      tool_selection=ToolSelection(k=2))
        session = agent.session(TASK)
        assert session.run().stop_reason is StopReason.FINISHED
        (request,) = shown
        assert (forced in [s.name for s in request.tools]) is offered
        assert request.tool_choice == (forced if offered else None)
        (selected,) = [e.data for e in session.replay() if e.type == "tools.selected"]
        assert selected["branch"] == "only"
        assert (forced in selected["denied"]) is not offered
        if not offered:  # the operator reads why in the timeline
            assert "step 1 (branch only): tools selected by rank" in "\n".join(
                timeline(session.replay()))


def test_a_model_call_dressed_as_a_planned_step_is_still_held_to_the_turn_s_offer() -> None:
    from tether import ReAct

    ran: list[str] = []
    forged = ModelResponse(tool_calls=(ToolCall("planned_1_1", "inventory_3", {"item": "x"}),),
                           finish_reason="tool_calls")
    agent = Agent(model=ScriptedModel([forged, "done"]), tools=[*drawers(ran), *distractors(12)],
                  reasoning=ReAct(), tool_selection=ToolSelection(k=2))
    session = agent.session(TASK)
    result = session.run()
    refused = result.trajectory.steps[0].results[0]
    assert refused.status == "rejected" and refused.content.startswith(
        "Error: unknown tool 'inventory_3'")
    assert not refused.call_id.startswith("planned_")
    assert not [e for e in session.replay() if e.type == "tool.decision"]


class Explores:
    """A strategy of a few branch calls whose model names arbitrary tools, each run."""

    def __init__(self, branches: int) -> None:
        self.branches = branches

    async def run(self, handle: Handle) -> str:
        for i in range(self.branches):
            said = await handle.ask_branch([Message.user(f"step {i}")], key=f"b{i}")
            if said.tool_calls:
                await handle.call_branch(said.tool_calls)
        return "explored"


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 4), outright=st.frozensets(st.sampled_from(CATALOG_NAMES)),
       named=st.lists(st.lists(st.sampled_from(CATALOG_NAMES), min_size=1, max_size=3),
                      min_size=1, max_size=3))
def test_every_branch_is_shown_its_offer_and_runs_only_what_it_was_offered(
        k: int, outright: frozenset[str], named: list[list[str]]) -> None:
    shown: list[tuple[str, ...]] = []

    def answer(request: ModelRequest) -> ModelResponse:
        shown.append(tuple(s.name for s in request.tools))
        names = named[len(shown) - 1]
        return ModelResponse(tool_calls=tuple(ToolCall("", n, ARGUMENTS.get(n, {"item": "x"}))
                                              for n in names),
                             finish_reason="tool_calls")

    def deny(action: Action) -> Decision:
        return Decision(Effect.DENY if action.tool in outright else Effect.ALLOW, "", "p")

    ran: list[str] = []
    tools = [*drawers(ran), *distractors(4)]
    agent = Agent(model=ScriptedModel(answer), tools=tools, reasoning=Explores(len(named)),
                  policy=Rule(deny), tool_selection=ToolSelection(k=k), check_policy_names=False)
    session = agent.session("open the drawer and manage the inventory item")
    assert session.run().stop_reason is StopReason.FINISHED
    events = session.replay()
    requests = [e.data for e in events if e.type == "branch.request"]
    assert [tuple(r["tools"]) for r in requests] == shown  # shown exactly what it journals
    offers = {r["key"]: set(r["tools"]) for r in requests}
    assert all(len(o) <= k and not o & outright for o in offers.values())
    decided = {e.data["call_id"] for e in events if e.type == "tool.decision"}
    for e in events:
        if e.type == "tool.result":
            key = e.data["call_id"].removeprefix("branch_").rpartition("_")[0]
            inside = e.data["tool"] in offers[key]
            assert (e.data["call_id"] in decided) is inside  # outside: refused, never decided
            assert inside or e.data["status"] == "rejected"
