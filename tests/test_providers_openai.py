"""OpenAIModel against a fake Chat Completions server on 127.0.0.1, through the real SDK.

Every test reads back the exact request the SDK sent and checks it in OpenAI's native shape,
validated strictly against the SDK's own request param types.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)

from fake_llm_server import (
    OPENAI_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    openai_completion,
    openai_error,
    openai_stream,
)
from sdk_params import assert_valid
from tether import Agent, Budget, Message, ModelRequest, ModelResponse, Price, ReAct, ToolCall
from tether.models import ErrorKind, OpenAIModel, ProviderError
from tether.models.base import estimate_message_tokens
from tether.tools import Calculator
from tether.types import ToolSpec

KEY = "sk-test-0123456789abcdef"
SPEC = ToolSpec("calculator", "Evaluate arithmetic.",
                {"type": "object", "properties": {"expression": {"type": "string"}},
                 "required": ["expression"], "additionalProperties": False})


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def model(server: FakeLLMServer, name: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIModel:
    """An adapter on the fake server, which plays OpenAI's own API unless ``compat`` says."""
    kwargs.setdefault("compat", "openai")
    return OpenAIModel(name, api_key=KEY, base_url=server.url + "/v1", env_file=None, **kwargs)


def ask(*messages: Message, max_out: int | None = None) -> ModelRequest:
    return ModelRequest((Message.system("Be brief."), *messages), (SPEC,), max_out)


def calculator_brain(rec: Recorded) -> Reply:
    """Calls the calculator once, then answers with what it returned."""
    last = rec.body["messages"][-1]
    if last["role"] == "tool":
        return Reply(body=openai_completion(f"17 * 23 = {last['content']}",
                                            usage=(120, 9, 64)))
    return Reply(body=openai_completion(
        None, [("call_Qx1", "calculator", '{"expression": "17 * 23"}')], usage=(100, 18, 0)))


# -- the agent end to end --------------------------------------------------------------------

async def test_agent_runs_a_tool_loop_over_the_openai_wire(server: FakeLLMServer) -> None:
    server.responder = calculator_brain
    m = model(server)
    agent = Agent(model=m, reasoning=ReAct(), tools=[Calculator()])
    result = await agent.arun("What is 17 * 23?",
                              budget=Budget(max_tokens=20_000, max_cost_usd=Decimal("0.05")))
    assert result.answer == "17 * 23 = 391" and result.stop_reason == "finished"
    assert result.usage.input_tokens == 220 and result.usage.output_tokens == 27
    assert result.usage.cached_input_tokens == 64
    assert m.price is not None and result.spend.cost_usd == m.price.cost(result.usage)

    first, second = server.requests
    for rec in (first, second):
        assert rec.path == OPENAI_PATH
        assert rec.headers["authorization"] == f"Bearer {KEY}"
        assert rec.headers["x-stainless-retry-count"] == "0"
        assert_valid(rec.body, CompletionCreateParamsNonStreaming)
        assert rec.body["model"] == "gpt-4o-mini"
        assert 0 < rec.body["max_completion_tokens"] < 20_000
        assert "max_tokens" not in rec.body
        assert rec.body["tools"] == [{"type": "function", "function": {
            "name": "calculator", "description": Calculator().spec.description,
            "parameters": dict(Calculator().spec.parameters)}}]
    assert [m["role"] for m in first.body["messages"]] == ["system", "user"]
    assert first.body["messages"][1] == {"role": "user", "content": "What is 17 * 23?"}
    assert second.body["messages"][2:] == [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_Qx1", "type": "function",
             "function": {"name": "calculator", "arguments": '{"expression": "17 * 23"}'}}]},
        {"role": "tool", "tool_call_id": "call_Qx1", "content": "391"},
    ]


def test_sync_runs_in_fresh_event_loops_reuse_the_model(server: FakeLLMServer) -> None:
    server.responder = calculator_brain
    agent = Agent(model=model(server), reasoning=ReAct(), tools=[Calculator()])
    for _ in range(3):  # each run is its own asyncio.run: one SDK client per loop
        assert agent.run("What is 17 * 23?").answer == "17 * 23 = 391"
    assert len(server.requests) == 6


async def test_malformed_tool_json_reaches_the_gate_and_the_tool_does_not_run(
        server: FakeLLMServer) -> None:
    broken = '{"expression": "17 * 23'
    server.queue(OPENAI_PATH,
                 Reply(body=openai_completion(None, [("call_bad", "calculator", broken)])),
                 Reply(body=openai_completion("I sent broken arguments.")))
    result = await Agent(model=model(server), reasoning=ReAct(),
                         tools=[Calculator()]).arun("What is 17 * 23?")
    (step, _) = result.trajectory.steps
    assert step.tool_calls == (ToolCall("call_bad", "calculator", broken),)
    assert step.results[0].status == "rejected" and "not a JSON object" in step.results[0].content
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["tool_call_id"] == "call_bad" and "391" not in tool_message["content"]
    # the model's own (broken) text is sent back to it verbatim, not repaired
    assert server.requests[1].body["messages"][-2]["tool_calls"][0]["function"][
        "arguments"] == broken


async def test_a_cost_budget_on_an_unpriced_compatible_model_fails_closed(
        server: FakeLLMServer) -> None:
    server.responder = calculator_brain
    local = model(server, "llama3.1:8b")
    assert local.price is None
    agent = Agent(model=local, reasoning=ReAct(), tools=[Calculator()])
    with pytest.raises(ValueError, match="cost budget needs the model's price"):
        await agent.arun("What is 17 * 23?", budget=Budget(max_cost_usd=Decimal("0.01")))
    priced = Agent(model=model(server, "llama3.1:8b", price=Price(Decimal(1), Decimal(2))),
                   reasoning=ReAct(), tools=[Calculator()])
    result = await priced.arun("What is 17 * 23?", budget=Budget(max_cost_usd=Decimal("0.01")))
    assert result.stop_reason == "finished" and server.requests[-1].body["model"] == "llama3.1:8b"


async def test_a_hung_call_ends_with_the_time_budget(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(hang=True), Reply(hang=True))
    started = time.monotonic()
    result = await Agent(model=model(server), reasoning=ReAct(),
                         tools=[Calculator()]).arun("hi", budget=Budget(max_seconds=0.6))
    assert result.stop_reason == "time_budget"
    assert time.monotonic() - started < 2.0


# -- requests in the native shape ------------------------------------------------------------

async def test_a_multi_step_conversation_is_sent_in_chat_completions_shape(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion("done")))
    turn = Message.assistant("Let me compute both.", (
        ToolCall("call_a", "calculator", {"expression": "2 + 2"}),
        ToolCall("call_b", "calculator", '{"expression": "oops'),
    ))
    request = ask(Message.user("Add things."), turn,
                  Message.tool("call_a", "calculator", "4"),
                  Message.tool("call_b", "calculator", "Error: not a JSON object"),
                  Message.assistant("2 + 2 = 4."), Message.user("Thanks. Now 3 + 3?"),
                  max_out=321)
    await model(server).complete(request)
    body = server.requests[0].body
    assert_valid(body, CompletionCreateParamsNonStreaming)
    assert body["max_completion_tokens"] == 321
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add things."},
        {"role": "assistant", "content": "Let me compute both.", "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "calculator", "arguments": '{"expression": "2 + 2"}'}},
            {"id": "call_b", "type": "function",
             "function": {"name": "calculator", "arguments": '{"expression": "oops'}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "4"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: not a JSON object"},
        {"role": "assistant", "content": "2 + 2 = 4."},
        {"role": "user", "content": "Thanks. Now 3 + 3?"},
    ]
    assert body["tools"][0]["function"]["parameters"] == SPEC.parameters


@pytest.mark.parametrize(("ceiling", "compat", "fields"), [
    (None, "openai", {"max_completion_tokens": 500}),
    (100, "openai", {"max_completion_tokens": 100}),
    (None, "llama.cpp", {"max_tokens": 500}),  # it ignores max_completion_tokens
    (None, "ollama", {"max_tokens": 500}),
    (None, "vllm", {"max_completion_tokens": 500, "max_tokens": 500}),
    (100, "generic", {"max_completion_tokens": 100, "max_tokens": 100}),
])
async def test_the_output_cap_goes_in_every_field_the_server_reads(
        server: FakeLLMServer, ceiling: int | None, compat: Any, fields: dict[str, int]) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion("ok")))
    await model(server, max_output_tokens=ceiling, compat=compat).complete(
        ask(Message.user("hi"), max_out=500))
    body = server.requests[0].body
    assert {k: body[k] for k in ("max_tokens", "max_completion_tokens") if k in body} == fields
    assert_valid(body, CompletionCreateParamsNonStreaming)


def test_a_server_of_unknown_kind_gets_the_cap_in_both_fields() -> None:
    local = OpenAIModel("m", api_key="unused", base_url="http://127.0.0.1:1/v1", env_file=None)
    sent = local.request_params(ModelRequest((Message.user("hi"),), max_output_tokens=7))
    assert sent["max_tokens"] == sent["max_completion_tokens"] == 7
    official = OpenAIModel("gpt-4o-mini", api_key="k", env_file=None)
    assert "max_tokens" not in official.request_params(
        ModelRequest((Message.user("hi"),), max_output_tokens=7))
    with pytest.raises(ValueError, match="not a known server kind"):
        OpenAIModel("m", api_key="k", compat="tgi", env_file=None)  # type: ignore[arg-type]


def test_tool_choice_goes_out_only_with_tools() -> None:
    """OpenAI refuses tool_choice (and parallel_tool_calls) on a request without tools: the
    tool-less wrap-up turn of a run that set them must not send them."""
    m = OpenAIModel("gpt-4o-mini", api_key="k", env_file=None,
                    params={"tool_choice": "required", "parallel_tool_calls": False})
    with_tools = m.request_params(ModelRequest((Message.user("hi"),), (SPEC,)))
    assert with_tools["tool_choice"] == "required" and with_tools["parallel_tool_calls"] is False
    wrap_up = m.request_params(ModelRequest((Message.user("hi"),)))
    assert "tool_choice" not in wrap_up and "parallel_tool_calls" not in wrap_up
    assert_valid(wrap_up, CompletionCreateParamsNonStreaming)


@pytest.mark.parametrize(("choice", "sent"), [
    ("required", "required"), ("none", "none"),
    ("calculator", {"type": "function", "function": {"name": "calculator"}}),
])
def test_a_runs_tool_choice_is_sent_in_the_apis_shape(choice: str, sent: Any) -> None:
    m = OpenAIModel("gpt-4o-mini", api_key="k", env_file=None, params={"tool_choice": "auto"})
    body = m.request_params(ModelRequest((Message.user("hi"),), (SPEC,), tool_choice=choice))
    assert body["tool_choice"] == sent  # the run's choice wins over the params default
    assert_valid(body, CompletionCreateParamsNonStreaming)


def test_llama_cpp_gets_tool_choice_auto_with_tools_or_it_never_calls_one() -> None:
    m = OpenAIModel("m", api_key="unused", base_url="http://127.0.0.1:1/v1", compat="llama.cpp",
                    env_file=None)
    assert m.request_params(ModelRequest((Message.user("hi"),), (SPEC,)))["tool_choice"] == "auto"
    assert "tool_choice" not in m.request_params(ModelRequest((Message.user("hi"),)))


async def test_no_tools_means_no_tools_field(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion("ok")))
    await model(server).complete(ModelRequest((Message.user("hi"),)))
    assert "tools" not in server.requests[0].body
    assert "max_completion_tokens" not in server.requests[0].body


# -- responses -------------------------------------------------------------------------------

async def test_text_and_tool_calls_in_one_response_are_both_kept(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion(
        "Computing both.", [("call_1", "calculator", '{"expression": "1+1"}'),
                            ("call_2", "calculator", '{"expression": "2+2"}')],
        usage=(1200, 40, 1024))))
    response = await model(server).complete(ask(Message.user("go")))
    assert response == ModelResponse(
        "Computing both.",
        (ToolCall("call_1", "calculator", {"expression": "1+1"}),
         ToolCall("call_2", "calculator", {"expression": "2+2"})),
        response.usage, "gpt-4o-mini-2024-07-18", "tool_calls")
    assert (response.usage.input_tokens, response.usage.output_tokens,
            response.usage.cached_input_tokens) == (1200, 40, 1024)


@pytest.mark.parametrize(("raw", "calls", "mapped"), [
    ("stop", False, "stop"), ("length", False, "length"),
    ("content_filter", False, "content_filter"), ("tool_calls", True, "tool_calls"),
    ("stop", True, "tool_calls"),  # compatible servers that say "stop" beside tool calls
])
async def test_finish_reasons_map_to_tethers(server: FakeLLMServer, raw: str, calls: bool,
                                             mapped: str) -> None:
    tool = [("call_1", "calculator", "{}")] if calls else []
    server.queue(OPENAI_PATH, Reply(body=openai_completion("x", tool, finish=raw)))
    assert (await model(server).complete(ask(Message.user("go")))).finish_reason == mapped


async def test_a_server_without_usage_is_charged_the_estimate(server: FakeLLMServer) -> None:
    body = openai_completion("some answer text")
    body["usage"] = None
    server.queue(OPENAI_PATH, Reply(body=body))
    request = ModelRequest((Message.user("hi"),), (), None, input_tokens_estimate=77)
    usage = (await model(server).complete(request)).usage
    assert usage.input_tokens == 77 and usage.output_tokens >= 4


def test_the_fake_bodies_are_what_the_sdk_parses_strictly() -> None:
    ChatCompletion.model_validate(openai_completion("a", [("c", "n", "{}")], usage=(5, 5, 1)))
    for _, data in openai_stream(["a"], [("c", "n", ["{", "}"])]):
        if data != "[DONE]":
            ChatCompletionChunk.model_validate(data)


# -- streaming -------------------------------------------------------------------------------

async def test_stream_yields_deltas_then_the_assembled_response(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(events=openai_stream(
        ["Let me ", "check."],
        [("call_s1", "calculator", ['{"expr', 'ession": "6 ', '* 7"}']),
         ("call_s2", "calculator", ['{"expression": "1"}'])],
        usage=(300, 25, 256))))
    items = [i async for i in model(server).stream(ask(Message.user("go"), max_out=99))]
    assert items[:-1] == ["Let me ", "check."]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.text == "Let me check." and final.finish_reason == "tool_calls"
    assert final.tool_calls == (ToolCall("call_s1", "calculator", {"expression": "6 * 7"}),
                                ToolCall("call_s2", "calculator", {"expression": "1"}))
    assert (final.usage.input_tokens, final.usage.output_tokens,
            final.usage.cached_input_tokens) == (300, 25, 256)
    body = server.requests[0].body
    assert_valid(body, CompletionCreateParamsStreaming)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 99


async def test_streamed_malformed_arguments_stay_raw(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(events=openai_stream(
        [], [("call_m", "calculator", ['{"expression": ', '"6 * 7'])])))
    final = [i async for i in model(server).stream(ask(Message.user("go")))][-1]
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == (ToolCall("call_m", "calculator", '{"expression": "6 * 7'),)


async def test_a_stream_cut_before_the_finish_is_a_retryable_error(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(events=openai_stream(["partial ", "answer"]), cut_after=2))
    seen: list[object] = []
    with pytest.raises(ProviderError) as caught:
        async for item in model(server).stream(ask(Message.user("go"))):
            seen.append(item)
    assert seen == ["partial "] and caught.value.kind is ErrorKind.CONNECTION
    assert caught.value.retryable


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "kind", "retryable"), [
    (openai_error(429, "Rate limit reached for gpt-4o-mini", "requests", "rate_limit_exceeded",
                  {"retry-after": "2"}), ErrorKind.RATE_LIMIT, True),
    (openai_error(429, "You exceeded your current quota", "insufficient_quota",
                  "insufficient_quota"), ErrorKind.QUOTA, False),
    (openai_error(500, "The server had an error", "server_error"), ErrorKind.SERVER, True),
    (openai_error(503, "Slow down", "server_error"), ErrorKind.SERVER, True),
    (openai_error(400, "Invalid 'messages[1].content'", "invalid_request_error"),
     ErrorKind.BAD_REQUEST, False),
    (openai_error(401, f"Incorrect API key provided: {KEY}", "invalid_request_error",
                  "invalid_api_key"), ErrorKind.AUTH, False),
    (openai_error(403, "Project does not have access", "invalid_request_error"),
     ErrorKind.PERMISSION, False),
    (openai_error(404, "The model `gpt-9` does not exist", "invalid_request_error",
                  "model_not_found"), ErrorKind.NOT_FOUND, False),
])
async def test_errors_become_provider_errors_after_exactly_one_request(
        server: FakeLLMServer, reply: Reply, kind: ErrorKind, retryable: bool) -> None:
    server.queue(OPENAI_PATH, reply)
    with pytest.raises(ProviderError) as caught:
        await model(server).complete(ask(Message.user("hi")))
    error = caught.value
    assert error.kind is kind and error.retryable is retryable
    assert error.status == reply.status and error.provider == "openai:gpt-4o-mini"
    assert reply.body["error"]["message"].replace(KEY, "****") in str(error)
    assert KEY not in str(error)
    assert len(server.requests) == 1  # the SDK's own retries are off
    if "retry-after" in reply.headers:
        assert error.retry_after == 2.0


async def test_unreachable_server_is_a_connection_error() -> None:
    with FakeLLMServer() as s:
        url = s.url
    m = OpenAIModel(api_key=KEY, base_url=url + "/v1", env_file=None)
    with pytest.raises(ProviderError) as caught:
        await m.complete(ask(Message.user("hi")))
    assert caught.value.kind is ErrorKind.CONNECTION and caught.value.retryable


async def test_cancellation_reaches_a_hung_call(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(model(server).complete(ask(Message.user("hi"))), 0.3)
    assert time.monotonic() - started < 1.5


# -- construction: keys, base URL, spec ------------------------------------------------------

async def test_key_and_base_url_come_from_the_environment(
        server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.queue(OPENAI_PATH, Reply(body=openai_completion("ok")))
    m = OpenAIModel("openai:gpt-4o-mini", env_file=None)
    assert m.name == "openai:gpt-4o-mini" and m.model == "gpt-4o-mini"
    await m.complete(ask(Message.user("hi")))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_key_comes_from_a_dotenv_file_without_touching_the_environment(
        server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    env = tmp_path / ".env"
    env.write_text(f"# secrets\nexport OPENAI_API_KEY='sk-from-dotenv'\n"
                   f"OPENAI_BASE_URL={server.url}/v1  # the fake\n")
    server.queue(OPENAI_PATH, Reply(body=openai_completion("ok")))
    monkeypatch.chdir(tmp_path)
    m = OpenAIModel()  # the default env_file is ./.env
    await m.complete(ask(Message.user("hi")))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-dotenv"
    assert "OPENAI_API_KEY" not in os.environ


async def test_aclose_closes_this_loops_client_and_a_new_one_follows(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion("a")),
                 Reply(body=openai_completion("b")))
    m = model(server)
    assert (await m.complete(ask(Message.user("hi")))).text == "a"
    await m.aclose()
    assert (await m.complete(ask(Message.user("hi")))).text == "b"
    await m.aclose()


async def test_a_client_passed_in_is_used_with_its_retries_off(server: FakeLLMServer) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="sk-own-client", base_url=server.url + "/v1", max_retries=5)
    server.queue(OPENAI_PATH, fail := openai_error(500, "boom", "server_error"), fail)
    with pytest.raises(ProviderError, match="boom"):
        await OpenAIModel(client=client, env_file=None).complete(ask(Message.user("hi")))
    assert len(server.requests) == 1
    assert server.requests[0].headers["authorization"] == "Bearer sk-own-client"
    await client.close()


def test_a_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"OPENAI_API_KEY.*api_key='unused'"):
        OpenAIModel(env_file=None)


def test_the_key_never_shows(server: FakeLLMServer) -> None:
    m = model(server)
    assert KEY not in repr(m) and KEY not in str(m) and KEY not in repr(vars(m))
    assert repr(m) == f"OpenAIModel('gpt-4o-mini', base_url='{server.url}/v1')"
    assert KEY not in repr(m._key)  # type: ignore[attr-defined]


def test_a_spec_for_another_provider_is_refused() -> None:
    with pytest.raises(ValueError, match="names another provider"):
        OpenAIModel("anthropic:claude-sonnet-4", api_key=KEY, env_file=None)


def test_params_cannot_override_what_tether_controls() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        OpenAIModel(api_key=KEY, env_file=None, params={"max_tokens": 10})


async def test_extra_params_are_sent(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion("ok")))
    await model(server, params={"temperature": 0.2, "seed": 7}).complete(
        ask(Message.user("hi")))
    body = server.requests[0].body
    assert body["temperature"] == 0.2 and body["seed"] == 7
    assert_valid(body, CompletionCreateParamsNonStreaming)


def test_estimates_err_high_and_count_framing() -> None:
    m = OpenAIModel(api_key=KEY, env_file=None)
    plain = Message.user("hello world, how are you today?")
    assert m.estimate_message_tokens(plain) == estimate_message_tokens(plain)
    call = Message.assistant("", (ToolCall("call_x", "calculator", {"expression": "1"}),))
    assert m.estimate_message_tokens(call) > estimate_message_tokens(call)
    cjk = Message.user("東京都の天気はどうですか" * 10)
    assert m.estimate_message_tokens(cjk) >= len(cjk.content)


def test_a_small_vocabulary_is_estimated_at_fewer_characters_per_token() -> None:
    """A small model's tokenizer needs more tokens than four characters each: the estimate
    scales up (never down), so a re-sent answer is not under-reserved."""
    from tether.types import Message

    message = Message.assistant("Lighthouse keepers are a beacon of hope. " * 16)
    default = OpenAIModel("m", api_key="unused", base_url="http://127.0.0.1:1/v1",
                          env_file=None)
    small = OpenAIModel("m", api_key="unused", base_url="http://127.0.0.1:1/v1",
                        env_file=None, chars_per_token=3.0)
    assert small.estimate_message_tokens(message) >= default.estimate_message_tokens(
        message) * 4 / 3
    for bad in (0, -1, 5.0, float("nan")):
        with pytest.raises(ValueError, match="chars_per_token"):
            OpenAIModel("m", api_key="unused", base_url="http://127.0.0.1:1/v1",
                        env_file=None, chars_per_token=bad)
