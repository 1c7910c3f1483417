"""LATS (tether.reasoning.lats): a real tree search where greedy ReAct fails, side effects only on
the chosen path, the budget shared by every branch, the tree in `tether audit show`, and rerun
and resume."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_planned_calls import Rule
from tether import Agent, Budget, ReAct, ScriptedModel, tool
from tether.journal.views.timeline import timeline
from tether.policy.base import Action, Decision, Effect
from tether.reasoning.graders import all_of, called, contains
from tether.reasoning.lats import LATS, GraderValue, SelfEvaluation
from tether.runtime.accounting.stop import StopReason
from tether.runtime.lifecycle.session import Session
from tether.runtime.rerun import rerun
from tether.types import ModelRequest, ModelResponse, ToolCall

TASK = "Find the drawer with the key and send the key to bob."
RIGHT = all_of(contains("drawer 2"), called("send_key", to="bob"))


def call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall("", name, arguments),), finish_reason="tool_calls")


def drawers(ran: list[str]) -> list[Any]:
    @tool
    def open_drawer(n: int) -> str:
        """Look into drawer n (changes nothing)."""
        ran.append(f"open {n}")
        return f"drawer {n}: " + ("a key" if n == 2 else "empty")

    @tool(side_effect=True)
    def send_key(to: str) -> str:
        """Send the key to someone (a side effect)."""
        ran.append(f"send {to}")
        return f"the key is on its way to {to}"

    return [open_drawer, send_key]


def model(request: ModelRequest) -> Any:
    """A stand-in whose first idea at each step is wrong: a greedy agent opens drawer 1 and
    answers from it; asked for another candidate, it opens drawer 2, then sends the key."""
    last = request.messages[-1].content
    other = "Other candidates" in last
    seen = [m.content for m in request.messages if m.role == "tool"]
    if "final answer" in last or "did not succeed" in last:
        return "Sent bob the key from drawer 2." if "final answer" in last else "Not sent."
    if "judged wrong" in last:
        return "Drawer 1 was empty: look in another drawer before answering."
    if "one number from 0 to 10" in last:
        return "9 looks right" if any("on its way" in s or "not run" in s
                                      for s in seen) else "3"
    if not seen:
        return call("open_drawer", n=2) if other else call("open_drawer", n=1)
    if seen[-1] == "drawer 1: empty":
        return call("send_key", to="alice") if other else "The key is in drawer 1."
    if seen[-1] == "drawer 2: a key":
        return "The key is in drawer 2." if other else call("send_key", to="bob")
    return "Sent bob the key from drawer 2."


def lats_agent(ran: list[str], **kwargs: Any) -> Agent:
    options = {"value": GraderValue(RIGHT), "n": 2, **kwargs}
    return Agent(model=ScriptedModel(model), tools=drawers(ran), reasoning=LATS(**options))


def notes(events: Any, kind: str) -> list[Any]:
    return [e.data["data"] for e in events if e.type == "strategy.note" and e.data["kind"] == kind]


def test_greedy_react_fails_where_the_search_succeeds() -> None:
    ran: list[str] = []
    greedy = Agent(model=ScriptedModel(model), tools=drawers(ran), reasoning=ReAct())
    assert greedy.run(TASK).answer == "The key is in drawer 1."
    ran.clear()
    session = lats_agent(ran).session(TASK)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert result.answer == "Sent bob the key from drawer 2."
    assert ran.count("send bob") == 1 and "send alice" not in ran
    events = session.replay()
    (tree,) = notes(events, "lats.tree")
    assert tree["solved"] is True
    chosen = {n["id"]: n for n in tree["nodes"]}[tree["chosen"]]
    assert chosen["terminal"] and chosen["value"] == 1.0
    assert notes(events, "lats.reflection")  # the failed answer was reflected on
    # the reflection is in the context of later expansions
    later = [e.data for e in events if e.type == "branch.request"][-1]
    assert any("Drawer 1 was empty" in m["content"] for m in later["messages"])


def test_a_side_effect_never_runs_on_an_abandoned_branch() -> None:
    ran: list[str] = []
    consulted: list[str] = []

    def deny_sending(action: Action) -> Decision:
        consulted.append(action.tool)
        if action.tool == "send_key":
            return Decision(Effect.DENY, "no key leaves the house", "keys")
        return Decision(Effect.ALLOW)

    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=2), policy=Rule(deny_sending))
    session = agent.session(TASK)
    result = session.run()
    events = session.replay()
    simulated = [e.data["call"]["arguments"]["to"] for e in events
                 if e.type == "branch.simulated"]
    assert sorted(simulated) == ["alice", "bob"]  # both proposed on branches...
    assert not any(r.startswith("send") for r in ran)  # ...neither ran: alice's was abandoned,
    # bob's was the chosen path's, refused by the policy — asked once, on the real call only
    assert consulted.count("send_key") == 1
    (decision,) = [e.data for e in events if e.type == "tool.decision"
                   and e.data["tool"] == "send_key"]
    assert decision["call_id"].startswith("planned_")
    assert result.answer == "Not sent."


@settings(max_examples=20, deadline=None)
@given(steps=st.integers(min_value=1, max_value=14), n=st.integers(1, 3),
       tokens=st.none() | st.integers(min_value=200, max_value=4_000),
       rollout=st.integers(0, 3))
def test_the_step_and_token_budgets_hold_across_every_branch(steps: int, n: int,
                                                             tokens: int | None,
                                                             rollout: int) -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=n, rollout_depth=rollout))
    result = agent.run(TASK, budget=Budget(max_steps=steps, max_tokens=tokens))
    assert result.spend.steps <= steps
    assert tokens is None or result.spend.tokens <= tokens
    if steps >= 3 and tokens is None:  # room to search at all: the search ends, the run does not
        assert result.stop_reason is StopReason.FINISHED, result.notice
    assert "send alice" not in ran and ran.count("send bob") <= 1


@settings(max_examples=15, deadline=None)
@given(tool_calls=st.integers(min_value=0, max_value=5))
def test_the_tool_call_budget_holds_across_every_branch(tool_calls: int) -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=2))
    result = agent.run(TASK, budget=Budget(max_tool_calls=tool_calls))
    assert result.spend.tool_calls <= tool_calls and len(ran) <= tool_calls
    assert result.stop_reason is StopReason.FINISHED  # the search ended; the run did not break
    assert "send alice" not in ran


def test_out_of_budget_the_search_stops_cleanly_with_the_best_trajectory() -> None:
    ran: list[str] = []
    # room for the first expansion and one more candidate: no answer solved yet
    result_session = lats_agent(ran).session(TASK, budget=Budget(max_steps=5))
    result = result_session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    events = result_session.replay()
    (tree,) = notes(events, "lats.tree")
    assert tree["solved"] is False and tree["stopped"].startswith("the budget")
    # the best answer found goes to the model marked as not verified, not to the user as it is
    last = [e.data for e in events if e.type == "model.request"][-1]["new"][-1]["content"]
    assert "not verified: The key is in drawer 1." in last
    assert not any(r.startswith("send") for r in ran)


def counter(request: ModelRequest) -> Any:
    """A stand-in that needs three ticks before it can answer."""
    ticks = sum(m.role == "tool" for m in request.messages)
    if "final answer" in request.messages[-1].content or ticks >= 3:
        return "Three ticks."
    return call("tick")


@pytest.mark.parametrize("rollout_depth", [0, 3])
def test_a_rollout_reaches_the_answer_that_valuing_in_place_does_not(rollout_depth: int) -> None:
    ticked: list[int] = []

    @tool
    def tick() -> str:
        """Tick once (changes nothing)."""
        ticked.append(1)
        return f"tick {len(ticked)}"

    agent = Agent(model=ScriptedModel(counter), tools=[tick], reasoning=LATS(
        value=GraderValue(contains("Three")), n=1, max_iterations=1,
        rollout_depth=rollout_depth))
    session = agent.session("Tick three times, then say so.")
    result = session.run()
    (tree,) = notes(session.replay(), "lats.tree")
    depth = {n["id"]: n for n in tree["nodes"]}
    if rollout_depth:  # one iteration: expand the root, then simulate down to the answer
        assert tree["solved"] is True and result.answer == "Three ticks."
        assert len(tree["nodes"]) == 5 and depth[tree["chosen"]]["terminal"]
    else:  # one iteration values the first tick where it stands: no answer yet
        assert tree["solved"] is False and len(tree["nodes"]) == 2


def test_rollout_depth_must_be_a_whole_number() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="rollout_depth"):
            LATS(rollout_depth=bad)  # type: ignore[arg-type]


def test_self_evaluation_values_nodes_with_capped_tool_less_branch_calls() -> None:
    ran: list[str] = []
    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=LATS(value=SelfEvaluation(), n=2, solved_at=0.9))
    session = agent.session(TASK)
    result = session.run()
    assert result.answer == "Sent bob the key from drawer 2.", result.notice
    values = [e.data for e in session.replay() if e.type == "branch.request"
              and e.data["key"].endswith(".v")]
    assert values and all(v["tools"] == () or v["tools"] == [] for v in values)
    assert all(v["max_output_tokens"] <= 48 for v in values)


def test_the_tree_shows_in_audit_show() -> None:
    ran: list[str] = []
    session = lats_agent(ran).session(TASK)
    session.run()
    lines = timeline(session.replay())
    start = next(i for i, line in enumerate(lines) if "search tree" in line)
    assert "(9 nodes; solved; chosen n8;" in lines[start]
    drawn = [line[9:] for line in lines[start + 1:start + 10]]  # (after the seq column)
    assert drawn[0] == "* n0 start (value 0.0, visits 8)"
    assert "    n1 open_drawer(n=1) (value 0.5, visits 4)" in drawn
    assert "      n3 answer: The key is in drawer 1. (value 0.0, visits 1)" in drawn
    assert "  * n2 open_drawer(n=2) (value 0.5, visits 4)" in drawn  # the chosen path, marked
    assert "    * n5 send_key(to='bob') (value 0.5, visits 2)" in drawn
    assert drawn.index("    * n5 send_key(to='bob') (value 0.5, visits 2)") > drawn.index(
        "  * n2 open_drawer(n=2) (value 0.5, visits 4)")  # children under their parent
    # what a branch only proposed is shown as such, and the chosen side effect as it ran
    assert any("simulated, not run" in line and "alice" in line for line in lines)
    assert any("lats: chosen path n8" in line for line in lines)


def test_a_rerun_of_a_lats_session_matches_and_runs_nothing() -> None:
    ran: list[str] = []
    agent = lats_agent(ran)
    session = agent.session(TASK)
    session.run()
    ran.clear()
    report = rerun(agent, session.replay())
    assert report.matches, report.divergences
    assert ran == []


@pytest.mark.parametrize("steps", [None, 14])  # 14: the resumed re-walk starts with 2 left
def test_resume_continues_the_chosen_path_without_asking_or_running_again(
        tmp_path: Any, steps: int | None) -> None:
    ran: list[str] = []
    asked: list[int] = []

    def counting(request: ModelRequest) -> Any:
        asked.append(1)
        return model(request)

    def hold(action: Action) -> Decision:
        if action.tool == "send_key":
            return Decision(Effect.REQUIRE_APPROVAL, "a person sends keys", "keys")
        return Decision(Effect.ALLOW)

    agent = Agent(model=ScriptedModel(counting), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=2), policy=Rule(hold),
                  store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session(TASK, budget=Budget(max_steps=steps))
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    before, searched = len(asked), list(ran)
    (request,) = session.pending_approvals()
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert result.answer == "Sent bob the key from drawer 2."
    assert len(asked) == before + 1  # only the final answer: no branch call asked again
    last = [e.data for e in Session.restore(agent, session.id).replay()
            if e.type == "model.request"][-1]
    assert "The search chose a path" in last["new"][-1]["content"]  # the same path, finished
    assert ran == [*searched, "send bob"]  # no branch call ran again; the send ran once
    events = Session.restore(agent, session.id).replay()
    assert len(notes(events, "lats.tree")) == 1
    for kind in ("lats.node", "lats.reflection"):  # the re-walk wrote no note twice
        ids = [n["id"] for n in notes(events, kind)]
        assert ids and len(ids) == len(set(ids))


def test_every_branch_call_is_a_chat_span() -> None:
    from tether.journal.views.spans import derive_spans

    ran: list[str] = []
    session = lats_agent(ran).session(TASK)
    session.run()
    events = session.replay()
    calls = sum(e.type in ("branch.response", "model.response") for e in events)
    chats = [s for s in derive_spans(events) if s.name.startswith("chat")]
    assert len(chats) == calls == session.spend().steps


def test_lats_as_a_reflexion_actor_searches_afresh_each_attempt() -> None:
    from tether.reasoning.reflexion import GraderCheck, Reflexion

    ran: list[str] = []
    never = contains("drawer 9")  # no attempt passes: both search, each on keys of its own
    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=Reflexion(actor=LATS(value=GraderValue(RIGHT), n=2, max_iterations=2),
                                      evaluator=GraderCheck(never), max_attempts=2,
                                      attempt_steps=None))
    session = agent.session(TASK)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    keys = [e.data["key"] for e in session.replay() if e.type == "branch.request"]
    assert keys and {k.split(".")[0] for k in keys} == {"a1", "a2"}
    assert len(keys) == len(set(keys))


def test_resume_after_a_crash_mid_search_asks_and_runs_only_what_is_missing(
        tmp_path: Any) -> None:
    from test_planned_calls import _cut

    ran: list[str] = []
    asked: list[str] = []

    def counting(request: ModelRequest) -> Any:
        asked.append(request.messages[-1].content)
        return model(request)

    agent = Agent(model=ScriptedModel(counting), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=2),
                  store=f"sqlite:///{tmp_path / 'whole.db'}")
    session = agent.session(TASK)
    whole = session.run()
    events = session.replay()
    branch_results = [e.seq for e in events if e.type == "tool.result"
                      and e.data["call_id"].startswith("branch_")]
    upto = branch_results[1]  # died after two drawers were opened on branches
    before = sum(e.type == "branch.response" and e.seq <= upto for e in events)
    total, all_ran = len(asked), list(ran)
    asked.clear()
    ran.clear()
    crashed = _cut(tmp_path, agent, events, upto, "a.db")
    result = crashed.resume()
    assert result.answer == whole.answer and result.stop_reason is StopReason.FINISHED
    assert len(asked) == total - before  # the journaled answers were not asked again
    assert ran == all_ran[2:]  # the two drawers opened before the crash: not again
    notes_after = [e.data for e in crashed.replay() if e.type == "strategy.note"]
    written = [(n["kind"], n["data"].get("id")) for n in notes_after]
    assert len(written) == len(set(written))  # no note written twice
    # died waiting for a branch answer: it is charged as lost and asked again, once
    request = next(e.seq for e in events if e.type == "branch.request" and e.seq > upto)
    asked.clear()
    resumed = _cut(tmp_path, agent, events, request, "b.db")
    result = resumed.resume()
    assert result.answer == whole.answer
    assert len(asked) == total - before
    assert [e.type for e in resumed.replay()].count("model.lost") == 1


def test_a_branch_call_that_needs_approval_pauses_and_resumes_the_search(tmp_path: Any) -> None:
    ran: list[str] = []

    def hold_drawer_2(action: Action) -> Decision:
        if action.tool == "open_drawer" and action.arguments.get("n") == 2:
            return Decision(Effect.REQUIRE_APPROVAL, "drawer 2 is the boss's", "boss")
        return Decision(Effect.ALLOW)

    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=2), policy=Rule(hold_drawer_2),
                  store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session(TASK)
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    assert ran == ["open 1"]
    (request,) = session.pending_approvals()
    assert request.call_id.startswith("branch_")
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert result.answer == "Sent bob the key from drawer 2."
    assert ran == ["open 1", "open 2", "send bob"]  # each once


def test_tether_audit_show_draws_the_tree(tmp_path: Any, capsys: Any) -> None:
    from tether.cli import main

    ran: list[str] = []
    url = f"sqlite:///{tmp_path / 'j.db'}"
    agent = Agent(model=ScriptedModel(model), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=2), store=url)
    session = agent.session(TASK)
    session.run()
    capsys.readouterr()
    assert main(["audit", "show", session.id, "--store", url]) == 0
    out = capsys.readouterr().out
    assert "search tree (9 nodes; solved; chosen n8;" in out
    assert "    * n5 send_key(to='bob') (value 0.5, visits 2)" in out
    assert "simulated, not run" in out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 3), steps=st.none() | st.integers(3, 30))
def test_only_the_chosen_path_s_side_effects_ever_run(seed: int, n: int,
                                                      steps: int | None) -> None:
    """Whatever the model proposes, a side effect runs only as a planned call of the one path
    the search chose, after the search — never on a branch."""
    import hashlib
    import random

    ran: list[str] = []

    def wild(request: ModelRequest) -> Any:
        seen = repr([(m.role, m.content) for m in request.messages]).encode()
        pick = random.Random(f"{seed}:{hashlib.blake2b(seen).hexdigest()}")
        options = [call("open_drawer", n=pick.randint(1, 3)),
                   call("send_key", to=pick.choice(["bob", "eve"])),
                   f"answer {pick.randint(1, 3)} drawer 2", "7"]
        return pick.choice(options)

    agent = Agent(model=ScriptedModel(wild), tools=drawers(ran),
                  reasoning=LATS(value=GraderValue(RIGHT), n=n, max_iterations=6))
    session = agent.session(TASK, budget=Budget(max_steps=steps))
    session.run()
    events = session.replay()
    sends = [e.data for e in events if e.type == "tool.decision" and e.data["tool"] == "send_key"]
    assert all(d["call_id"].startswith("planned_") for d in sends)
    trees = notes(events, "lats.tree")
    planned = [e for e in events if e.type == "strategy.calls"]
    if planned:
        (tree,) = trees
        assert tree["solved"] and all(f"path {tree['chosen']}," in e.data["reason"]
                                      for e in planned)
        assert all(e.seq > next(t.seq for t in events if t.type == "strategy.note"
                                and t.data["kind"] == "lats.tree") for e in planned)
    sent_ok = [e for e in events if e.type == "tool.result" and e.data["status"] == "ok"
               and e.data["tool"] == "send_key"]
    assert all(e.data["call_id"].startswith("planned_") for e in sent_ok)
    assert sum(r.startswith("send") for r in ran) == len(sent_ok)
