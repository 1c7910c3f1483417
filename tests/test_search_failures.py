"""Searches and plans that say when they failed: an unsolved LATS search does not hand over an
answer its own value function judged wrong as if it were right; LLM+P plans around a step the
policy refused when another plan exists."""

from __future__ import annotations

from typing import Any

from test_lats import TASK, drawers, model, notes
from tether import Agent, Budget, ModelRequest, ScriptedModel
from tether.evals.graders import contains
from tether.reasoning.lats import LATS, GraderValue
from tether.runtime.stop import StopReason


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
