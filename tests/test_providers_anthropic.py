"""AnthropicModel against a fake Messages server on 127.0.0.1, through the real SDK.

Every test reads back the exact request the SDK sent and checks it in Anthropic's native shape,
validated strictly against the SDK's own request param types.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import RawMessageStreamEvent
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from pydantic import TypeAdapter

from fake_llm_server import (
    ANTHROPIC_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
)
from sdk_params import assert_valid
from tether import Agent, Budget, Message, ModelRequest, ModelResponse, ReAct, ToolCall
from tether.models import AnthropicModel, ErrorKind, ProviderError
from tether.tools import Calculator
from tether.types import ToolSpec

KEY = "sk-ant-test-0123456789abcdef"
MODEL = "claude-sonnet-4-20250514"
SPEC = ToolSpec("calculator", "Evaluate arithmetic.",
                {"type": "object", "properties": {"expression": {"type": "string"}},
                 "required": ["expression"], "additionalProperties": False})


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def model(server: FakeLLMServer, name: str = MODEL, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(name, api_key=KEY, base_url=server.url, env_file=None, **kwargs)


def ask(*messages: Message, max_out: int | None = None) -> ModelRequest:
    return ModelRequest((Message.system("Be brief."), *messages), (SPEC,), max_out)


def sent_key(rec: Recorded) -> str:
    """The key as the SDK sent it: ``x-api-key``, or (newer SDKs) ``Authorization: Bearer``."""
    return rec.headers.get("x-api-key") or rec.headers["authorization"].removeprefix("Bearer ")


def calculator_brain(rec: Recorded) -> Reply:
    """Calls the calculator once, then answers with what it returned."""
    last = rec.body["messages"][-1]["content"]
    results = [b for b in last if b["type"] == "tool_result"]
    if results:
        return Reply(body=anthropic_message(f"17 * 23 = {results[0]['content']}",
                                            usage=(30, 9, 90, 0)))
    return Reply(body=anthropic_message(
        "I'll use the calculator.", [("toolu_01A", "calculator", {"expression": "17 * 23"})],
        usage=(110, 40, 0, 0)))


# -- the agent end to end --------------------------------------------------------------------

async def test_agent_runs_a_tool_loop_over_the_anthropic_wire(server: FakeLLMServer) -> None:
    server.responder = calculator_brain
    m = model(server)
    agent = Agent(model=m, reasoning=ReAct(), tools=[Calculator()], system_prompt="Be exact.")
    result = await agent.arun("What is 17 * 23?",
                              budget=Budget(max_tokens=20_000, max_cost_usd=Decimal("0.50")))
    assert result.answer == "17 * 23 = 391" and result.stop_reason == "finished"
    # input counts cached reads too: 110 + (30 + 90); 90 of it from the cache
    assert result.usage.input_tokens == 230 and result.usage.cached_input_tokens == 90
    assert result.usage.output_tokens == 49
    assert m.price is not None and result.spend.cost_usd == m.price.cost(result.usage)

    first, second = server.requests
    for rec in (first, second):
        assert rec.path == ANTHROPIC_PATH
        assert sent_key(rec) == KEY
        assert rec.headers["anthropic-version"]
        assert rec.headers["x-stainless-retry-count"] == "0"
        assert_valid(rec.body, MessageCreateParamsNonStreaming)
        assert rec.body["model"] == MODEL and rec.body["system"] == "Be exact."
        assert 0 < rec.body["max_tokens"] <= 4096
        assert rec.body["tools"] == [{"name": "calculator",
                                      "description": Calculator().spec.description,
                                      "input_schema": dict(Calculator().spec.parameters)}]
        assert all(msg["role"] in ("user", "assistant") for msg in rec.body["messages"])
    assert first.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 17 * 23?"}]}]
    assert second.body["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "text", "text": "I'll use the calculator."},
            {"type": "tool_use", "id": "toolu_01A", "name": "calculator",
             "input": {"expression": "17 * 23"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "391"}]},
    ]


def test_sync_runs_in_fresh_event_loops_reuse_the_model(server: FakeLLMServer) -> None:
    server.responder = calculator_brain
    agent = Agent(model=model(server), reasoning=ReAct(), tools=[Calculator()])
    for _ in range(2):
        assert agent.run("What is 17 * 23?").answer == "17 * 23 = 391"


async def test_a_hung_call_ends_with_the_time_budget(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(hang=True), Reply(hang=True))
    started = time.monotonic()
    result = await Agent(model=model(server), reasoning=ReAct(),
                         tools=[Calculator()]).arun("hi", budget=Budget(max_seconds=0.6))
    assert result.stop_reason == "time_budget" and time.monotonic() - started < 2.0


async def test_the_wrap_up_turn_declares_the_used_tools_but_allows_none(
        server: FakeLLMServer) -> None:
    def brain(rec: Recorded) -> Reply:
        if rec.body.get("tool_choice") == {"type": "none"}:
            return Reply(body=anthropic_message("Out of tool calls; 17 * 23 = 391."))
        call_id = f"toolu_{len(rec.body['messages'])}"
        return Reply(body=anthropic_message(None, [(call_id, "calculator",
                                                    {"expression": "17 * 23"})]))

    server.responder = brain
    result = await Agent(model=model(server), reasoning=ReAct(), tools=[Calculator()]).arun(
        "17 * 23?", budget=Budget(max_tool_calls=1))
    assert result.stop_reason == "tool_call_budget"
    assert result.answer == "Out of tool calls; 17 * 23 = 391."
    final = server.requests[-1].body
    assert_valid(final, MessageCreateParamsNonStreaming)
    assert final["tool_choice"] == {"type": "none"}
    assert final["tools"] == [{"name": "calculator", "description": "Not available in this turn.",
                               "input_schema": {"type": "object"}}]
    assert "tool_choice" not in server.requests[0].body


def test_the_estimate_covers_the_hidden_tool_prompt_once_per_request() -> None:
    m = AnthropicModel(api_key=KEY, env_file=None)
    assert m.estimate_message_tokens(Message.system("Be brief.")) >= 400
    assert m.estimate_message_tokens(Message.user("Be brief.")) < 20


# -- requests in the native shape ------------------------------------------------------------

async def test_a_multi_step_conversation_is_sent_in_messages_shape(
        server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("done")))
    turn = Message.assistant("Both at once.", (
        ToolCall("toolu_a", "calculator", {"expression": "2 + 2"}),
        ToolCall("toolu_b", "calculator", '{"expression": "oops'),
    ))
    request = ask(Message.user("Add things."), turn,
                  Message.tool("toolu_a", "calculator", "4"),
                  Message.tool("toolu_b", "calculator", "Error: not a JSON object"),
                  Message.user("[tether] budget left: steps=3"),
                  Message.assistant("2 + 2 = 4."), Message.user("Thanks. Now 3 + 3?"),
                  max_out=321)
    await model(server).complete(request)
    body = server.requests[0].body
    assert_valid(body, MessageCreateParamsNonStreaming)
    assert body["system"] == "Be brief." and body["max_tokens"] == 321
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Add things."}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Both at once."},
            {"type": "tool_use", "id": "toolu_a", "name": "calculator",
             "input": {"expression": "2 + 2"}},
            # malformed arguments cannot be an object; the result below tells the model why
            {"type": "tool_use", "id": "toolu_b", "name": "calculator", "input": {}}]},
        # both results of the turn, in order, then the note, in ONE user message
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "4"},
            {"type": "tool_result", "tool_use_id": "toolu_b",
             "content": "Error: not a JSON object"},
            {"type": "text", "text": "[tether] budget left: steps=3"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "2 + 2 = 4."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks. Now 3 + 3?"}]},
    ]
    assert body["tools"][0]["input_schema"] == SPEC.parameters


@pytest.mark.parametrize(("ceiling", "asked", "sent"), [
    (4096, None, 4096), (4096, 500, 500), (200, 500, 200),
    (64_000, 60_000, 60_000),  # large enough that the SDK insists on streaming by default
])
async def test_max_tokens_is_always_sent(server: FakeLLMServer, ceiling: int,
                                         asked: int | None, sent: int) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("ok")))
    await model(server, max_output_tokens=ceiling).complete(ask(Message.user("hi"),
                                                                max_out=asked))
    assert server.requests[0].body["max_tokens"] == sent


async def test_no_system_prompt_and_no_tools_leave_the_fields_out(
        server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("ok")))
    await model(server).complete(ModelRequest((Message.user("hi"),)))
    body = server.requests[0].body
    assert "system" not in body and "tools" not in body
    assert_valid(body, MessageCreateParamsNonStreaming)


# -- responses -------------------------------------------------------------------------------

async def test_text_and_tool_uses_are_both_kept_and_usage_maps(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(
        "Computing both.", [("toolu_1", "calculator", {"expression": "1+1"}),
                            ("toolu_2", "calculator", {"expression": "2+2"})],
        usage=(200, 60, 1000, 24))))
    response = await model(server).complete(ask(Message.user("go")))
    assert response.text == "Computing both." and response.finish_reason == "tool_calls"
    assert response.tool_calls == (ToolCall("toolu_1", "calculator", {"expression": "1+1"}),
                                   ToolCall("toolu_2", "calculator", {"expression": "2+2"}))
    assert response.model == MODEL
    # all input (uncached + cache reads + cache writes); the cached part separately
    assert (response.usage.input_tokens, response.usage.output_tokens,
            response.usage.cached_input_tokens) == (1224, 60, 1000)


@pytest.mark.parametrize(("raw", "mapped"), [
    ("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"),
    ("refusal", "content_filter"), ("model_context_window_exceeded", "length"),
])
async def test_stop_reasons_map_to_tethers(server: FakeLLMServer, raw: str, mapped: str) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("x", stop=raw)))
    assert (await model(server).complete(ask(Message.user("go")))).finish_reason == mapped


async def test_tool_input_that_is_not_an_object_stays_raw(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(
        None, [("toolu_s", "calculator", "17 * 23")])))
    response = await model(server).complete(ask(Message.user("go")))
    assert response.tool_calls == (ToolCall("toolu_s", "calculator", "17 * 23"),)


def test_the_fake_bodies_are_what_the_sdk_parses_strictly() -> None:
    AnthropicMessage.model_validate(anthropic_message("a", [("t", "n", {})],
                                                      usage=(1, 2, 3, 4)))
    events = TypeAdapter(RawMessageStreamEvent)
    for name, data in anthropic_stream(["a"], [("t", "n", ["{", "}"])]):
        if name != "ping":
            events.validate_python(data)


# -- streaming -------------------------------------------------------------------------------

async def test_stream_yields_deltas_then_the_assembled_response(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(events=anthropic_stream(
        ["Let me ", "check."],
        [("toolu_s1", "calculator", ['{"expr', 'ession": "6 ', '* 7"}']),
         ("toolu_s2", "calculator", [])],
        usage=(40, 33, 2000, 0))))
    items = [i async for i in model(server).stream(ask(Message.user("go"), max_out=99))]
    assert items[:-1] == ["Let me ", "check."]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.text == "Let me check." and final.finish_reason == "tool_calls"
    assert final.tool_calls == (ToolCall("toolu_s1", "calculator", {"expression": "6 * 7"}),
                                ToolCall("toolu_s2", "calculator", {}))
    assert (final.usage.input_tokens, final.usage.output_tokens,
            final.usage.cached_input_tokens) == (2040, 33, 2000)
    body = server.requests[0].body
    assert_valid(body, MessageCreateParamsStreaming)
    assert body["stream"] is True and body["max_tokens"] == 99


async def test_streamed_malformed_input_json_stays_raw(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(events=anthropic_stream(
        [], [("toolu_m", "calculator", ['{"expression": ', '"6 * 7'])])))
    final = [i async for i in model(server).stream(ask(Message.user("go")))][-1]
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == (ToolCall("toolu_m", "calculator", '{"expression": "6 * 7'),)


async def test_an_error_event_mid_stream_is_classified(server: FakeLLMServer) -> None:
    events = anthropic_stream(["partial"])[:4]
    events.append(("error", {"type": "error", "error": {"type": "overloaded_error",
                                                        "message": "Overloaded"}}))
    server.queue(ANTHROPIC_PATH, Reply(events=events))
    seen: list[object] = []
    with pytest.raises(ProviderError) as caught:
        async for item in model(server).stream(ask(Message.user("go"))):
            seen.append(item)
    assert seen == ["partial"]
    assert caught.value.kind is ErrorKind.SERVER and caught.value.retryable
    assert "Overloaded" in str(caught.value)


async def test_a_stream_cut_before_message_stop_is_a_retryable_error(
        server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(events=anthropic_stream(["a", "b"]), cut_after=5))
    with pytest.raises(ProviderError) as caught:
        _ = [i async for i in model(server).stream(ask(Message.user("go")))]
    assert caught.value.kind is ErrorKind.CONNECTION


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "kind", "retryable"), [
    (anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded your "
                     "per-minute rate limit", {"retry-after": "3"}), ErrorKind.RATE_LIMIT, True),
    (anthropic_error(529, "overloaded_error", "Overloaded"), ErrorKind.SERVER, True),
    (anthropic_error(500, "api_error", "Internal server error"), ErrorKind.SERVER, True),
    (anthropic_error(400, "invalid_request_error", "messages.1.content.0.tool_use.input: "
                     "Input should be a valid dictionary"), ErrorKind.BAD_REQUEST, False),
    (anthropic_error(401, "authentication_error", "invalid x-api-key"), ErrorKind.AUTH, False),
    (anthropic_error(403, "permission_error", "Your API key does not have permission"),
     ErrorKind.PERMISSION, False),
    (anthropic_error(404, "not_found_error", "model: claude-9"), ErrorKind.NOT_FOUND, False),
])
async def test_errors_become_provider_errors_after_exactly_one_request(
        server: FakeLLMServer, reply: Reply, kind: ErrorKind, retryable: bool) -> None:
    server.queue(ANTHROPIC_PATH, reply)
    with pytest.raises(ProviderError) as caught:
        await model(server).complete(ask(Message.user("hi")))
    error = caught.value
    assert error.kind is kind and error.retryable is retryable and error.status == reply.status
    assert reply.body["error"]["message"] in str(error) and KEY not in str(error)
    assert len(server.requests) == 1  # the SDK's own retries are off
    if "retry-after" in reply.headers:
        assert error.retry_after == 3.0


async def test_cancellation_reaches_a_hung_call(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(model(server).complete(ask(Message.user("hi"))), 0.3)
    assert time.monotonic() - started < 1.5


# -- construction ----------------------------------------------------------------------------

async def test_key_comes_from_env_or_dotenv(server: FakeLLMServer, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)  # the file's URL must be used
    env = tmp_path / "secrets.env"
    env.write_text(f'ANTHROPIC_API_KEY="sk-ant-dotenv"\nANTHROPIC_BASE_URL={server.url}\n')
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("a")),
                 Reply(body=anthropic_message("b")))
    await AnthropicModel("anthropic:" + MODEL, env_file=env).complete(ask(Message.user("hi")))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")  # the environment wins over the file
    await AnthropicModel(MODEL, env_file=env).complete(ask(Message.user("hi")))
    assert [sent_key(r) for r in server.requests] == ["sk-ant-dotenv", "sk-ant-env"]


async def test_a_client_passed_in_is_used_with_its_retries_off(server: FakeLLMServer) -> None:
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(api_key="sk-ant-own", base_url=server.url, max_retries=5)
    server.queue(ANTHROPIC_PATH, *[anthropic_error(529, "overloaded_error", "Overloaded")] * 2)
    with pytest.raises(ProviderError, match="Overloaded"):
        await AnthropicModel(MODEL, client=client, env_file=None).complete(
            ask(Message.user("hi")))
    assert len(server.requests) == 1 and sent_key(server.requests[0]) == "sk-ant-own"
    await client.close()


def test_a_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(env_file=None)


def test_name_price_and_repr(server: FakeLLMServer) -> None:
    m = model(server, "anthropic:claude-3-5-haiku-20241022")
    assert m.name == "anthropic:claude-3-5-haiku-20241022"
    assert m.price is not None and m.price.cached_input == Decimal("0.08")
    assert KEY not in repr(m) and KEY not in repr(vars(m))
    assert model(server, "claude-next-9").price is None


def test_max_output_tokens_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicModel(api_key=KEY, env_file=None, max_output_tokens=0)


@pytest.mark.parametrize(("choice", "sent"), [
    ("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"}),
    ("calculator", {"type": "tool", "name": "calculator"}),
])
def test_a_runs_tool_choice_is_sent_in_the_messages_apis_shape(choice: str, sent: Any) -> None:
    m = AnthropicModel(MODEL, api_key="k", env_file=None, params={"tool_choice": {"type": "auto"}})
    body = m.request_params(ModelRequest((Message.user("hi"),), (SPEC,), 100, tool_choice=choice))
    assert body["tool_choice"] == sent
    assert_valid(body, MessageCreateParamsNonStreaming)
    assert "tool_choice" not in m.request_params(ModelRequest((Message.user("hi"),)))
