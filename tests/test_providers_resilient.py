"""Resilient, Fallback and CircuitBreaker: against the fake server with scripted failures, and
against an in-process flaky model where timing must be exact."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from email.utils import formatdate
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

from fake_llm_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    anthropic_stream,
    openai_completion,
    openai_error,
    openai_stream,
)
from sdk_params import assert_valid
from tether import Agent, Budget, Message, ModelRequest, ModelResponse, Price, ReAct, ToolCall
from tether.models import (
    AnthropicModel,
    Backoff,
    CircuitBreaker,
    CircuitState,
    ErrorKind,
    Fallback,
    OpenAIModel,
    ProviderError,
    Resilient,
    ScriptedModel,
)
from tether.tools import Calculator

NO_WAIT = Backoff(initial=0.0, jitter=0.0)
REQUEST = ModelRequest((Message.system("s"), Message.user("hi")))


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def openai(server: FakeLLMServer) -> OpenAIModel:
    return OpenAIModel(api_key="sk-test", base_url=server.url + "/v1", env_file=None)


def anthropic(server: FakeLLMServer) -> AnthropicModel:
    return AnthropicModel("claude-3-5-haiku-latest", api_key="sk-ant-test",
                          base_url=server.url, env_file=None)


def ok(text: str = "ok") -> Reply:
    return Reply(body=openai_completion(text))


def fail(status: int, **headers: str) -> Reply:
    return openai_error(status, f"scripted {status}", "server_error" if status >= 500
                        else "invalid_request_error", headers=headers)


class Flaky:
    """An in-process model that plays a script of outcomes: a response, an exception, "hang"."""

    name = "flaky"
    price: Price | None = Price(Decimal(1), Decimal(2))

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def estimate_message_tokens(self, message: Message) -> int:
        return 10

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else ModelResponse("ok")
        if outcome == "hang":
            await asyncio.sleep(3600)
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, ModelResponse)
        return outcome


def err(kind: ErrorKind, retry_after: float | None = None) -> ProviderError:
    return ProviderError("scripted", provider="flaky", kind=kind, retry_after=retry_after)


# -- retries by error class ------------------------------------------------------------------

async def test_server_errors_are_retried_until_an_answer(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(500), fail(503), ok("third time"))
    response = await Resilient(openai(server), backoff=NO_WAIT).complete(REQUEST)
    assert response.text == "third time"
    bodies = server.bodies()
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "0", "0"]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(server: FakeLLMServer, status: int) -> None:
    server.queue(OPENAI_PATH, fail(status), ok())
    with pytest.raises(ProviderError) as caught:
        await Resilient(openai(server), backoff=NO_WAIT).complete(REQUEST)
    assert caught.value.status == status and not caught.value.retryable
    assert len(server.requests) == 1


async def test_retries_run_out(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, *[fail(503)] * 5)
    with pytest.raises(ProviderError, match="3 attempts failed; last failure: scripted 503"):
        await Resilient(openai(server), retries=2, backoff=NO_WAIT).complete(REQUEST)
    assert len(server.requests) == 3


async def test_a_server_error_repeated_word_for_word_is_not_retried_again(
        server: FakeLLMServer) -> None:
    """A server that answers the same request with the same 500 every time (llama.cpp's, on a
    message shape it cannot read) is failing on the request: two attempts, not four."""
    server.queue(OPENAI_PATH, *[fail(500)] * 4, ok())
    with pytest.raises(ProviderError, match="failed exactly as the one before") as caught:
        await Resilient(openai(server), retries=3, backoff=NO_WAIT).complete(REQUEST)
    assert len(server.requests) == 2
    assert caught.value.status == 500 and "scripted 500" in str(caught.value)


@pytest.mark.parametrize("replies", [
    [openai_error(500, "worker 1 crashed", "server_error"),
     openai_error(500, "worker 2 crashed", "server_error")],  # different words: transient
    [fail(503), fail(503)],  # unavailable says "for a while" however often it is said
    [fail(500), fail(502)],
])
async def test_server_errors_that_differ_or_say_busy_are_still_retried(
        server: FakeLLMServer, replies: list[Reply]) -> None:
    server.queue(OPENAI_PATH, *replies, ok("then fine"))
    response = await Resilient(openai(server), retries=3, backoff=NO_WAIT).complete(REQUEST)
    assert response.text == "then fine" and len(server.requests) == 3


async def test_connection_errors_and_timeouts_are_retried() -> None:
    flaky = Flaky(ConnectionResetError("reset"), TimeoutError(), ModelResponse("fine"))
    assert (await Resilient(flaky, backoff=NO_WAIT).complete(REQUEST)).text == "fine"
    assert flaky.calls == 3


async def test_raw_sdk_exceptions_of_a_custom_model_are_classified() -> None:
    import httpx2
    import openai as sdk

    response = httpx2.Response(429, headers={"retry-after-ms": "20"},
                               request=httpx2.Request("POST", "http://127.0.0.1/v1"))
    limited = sdk.RateLimitError("slow down", response=response, body=None)
    flaky = Flaky(limited, ModelResponse("fine"))
    started = time.monotonic()
    assert (await Resilient(flaky, backoff=Backoff(initial=5)).complete(REQUEST)).text == "fine"
    assert time.monotonic() - started < 1  # waited the 20 ms asked for, not the 5 s backoff


# -- Retry-After and the total deadline ------------------------------------------------------

async def test_retry_after_seconds_is_honoured(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(429, **{"retry-after": "1"}), ok())
    await Resilient(openai(server), backoff=NO_WAIT).complete(REQUEST)
    first, second = server.requests
    assert second.at - first.at >= 0.95


async def test_retry_after_http_date_is_honoured(server: FakeLLMServer) -> None:
    date = int(time.time()) + 2  # an HTTP date has whole seconds
    server.queue(OPENAI_PATH, fail(503, **{"retry-after": formatdate(date, usegmt=True)}), ok())
    await Resilient(openai(server), backoff=NO_WAIT).complete(REQUEST)
    # not retried before the date (a loaded machine may only make it later), nor long after
    assert date - 0.05 <= time.time() < date + 10
    assert len(server.requests) == 2


async def test_a_retry_after_beyond_the_deadline_fails_now(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(429, **{"retry-after": "30"}), ok())
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"after 30\.0s, beyond the .* of the 5\.0s "
                                            r"deadline") as caught:
        await Resilient(openai(server), deadline=5.0).complete(REQUEST)
    assert caught.value.kind is ErrorKind.RATE_LIMIT and caught.value.retry_after == 30.0
    assert time.monotonic() - started < 1 and len(server.requests) == 1


async def test_the_deadline_covers_all_attempts(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, *[Reply(delay=0.35, status=503, body={"error": {
        "message": "slow failure", "type": "server_error"}})] * 10)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"no answer within the 1\.0s deadline "
                                            r"\(3 attempts\); last failure: slow failure"):
        await Resilient(openai(server), retries=10, deadline=1.0,
                        backoff=NO_WAIT).complete(REQUEST)
    assert 0.95 <= time.monotonic() - started < 1.5


async def test_an_attempt_timeout_retries_a_hung_call(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(hang=True), ok("second try"))
    model = Resilient(openai(server), attempt_timeout=0.3, backoff=NO_WAIT)
    assert (await model.complete(REQUEST)).text == "second try"


async def test_cancellation_propagates_at_once_and_gives_no_verdict(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(hang=True))
    model = Resilient(openai(server), deadline=60)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(model.complete(REQUEST), 0.3)
    assert time.monotonic() - started < 1
    assert model.breaker is not None and model.breaker.state is CircuitState.CLOSED
    assert "failures=0" in repr(model.breaker)


async def test_cancellation_during_a_backoff_wait(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(500))
    model = Resilient(openai(server), backoff=Backoff(initial=30, jitter=0), deadline=None)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(model.complete(REQUEST), 0.5)


async def test_a_hung_resilient_call_ends_with_the_session_time_budget(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, *[Reply(hang=True)] * 4)
    agent = Agent(model=Resilient(openai(server), deadline=60), reasoning=ReAct())
    started = time.monotonic()
    result = await agent.arun("hi", budget=Budget(max_seconds=0.6))
    assert result.stop_reason == "time_budget" and time.monotonic() - started < 2


# -- circuit breaker -------------------------------------------------------------------------

async def test_breaker_opens_fails_fast_and_half_opens(server: FakeLLMServer) -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=2, reset_after=30, clock=lambda: now[0])
    model = Resilient(openai(server), retries=0, breaker=breaker)
    server.queue(OPENAI_PATH, fail(500), fail(502), ok("back"), fail(500), fail(500))
    for _ in range(2):
        with pytest.raises(ProviderError, match="scripted 50"):
            await model.complete(REQUEST)
    assert breaker.state is CircuitState.OPEN
    with pytest.raises(ProviderError, match=r"circuit open \(2 consecutive failures; next "
                                            r"trial in 30\.0s\)") as caught:
        await model.complete(REQUEST)
    assert caught.value.kind is ErrorKind.CIRCUIT_OPEN and len(server.requests) == 2
    now[0] = 30.0
    assert breaker.state is CircuitState.HALF_OPEN
    assert (await model.complete(REQUEST)).text == "back"  # the trial succeeds: closed again
    assert breaker.state is CircuitState.CLOSED
    for _ in range(2):
        with pytest.raises(ProviderError):
            await model.complete(REQUEST)
    now[0] = 61.0
    server.queue(OPENAI_PATH, fail(503))
    with pytest.raises(ProviderError, match="scripted 503"):  # the trial fails: open again
        await model.complete(REQUEST)
    assert breaker.state is CircuitState.OPEN


async def test_breaker_allows_one_trial_at_a_time() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, reset_after=1, clock=lambda: now[0])
    flaky = Flaky(err(ErrorKind.SERVER), "hang")
    model = Resilient(flaky, retries=0, breaker=breaker)
    with pytest.raises(ProviderError):
        await model.complete(REQUEST)
    now[0] = 2.0
    trial = asyncio.create_task(model.complete(REQUEST))
    await asyncio.sleep(0.01)
    with pytest.raises(ProviderError, match="a trial call is under way"):
        await model.complete(REQUEST)
    trial.cancel()
    with pytest.raises(asyncio.CancelledError):
        await trial
    assert flaky.calls == 2
    assert (await model.complete(REQUEST)).text == "ok"  # the cancelled trial freed its slot
    assert breaker.state is CircuitState.CLOSED


async def test_bad_requests_do_not_trip_the_breaker() -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    model = Resilient(Flaky(*[err(ErrorKind.BAD_REQUEST)] * 3), breaker=breaker)
    for _ in range(3):
        with pytest.raises(ProviderError, match="bad_request"):
            await model.complete(REQUEST)
    assert breaker.state is CircuitState.CLOSED


async def test_a_breaker_is_shared_across_wrappers() -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_after=60)
    first = Resilient(Flaky(err(ErrorKind.SERVER)), retries=0, breaker=breaker)
    second_model = Flaky()
    second = Resilient(second_model, breaker=breaker)
    with pytest.raises(ProviderError):
        await first.complete(REQUEST)
    with pytest.raises(ProviderError, match="circuit open"):
        await second.complete(REQUEST)
    assert second_model.calls == 0


# -- fallback --------------------------------------------------------------------------------

def tool_conversation() -> ModelRequest:
    call = ToolCall("call_1", "calculator", {"expression": "17 * 23"})
    return ModelRequest((Message.system("Be exact."), Message.user("17 * 23?"),
                         Message.assistant("", (call,)),
                         Message.tool("call_1", "calculator", "391")),
                        (Calculator().spec,), 256)


async def test_fallback_speaks_each_providers_native_format(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(503))
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message("391.")))
    chain = Fallback([Resilient(openai(server), retries=0), anthropic(server)])
    response = await chain.complete(tool_conversation())
    assert response.text == "391." and response.model == "claude-sonnet-4-20250514"
    first, second = server.requests
    assert first.path == OPENAI_PATH and second.path == ANTHROPIC_PATH
    assert_valid(first.body, CompletionCreateParamsNonStreaming)
    assert_valid(second.body, MessageCreateParamsNonStreaming)
    assert first.body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1",
                                          "content": "391"}
    assert first.body["max_completion_tokens"] == 256
    assert second.body["system"] == "Be exact." and second.body["max_tokens"] == 256
    assert second.body["messages"][-2:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1",
                                           "name": "calculator",
                                           "input": {"expression": "17 * 23"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                      "content": "391"}]}]


async def test_fallback_reports_every_failure() -> None:
    chain = Fallback([Flaky(err(ErrorKind.SERVER)), Flaky(err(ErrorKind.AUTH))])
    with pytest.raises(ProviderError, match=r"all 2 models failed — flaky: server: scripted; "
                                            r"flaky: auth: scripted") as caught:
        await chain.complete(REQUEST)
    assert caught.value.kind is ErrorKind.AUTH


async def test_agent_on_a_fallback_chain_finishes_on_the_second_provider(
        server: FakeLLMServer) -> None:
    def route(rec: Recorded) -> Reply:
        if rec.path == OPENAI_PATH:
            return fail(503)
        last = rec.body["messages"][-1]["content"]
        if any(b["type"] == "tool_result" for b in last):
            return Reply(body=anthropic_message("17 * 23 = 391"))
        return Reply(body=anthropic_message(None, [("toolu_1", "calculator",
                                                    {"expression": "17 * 23"})]))

    server.responder = route
    chain = Fallback([Resilient(openai(server), retries=1, backoff=NO_WAIT), anthropic(server)])
    agent = Agent(model=chain, reasoning=ReAct(), tools=[Calculator()])
    result = await agent.arun("17 * 23?", budget=Budget(max_cost_usd=Decimal("0.10")))
    assert result.answer == "17 * 23 = 391" and result.stop_reason == "finished"
    assert [r.path for r in server.requests] == [OPENAI_PATH, OPENAI_PATH, ANTHROPIC_PATH] * 2
    # charged at the dearest member's price, so never under-charged
    assert chain.price is not None and result.spend.cost_usd == chain.price.cost(result.usage)


def test_wrapper_price_and_estimate_cover_every_member() -> None:
    cheap = ScriptedModel(["x"], price=Price(Decimal("0.1"), Decimal("0.4"), Decimal("0.05")))
    dear = ScriptedModel(["x"], price=Price(Decimal("3"), Decimal("15"), Decimal("0.3")))
    chain = Fallback([cheap, Resilient(dear)])
    assert chain.price == Price(Decimal("3"), Decimal("15"), Decimal("0.3"), Decimal("3"))
    assert Fallback([cheap, ScriptedModel(["x"], price=None)]).price is None
    openai_model = OpenAIModel(api_key="k", env_file=None)
    anthropic_model = AnthropicModel(api_key="k", env_file=None)
    both = Fallback([openai_model, anthropic_model])
    message = Message.assistant("", (ToolCall("id", "calculator", {"expression": "1"}),))
    assert both.estimate_message_tokens(message) == max(
        openai_model.estimate_message_tokens(message),
        anthropic_model.estimate_message_tokens(message))
    assert both.name == "fallback(openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest)"
    assert Resilient(openai_model).name == "resilient(openai:gpt-4o-mini)"
    assert Resilient(openai_model).price == openai_model.price


def test_fallback_needs_models() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Fallback([])
    with pytest.raises(TypeError, match="not a tether Model"):
        Fallback([object()])  # type: ignore[list-item]


# -- streams ---------------------------------------------------------------------------------

async def collect(stream: AsyncIterator[str | ModelResponse]) -> list[str | ModelResponse]:
    return [item async for item in stream]


async def test_a_stream_is_retried_before_its_first_item(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(500), Reply(events=openai_stream(["a", "b"])))
    items = await collect(Resilient(openai(server), backoff=NO_WAIT).stream(REQUEST))
    assert items[:2] == ["a", "b"] and isinstance(items[2], ModelResponse)
    assert len(server.requests) == 2


async def test_a_stream_is_not_retried_after_its_first_item(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(events=openai_stream(["a", "b"]), cut_after=2),
                 Reply(events=openai_stream(["x"])))
    seen: list[object] = []
    with pytest.raises(ProviderError, match="stream ended"):
        async for item in Resilient(openai(server), backoff=NO_WAIT).stream(REQUEST):
            seen.append(item)
    assert seen == ["a"] and len(server.requests) == 1


async def test_a_fallback_stream_moves_on_before_its_first_item(server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, fail(503))
    server.queue(ANTHROPIC_PATH, Reply(events=anthropic_stream(["from ", "claude"])))
    items = await collect(Fallback([openai(server), anthropic(server)]).stream(REQUEST))
    assert items[:2] == ["from ", "claude"]
    final = items[2]
    assert isinstance(final, ModelResponse) and final.text == "from claude"


async def test_a_model_without_stream_is_streamed_through_complete() -> None:
    items = await collect(Resilient(Flaky(ModelResponse("whole"))).stream(REQUEST))
    assert items[0] == "whole" and isinstance(items[1], ModelResponse)


# -- backoff ---------------------------------------------------------------------------------

def test_backoff_grows_exponentially_to_its_cap_with_bounded_jitter() -> None:
    rng = random.Random(7)
    plain = Backoff(initial=0.5, multiplier=2, maximum=3, jitter=0)
    assert [plain.delay(n, rng) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    jittered = Backoff(initial=1, jitter=0.25)
    assert all(0.75 <= jittered.delay(1, rng) <= 1.25 for _ in range(200))
    with pytest.raises(ValueError):
        Backoff(jitter=2)


def test_resilient_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="retries"):
        Resilient(Flaky(), retries=-1)
    with pytest.raises(ValueError, match="deadline"):
        Resilient(Flaky(), deadline=0)
    with pytest.raises(ValueError, match="failure_threshold"):
        CircuitBreaker(failure_threshold=0)
    assert Resilient(Flaky(), breaker=False).breaker is None
