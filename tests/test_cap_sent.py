"""An overrun is measured against the output cap the server was SENT (issue 30): the model's own
ceiling (``max_output_tokens=``) can be tighter than what the budget had left, and a server that
answers past it is not keeping to the request, whatever room the budget had."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from fake_llm_server import OPENAI_PATH, FakeLLMServer, Reply, openai_completion
from tether import Agent, Budget, Price, ReAct
from tether.models import OpenAIModel
from tether.store.memory import MemoryStore

ZERO = Price(Decimal(0), Decimal(0))


def run(server: FakeLLMServer, output: int, budget: Budget | None) -> tuple[Any, MemoryStore]:
    server.queue(OPENAI_PATH, Reply(body=openai_completion("story " * output,
                                                           usage=(40, output, 0))))
    model = OpenAIModel("smol", base_url=server.url + "/v1", api_key="unused", env_file=None,
                        compat="llama.cpp", max_output_tokens=96, price=ZERO)
    store = MemoryStore()
    result = Agent(model=model, reasoning=ReAct(), store=store).run("Tell a story.",
                                                                     budget=budget)
    return result, store


def kinds(store: MemoryStore, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in store.read(session_id) if e.type == kind]


def test_past_the_cap_sent_is_an_overrun_though_the_budget_had_room() -> None:
    with FakeLLMServer() as server:
        result, store = run(server, 816, Budget(max_tokens=20_000))
        assert server.bodies(OPENAI_PATH)[0]["max_tokens"] == 96
    (overrun,) = kinds(store, result.session_id, "model.overrun")
    assert overrun["reserved"]["output_tokens"] == 96
    assert overrun["reported"]["output_tokens"] == 816
    assert overrun["limit"] == "token_budget"
    assert result.stop_reason == "token_budget"  # the limit's reason, never finished
    assert len(server.bodies(OPENAI_PATH)) == 1  # and no wrap-up call after it


def test_exactly_at_the_cap_sent_is_no_overrun() -> None:
    with FakeLLMServer() as server:
        result, store = run(server, 96, Budget(max_tokens=20_000))
    assert kinds(store, result.session_id, "model.overrun") == []
    assert result.stop_reason == "finished"


def test_past_the_cap_sent_with_no_budget_at_all_still_stops_the_run() -> None:
    with FakeLLMServer() as server:
        result, store = run(server, 97, None)
    (overrun,) = kinds(store, result.session_id, "model.overrun")
    assert (overrun["reserved"]["output_tokens"], overrun["reported"]["output_tokens"]) == (96, 97)
    assert result.stop_reason == "model_error"


@pytest.mark.parametrize("output", [96, 97])
def test_a_reservation_is_never_more_than_the_cap_sent(output: int) -> None:
    with FakeLLMServer() as server:
        result, store = run(server, output, Budget(max_tokens=20_000))
    (request,) = [e for e in kinds(store, result.session_id, "model.request")
                  if not e["final"]]
    assert request["max_output_tokens"] == 96
