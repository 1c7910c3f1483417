"""A real model: SmolLM2-135M behind llama.cpp's OpenAI-compatible server (``local_server``),
driven through ``OpenAIModel`` and the Agent. A 135M model is no judge of when to call a tool, so
these tests force the first tool call and assert on protocol and governance — the request
shapes the real server accepts, the cap it honours, the budgets that stop a real generation, the
journal that verifies — never on the model's wisdom."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tether import Agent, Budget, Message, ModelRequest, ReAct, ToolCall
from tether.journal.chain import verify_chain
from tether.runtime.record.result import Result
from tether.runtime.stream import Finished, TextDelta
from tether.store.memory import MemoryStore
from tether.tools import Calculator

LONG_TASK = "Write a very long story about a lighthouse keeper, with many chapters."


def agent(server: Any, store: MemoryStore, **kwargs: Any) -> Agent:
    kwargs.setdefault("model", server.model())
    kwargs.setdefault("tools", [Calculator()])
    return Agent(reasoning=ReAct(), store=store, **kwargs)


def events(store: MemoryStore, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in store.read(session_id) if e.type == kind]


def post(server: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{server.base_url}/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_a_full_tool_round_trip_on_a_real_model(local_server: Any) -> None:
    store = MemoryStore()
    model = local_server.model(params={"tool_choice": "none"})  # after the forced first turn
    result = agent(local_server, store, model=model, first_tool_choice="calculator").run(
        "What is 17 * 23? Use the calculator.", budget=Budget(max_steps=3, max_seconds=60))
    assert result.stop_reason == "finished"
    assert events(store, result.session_id, "model.error") == []  # every turn was accepted
    responses = events(store, result.session_id, "model.response")
    first = responses[0]["response"]
    assert first["tool_calls"] and first["tool_calls"][0]["name"] == "calculator"
    assert events(store, result.session_id, "tool.result")  # the call ran through the gate
    assert len(responses) == 2  # and the model answered the turn that carried its result
    assert not responses[1]["response"]["tool_calls"]
    assert all(not r["response"]["usage"].get("estimated") for r in responses)
    assert verify_chain(store.read(result.session_id)) is None


def test_the_exact_tool_history_shape_tether_sends_is_accepted(local_server: Any) -> None:
    """The second turn of a tool loop as tether sends it: the server accepts it. The shape it
    refuses (``content: null`` beside the tool calls) is kept here to show why it is not sent."""
    call = ToolCall("call_1", "calculator", {"expression": "17 * 23"})
    history = (Message.user("What is 17 * 23?"), Message.assistant("", (call,)),
               Message.tool(call.id, "calculator", "391"))
    body = local_server.model().request_params(
        ModelRequest(history, (Calculator().spec,), max_output_tokens=16))
    assert body["messages"][1]["content"] == "" and body["tool_choice"] == "auto"
    status, reply = post(local_server, body)
    assert status == 200, reply
    body["messages"][1]["content"] = None
    status, reply = post(local_server, body)
    assert status >= 400  # what an adapter sending null got: a failure on every second turn


def test_streaming_hands_on_text_and_marks_usage_it_had_to_count(local_server: Any) -> None:
    """The server is asked for usage in the stream and sends none: the runtime charges its own
    count and the journal says the usage was estimated."""
    store = MemoryStore()
    session = agent(local_server, store, tools=()).session("Say hello in five words.",
                                                          budget=Budget(max_tokens=400))

    async def streamed() -> tuple[list[str], Result]:
        deltas, finished = [], None
        async for item in session.astream():
            if isinstance(item, TextDelta):
                deltas.append(item.text)
            elif isinstance(item, Finished):
                finished = item.result
        assert finished is not None
        return deltas, finished

    deltas, result = asyncio.run(streamed())
    assert result.stop_reason == "finished"
    assert "".join(deltas) == result.answer and result.answer
    (response,) = events(store, result.session_id, "model.response")
    assert response["response"]["usage"]["estimated"] is True
    assert response["response"]["usage"]["output_tokens"] > 0
    assert verify_chain(store.read(result.session_id)) is None


def test_the_output_cap_is_honoured_in_the_field_the_server_reads(local_server: Any) -> None:
    model = local_server.model(max_output_tokens=5)
    store = MemoryStore()
    result = agent(local_server, store, model=model, tools=()).run(LONG_TASK)
    (response,) = events(store, result.session_id, "model.response")
    assert response["response"]["usage"]["output_tokens"] <= 5
    assert response["response"]["finish_reason"] == "length"


def test_a_cap_the_server_ignores_is_an_overrun_that_stops_the_run(local_server: Any) -> None:
    """Sent only in ``max_completion_tokens`` (OpenAI's field), the cap is ignored by llama.cpp:
    the answer runs past what the budget reserved, is charged, and stops the run at once."""
    store = MemoryStore()
    model = local_server.model(compat="openai")
    result = agent(local_server, store, model=model, tools=()).run(
        LONG_TASK, budget=Budget(max_tokens=1000))
    assert result.stop_reason == "token_budget"
    (overrun,) = events(store, result.session_id, "model.overrun")
    assert overrun["reported"]["output_tokens"] > overrun["reserved"]["output_tokens"]
    assert verify_chain(store.read(result.session_id)) is None


def test_a_token_budget_stops_a_real_generation_within_its_limit(local_server: Any) -> None:
    store = MemoryStore()
    result = agent(local_server, store, tools=()).run(LONG_TASK, budget=Budget(max_tokens=600))
    assert result.stop_reason == "token_budget"
    assert result.usage.total_tokens <= 600
    cut = events(store, result.session_id, "model.response")[0]["response"]
    assert cut["finish_reason"] == "length" and cut["usage"]["output_tokens"] > 0  # it generated
    assert events(store, result.session_id, "model.overrun") == []


def test_a_time_budget_stops_a_real_generation(local_server: Any) -> None:
    store = MemoryStore()
    started = time.monotonic()
    result = agent(local_server, store, model=local_server.model(max_output_tokens=3000),
                   tools=()).run(LONG_TASK, budget=Budget(max_seconds=1.0))
    elapsed = time.monotonic() - started
    assert result.stop_reason == "time_budget"
    assert elapsed < 3.0  # the generation was cancelled, not waited out
    assert verify_chain(store.read(result.session_id)) is None


@pytest.mark.parametrize("compat", ["llama.cpp", "generic"])
def test_both_profiles_that_fit_llama_cpp_keep_its_cap(local_server: Any, compat: str) -> None:
    store = MemoryStore()
    model = local_server.model(compat=compat, max_output_tokens=8)
    result = agent(local_server, store, model=model, tools=()).run(LONG_TASK)
    (response,) = events(store, result.session_id, "model.response")
    assert response["response"]["usage"]["output_tokens"] <= 8


def test_the_server_never_outlives_a_killed_owner(tmp_path: Any) -> None:
    """The owner is killed with no chance to clean up: the model server ends itself."""
    import os
    import subprocess
    import sys

    owner = tmp_path / "owner.py"
    owner.write_text("import os\nfrom tether.models.local import local_model_server\n"
                     "with local_model_server() as server:\n"
                     "    print(server.pid, flush=True)\n"
                     "    os.kill(os.getpid(), 9)\n")
    done = subprocess.run([sys.executable, str(owner)], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == -9
    pid = int(done.stdout.split()[0])
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError(f"the model server {pid} outlived its killed owner")
