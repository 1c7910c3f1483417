"""Issue 30 against the real llama.cpp server (``local_server``): the tool choice the README shows
is accepted, and an answer past the cap the server was sent is an overrun even when the budget
had room for more."""

from __future__ import annotations

from typing import Any

from tether import Agent, Budget, ReAct
from tether.journal.chain import verify_chain
from tether.store.memory import MemoryStore
from tether.tools import Calculator

LONG_TASK = "Write a very long story about a lighthouse keeper, with many chapters."


def events(store: MemoryStore, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in store.read(session_id) if e.type == kind]


def test_first_tool_choice_required_is_accepted_by_the_real_server(local_server: Any) -> None:
    """``tool_choice: "required"`` got HTTP 500 from this server; with one tool the profile
    names it, which the server accepts and which forces the call all the same."""
    store = MemoryStore()
    model = local_server.model(max_output_tokens=96, params={"tool_choice": "none"})
    result = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], store=store,
                   first_tool_choice="required").run(
        "What is 17 * 23? Use the calculator.", budget=Budget(max_steps=3, max_seconds=120))
    assert events(store, result.session_id, "model.error") == [], result.stop_reason
    first = events(store, result.session_id, "model.response")[0]["response"]
    assert [c["name"] for c in first["tool_calls"]] == ["calculator"]
    assert events(store, result.session_id, "tool.result")
    assert verify_chain(store.read(result.session_id)) is None


def test_an_answer_past_the_cap_sent_is_an_overrun_though_the_budget_had_room(
        local_server: Any) -> None:
    """The model's own ceiling (96) is the cap sent; sent in the field llama.cpp ignores, the
    answer runs past it. The budget had room for far more, yet that is an overrun: journaled
    with the 96 reserved, and the run stops with the token budget's reason."""
    store = MemoryStore()
    model = local_server.model(compat="openai", max_output_tokens=96)
    result = Agent(model=model, reasoning=ReAct(), store=store).run(
        LONG_TASK, budget=Budget(max_tokens=6000))
    (response,) = events(store, result.session_id, "model.response")
    reported = response["response"]["usage"]["output_tokens"]
    assert reported > 96  # the server ignored the cap (else this test shows nothing)
    (overrun,) = events(store, result.session_id, "model.overrun")
    assert overrun["reserved"]["output_tokens"] == 96
    assert overrun["reported"]["output_tokens"] == reported
    assert result.stop_reason == "token_budget"
    assert verify_chain(store.read(result.session_id)) is None


def test_the_local_model_carries_the_measured_floor_and_a_call_below_it_is_not_started(
        local_server: Any) -> None:
    """``server.model()`` takes the fastest answer measured at start as its floor; a run whose
    whole time budget is below it sends nothing (the server is never asked)."""
    floor = local_server.min_answer_seconds
    assert floor > 0 and local_server.model().min_answer_seconds == floor
    store = MemoryStore()
    result = Agent(model=local_server.model(), reasoning=ReAct(), store=store).run(
        LONG_TASK, budget=Budget(max_seconds=floor / 2))
    assert result.stop_reason == "time_budget"
    assert events(store, result.session_id, "model.request") == []
    assert result.usage.total_tokens == 0
