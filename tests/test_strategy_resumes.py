"""Strategies resumed after a crash recognise the phase they were in: a second process goes on
from the journal, never taking one phase's words for another's, never repeating a phase that
ended (Reflexion's attempt, critique and reflection; the Router's route; Adaptive-RAG's route
and retrievals; CRAG's grades)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reflexion_crash_app import build
from tether.runtime.accounting.stop import StopReason
from tether.store.sqlite import SQLiteStore

APP = str(Path(__file__).with_name("reflexion_crash_app.py"))


def notes(events: Sequence[Any], kind: str) -> list[dict[str, Any]]:
    return [e.data["data"] for e in events if e.type == "strategy.note" and e.data["kind"] == kind]


@pytest.mark.parametrize("die_at", ["attempt:1", "critique:1", "reflect:1", "attempt:2",
                                    "critique:2", "reflect:2", "attempt:3", "critique:3"])
def test_reflexion_killed_in_any_phase_goes_on_from_that_phase(tmp_path: Path,
                                                               die_at: str) -> None:
    db, marker = str(tmp_path / "j.db"), str(tmp_path / "died")
    died = subprocess.run([sys.executable, APP, "run", db, marker, die_at],
                          capture_output=True, text=True, timeout=60)
    assert died.returncode == 9, died.stderr
    session_id = died.stdout.split()[0]
    result = build(db, marker).resume(session_id)
    assert result.stop_reason is StopReason.FINISHED
    assert result.answer == "answer 3"  # never the critique's or the reflection's words
    events = SQLiteStore(db).read(session_id)
    assert [n["attempt"] for n in notes(events, "attempt")] == [1, 2, 3]
    assert [n["why"] for n in notes(events, "evaluation")] == [
        "FAIL answer 1 is wrong", "FAIL answer 2 is wrong", "the model's critique: PASS"]
    assert [n["text"] for n in notes(events, "reflection")] == ["reflection after 1",
                                                                "reflection after 2"]
    answers = [e.data["response"]["text"] for e in events if e.type == "model.response"]
    assert answers.count("answer 3") == 1 and "PASS the answer is right" in answers


@pytest.mark.parametrize("die_at", ["tool:1", "tool:3", "attempt:3", "reflect:2"])
def test_a_reflexion_attempt_killed_mid_call_is_graded_on_every_call_it_made(
        tmp_path: Path, die_at: str) -> None:
    db, marker = str(tmp_path / "j.db"), str(tmp_path / "died")
    died = subprocess.run([sys.executable, APP, "run", db, marker, die_at, "graded"],
                          capture_output=True, text=True, timeout=60)
    assert died.returncode == 9, died.stderr
    session_id = died.stdout.split()[0]
    result = build(db, marker, graded=True).resume(session_id)
    assert result.answer == "answer 3"
    events = SQLiteStore(db).read(session_id)
    assert [n["passed"] for n in notes(events, "evaluation")] == [False, False, True]
    assert [n["attempt"] for n in notes(events, "attempt")] == [1, 2, 3]


def test_a_reflexion_attempt_resumed_after_a_pause_is_graded_on_every_call_it_made(
        tmp_path: Path) -> None:
    from test_planned_calls import Rule
    from test_reflexion_router import TASK, call, weather_tools
    from tether import Agent, ScriptedModel
    from tether.policy.base import Action, Decision, Effect
    from tether.reasoning.graders import called
    from tether.reasoning.reflexion import GraderCheck, Reflexion
    from tether.runtime.lifecycle.session import Session

    def ask_first(action: Action) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "check", "ops")

    ran: list[str] = []
    agent = Agent(model=ScriptedModel([call("lookup", "c1", city="Paris"), "It is 25 C."],
                                      when_exhausted="no idea"),
                  tools=weather_tools(ran), policy=Rule(ask_first),
                  reasoning=Reflexion(evaluator=GraderCheck(called("lookup", city="Paris")),
                                      max_attempts=2),
                  store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session(TASK)
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = agent.approval_store.pending(session.id)
    agent.approval_store.approve(request.id, approver="ops")
    result = Session.restore(agent, session.id).resume()
    assert result.answer == "It is 25 C." and ran == ["lookup"]
    events = Session.restore(agent, session.id).replay()
    assert [n["passed"] for n in notes(events, "evaluation")] == [True]  # the call before
    assert len(notes(events, "attempt")) == 1                            # the pause counts


def test_a_router_resumed_by_a_recipe_without_its_route_says_what_to_do(tmp_path: Path) -> None:
    from test_planned_calls import Rule
    from test_reflexion_router import TASK, Named, call, weather_tools
    from tether import Agent, ReAct, ScriptedModel
    from tether.policy.base import Action, Decision, Effect
    from tether.reasoning.router import Router
    from tether.runtime.lifecycle.session import RecipeChanged

    def ask_first(action: Action) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "check", "ops")

    def agent(routes: dict[str, Any]) -> Agent:
        return Agent(model=ScriptedModel(["lookup", call("lookup", "c1", city="Paris"), "25 C"]),
                     tools=weather_tools([]), reasoning=Router(routes, ask_model=True),
                     policy=Rule(ask_first), store=f"sqlite:///{tmp_path / 'r.db'}")

    first = agent({"lookup": ReAct(), "other": Named("other")})
    session = first.session(TASK)
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = first.approval_store.pending(session.id)
    first.approval_store.approve(request.id, approver="ops")
    other = agent({"react": ReAct(), "other": Named("other")})
    with pytest.raises(RecipeChanged, match=r"route 'lookup'.*\(react, other\).*resume it with"):
        other.resume(session.id)


RAG_APP = str(Path(__file__).with_name("rag_crash_app.py"))


def _crashed(tmp_path: Path, strategy: str, die_at: str) -> tuple[str, str, str]:
    from rag_crash_app import build as build_rag

    db, marker = str(tmp_path / "j.db"), str(tmp_path / "died")
    if die_at:
        died = subprocess.run([sys.executable, RAG_APP, "run", db, marker, strategy, die_at],
                              capture_output=True, text=True, timeout=60)
        assert died.returncode == 9, died.stderr
        session_id = died.stdout.split()[0]
        result = build_rag(db, marker, strategy).resume(session_id)
    else:
        result = build_rag(db, marker, strategy).run("Which service owns billing?")
        session_id = result.session_id
    assert result.stop_reason is StopReason.FINISHED
    return db, session_id, result.answer


def _retrievals(events: Sequence[Any]) -> list[str]:
    """Each retrieval that ran, once per call (a call run again after a crash counts once)."""
    return list(dict.fromkeys(e.data["call_id"] + " " + e.data["tool"] for e in events
                              if e.type == "tool.result" and e.data["status"] == "ok"))


@pytest.mark.parametrize("die_at", ["", "classify", "retrieve:1", "tool:1", "retrieve:2",
                                    "tool:2", "retrieve:3", "tool:3", "answer"])
def test_adaptive_rag_resumed_after_a_crash_routes_and_retrieves_once(tmp_path: Path,
                                                                      die_at: str) -> None:
    db, session_id, answer = _crashed(tmp_path, "adaptive", die_at)
    events = SQLiteStore(db).read(session_id)
    assert [n["route"] for n in notes(events, "route")] == ["multi"]
    assert len(_retrievals(events)) == 3  # max_hops
    assert notes(events, "hops") == [{"hops": 3, "ended_by": "the route's retrievals are done"}]
    assert answer == "answered from 3 retrievals"


@pytest.mark.parametrize("die_at", ["", "answer"])
def test_adaptive_rag_resumed_after_hops_that_ended_early_does_not_hop_again(
        tmp_path: Path, die_at: str) -> None:
    db, session_id, answer = _crashed(tmp_path, "adaptive-aside", die_at)
    events = SQLiteStore(db).read(session_id)
    assert len(notes(events, "route")) == 1 and len(_retrievals(events)) == 1
    assert notes(events, "hops") == [{"hops": 1, "ended_by": "the route's retrievals are done"}]
    assert sum("call web_search again" in m["content"] or "If the passages" in m["content"]
               for e in events if e.type == "model.request" for m in e.data["new"]) == 1
    assert answer == "answered from 1 retrievals"


@pytest.mark.parametrize("die_at", ["", "retrieve:1", "tool:1", "grade:1", "retrieve:2",
                                    "tool:2", "grade:2", "retrieve:3", "tool:3", "answer"])
def test_crag_resumed_after_a_crash_grades_and_retrieves_once(tmp_path: Path,
                                                             die_at: str) -> None:
    db, session_id, answer = _crashed(tmp_path, "crag", die_at)
    events = SQLiteStore(db).read(session_id)
    assert [(n["attempt"], n["verdict"]) for n in notes(events, "grade")] == [
        (1, "incorrect"), (2, "ambiguous")]
    assert [r.split()[1] for r in _retrievals(events)] == ["search_docs", "search_docs",
                                                           "web_search"]
    assert [n["tool"] for n in notes(events, "fallback")] == ["web_search"]
    assert answer == "answered from 3 retrievals"


@pytest.mark.parametrize("strategy", ["adaptive", "crag"])
def test_a_retrieval_that_waited_for_approval_is_not_run_again_after_it(strategy: str) -> None:
    from test_planned_calls import Rule
    from test_retrieval_strategies import agent, notes, searcher, turns
    from tether.knowledge import CRAG, AdaptiveRAG
    from tether.policy.base import Action, Decision, Effect
    from tether.runtime.lifecycle.session import Session
    from tether.store.memory import MemoryStore

    def ask_first(action: Action) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "check", "ops")

    store = MemoryStore()
    reasoning = AdaptiveRAG("search_docs") if strategy == "adaptive" else CRAG("search_docs")
    recipe = agent(reasoning, searcher(["refund window delivery", "never asked"]), store,
                   policy=Rule(ask_first))
    session = recipe.session("How long is the refund window after delivery?")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = recipe.approval_store.pending(session.id)
    recipe.approval_store.approve(request.id, approver="ops")
    result = Session.restore(recipe, session.id).resume()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert [d["tool"] for d in turns(store, session.id, "tool.result")] == ["search_docs"]
    kinds = [n["kind"] for n in notes(store, session.id)]
    assert kinds == (["route", "hops"] if strategy == "adaptive" else ["grade"])
