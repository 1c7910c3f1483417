"""The time budget and a model call (issue 30): a call is not started when less time is left
than the model takes to answer at the least (its ``min_answer_seconds``, a stated floor, not a
margin); a call the budget cancels is charged what was reserved for it, which is the cap it was
sent (the provider reports nothing for a request it abandoned); and its HTTP request is closed,
so the server can stop generating."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from fake_llm_server import OPENAI_PATH, FakeLLMServer, Reply, openai_completion
from tether import Agent, Budget, Price, ReAct
from tether.models import OpenAIModel
from tether.runtime.accounting.accountant import Accountant, Tally
from tether.runtime.accounting.stop import Stop, StopReason
from tether.store.memory import MemoryStore

ZERO = Price(Decimal(0), Decimal(0))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def accountant(clock: Clock, seconds: float = 4.0) -> Accountant:
    a = Accountant(Budget(max_seconds=seconds), None, Tally(), clock)
    a.start_clock()
    return a


@pytest.mark.parametrize("final", [False, True])
def test_a_call_with_less_time_left_than_the_model_needs_is_not_started(final: bool) -> None:
    clock = Clock()
    a = accountant(clock)
    clock.now += (4.0 if final else 3.6) - 0.38  # 0.38 s left, as in the issue
    with pytest.raises(Stop) as stopped:
        a.reserve_model_call(10, final, min_seconds=0.5)
    assert stopped.value.reason is StopReason.TIME_BUDGET
    assert "not started" in stopped.value.detail


def test_exactly_the_floor_left_is_enough() -> None:
    clock = Clock()
    a = accountant(clock)
    clock.now += 4.0 - 0.5
    assert a.reserve_model_call(10, True, min_seconds=0.5).deadline == pytest.approx(104.0)


def test_with_no_floor_any_time_left_is_enough() -> None:
    clock = Clock()
    a = accountant(clock)
    clock.now += 3.99
    a.reserve_model_call(10, True)
    clock.now += 0.01
    with pytest.raises(Stop):
        a.reserve_model_call(10, True)


def model(server: FakeLLMServer, **kwargs: Any) -> OpenAIModel:
    return OpenAIModel("smol", base_url=server.url + "/v1", api_key="unused", env_file=None,
                       compat="llama.cpp", max_output_tokens=96, price=ZERO, **kwargs)


def kinds(store: MemoryStore, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in store.read(session_id) if e.type == kind]


def test_a_model_slower_than_the_whole_budget_is_never_called() -> None:
    with FakeLLMServer() as server:
        server.queue(OPENAI_PATH, Reply(body=openai_completion("hi", usage=(40, 2, 0))))
        store = MemoryStore()
        result = Agent(model=model(server, min_answer_seconds=3600.0), reasoning=ReAct(),
                       store=store).run("Hello.", budget=Budget(max_seconds=60))
        assert server.bodies(OPENAI_PATH) == []  # nothing was sent
    assert result.stop_reason == "time_budget"
    assert kinds(store, result.session_id, "model.request") == []
    assert result.usage.total_tokens == 0


def test_min_answer_seconds_is_checked() -> None:
    with pytest.raises(ValueError, match="min_answer_seconds"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="unused", env_file=None,
                    min_answer_seconds=-1)


@pytest.mark.parametrize("streamed", [False, True])
def test_a_cancelled_request_is_closed_and_charged_the_cap_it_was_sent(streamed: bool) -> None:
    """The server answers nothing until the client hangs up; the time budget cancels the call.
    The fake server sees the connection close (waited on, no sleep), and the call is charged
    its reservation: the input estimate plus the 96 tokens it was sent, not the budget. The
    wrap-up would have the 0.3 s held back, less than the model's 1 s floor: not started."""
    with FakeLLMServer() as server:
        server.queue(OPENAI_PATH, Reply(until_closed=True), Reply(until_closed=True))
        store = MemoryStore()
        agent = Agent(model=model(server, min_answer_seconds=1.0), reasoning=ReAct(),
                      store=store)
        budget = Budget(max_tokens=6000, max_seconds=3.0)
        if streamed:
            session = agent.session("Tell a long story.", budget=budget)

            async def drain() -> Any:
                async for _ in session.astream():
                    pass
                return session.result

            result = asyncio.run(drain())
        else:
            result = agent.run("Tell a long story.", budget=budget)
        assert server.closed.wait(30), "the HTTP request was left open"
        assert len(server.bodies(OPENAI_PATH)) == 1  # no wrap-up request
    assert result.stop_reason == "time_budget"
    (request,) = kinds(store, result.session_id, "model.request")
    (charged,) = kinds(store, result.session_id, "model.unmetered")
    assert charged["output_tokens"] == 96
    assert charged["input_tokens"] == request["reserved_input"]
    assert result.usage.total_tokens == request["reserved_input"] + 96 < 6000
    (skipped,) = kinds(store, result.session_id, "session.wrap_up_skipped")
    assert skipped["reason"] == "time_budget" and "not started" in skipped["detail"]
