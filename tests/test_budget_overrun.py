"""Budgets stay hard when a model or server does not keep to the request.

A provider that keeps to the request (output within the cap sent, input within the estimate)
never takes spend past a limit. One that does not is an *overrun*: the run stops at once with
that limit's reason (never ``finished``), the overrun is journaled (reserved vs reported), the
estimate is recalibrated, and streamed output far past the cap is cut off by the adapter."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from fake_llm_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    FakeLLMServer,
    Reply,
    anthropic_stream,
    openai_stream,
)
from tether import (
    Agent,
    AgentAsTool,
    Budget,
    Message,
    ModelRequest,
    ModelResponse,
    Price,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    Usage,
    tool,
)
from tether.models import AnthropicModel, OpenAIModel
from tether.runtime.accounting.budget import Spend
from tether.tools.base import ToolContext

PRICE = Price(Decimal("1"), Decimal("2"))


class IgnoresTheCap(ScriptedModel):
    """Answers with ``output`` tokens whatever ``max_output_tokens`` says, reporting ``input``
    tokens (0: the runtime's own estimate)."""

    def __init__(self, output: int, input: int = 0, **kwargs: Any) -> None:
        super().__init__(["x"], when_exhausted="x", **kwargs)
        self.output, self.input = output, input
        self.caps: list[int | None] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.caps.append(request.max_output_tokens)
        reported = self.input or request.input_tokens_estimate or 0
        return ModelResponse("y" * self.output * 4, (), Usage(reported, self.output), "liar",
                             "stop")


def _events(session: Any, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in session.replay() if e.type == kind]


def test_output_past_the_cap_stops_the_run_with_the_token_limit() -> None:
    model = IgnoresTheCap(output=4046)
    agent = Agent(model=model, reasoning=ReAct())
    session = agent.session("write a lot", budget=Budget(max_tokens=800))
    result = session.run()
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    (overrun,) = _events(session, "model.overrun")
    assert overrun["limit"] == "token_budget"
    assert overrun["reported"]["output_tokens"] == 4046
    assert overrun["reserved"]["output_tokens"] == model.caps[0] < 800
    assert len(model.caps) == 1  # no wrap-up fits after an overrun this size
    assert _events(session, "session.wrap_up_skipped")


def test_after_an_overrun_there_is_no_wrap_up_call_even_when_one_would_fit() -> None:
    """A model that just ignored the cap it was sent could ignore the wrap-up's cap too (seen
    with llama.cpp's server, which ignores max_completion_tokens): the run ends without one."""
    budget = Budget(max_tokens=4000)
    honest = IgnoresTheCap(output=1)
    Agent(model=honest, reasoning=ReAct()).run("write a lot", budget=budget)
    model = IgnoresTheCap(output=honest.caps[0] + 5)  # just past the cap it is sent
    session = Agent(model=model, reasoning=ReAct()).session("write a lot", budget=budget)
    result = session.run()
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert len(model.caps) == 1  # the overrun, and no call after it
    (skipped,) = _events(session, "session.wrap_up_skipped")
    assert "past the output cap" in skipped["detail"]


def test_input_past_the_estimate_stops_the_run_when_it_passes_the_reservation() -> None:
    model = IgnoresTheCap(output=5, input=3000)
    agent = Agent(model=model, reasoning=ReAct())
    session = agent.session("hi", budget=Budget(max_tokens=800))
    result = session.run()
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    (overrun,) = _events(session, "model.overrun")
    assert overrun["reported"]["input_tokens"] == 3000
    assert overrun["reserved"]["input_tokens"] < 100


def test_input_past_the_estimate_within_the_reservation_recalibrates_later_calls() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    class Undercounted(ScriptedModel):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            response = await super().complete(request)
            u = response.usage
            return replace(response, usage=Usage(u.input_tokens * 3, u.output_tokens))

    model = Undercounted([ModelResponse(tool_calls=(ToolCall("c1", "ping", {}),)), "done"])
    session = Agent(model=model, reasoning=ReAct(), tools=[ping]).session(
        "hi", budget=Budget(max_tokens=20_000))
    assert session.run().stop_reason is StopReason.FINISHED
    assert _events(session, "model.overrun") == []
    first, second = _events(session, "model.request")
    (response, _) = _events(session, "model.response")
    assert response["response"]["usage"]["input_tokens"] == 3 * first["reserved_input"]
    # the second call is reserved at the observed ratio: three times the plain estimate
    assert second["reserved_input"] >= 3 * first["reserved_input"]


def test_a_cost_overrun_stops_the_run_with_the_cost_limit() -> None:
    model = IgnoresTheCap(output=50_000, price=PRICE)
    agent = Agent(model=model, reasoning=ReAct())
    session = agent.session("hi", budget=Budget(max_cost_usd=Decimal("0.01")))
    result = session.run()
    assert result.stop_reason is StopReason.COST_BUDGET
    (overrun,) = _events(session, "model.overrun")
    assert overrun["limit"] == "cost_budget"
    assert Decimal(overrun["reported"]["cost_usd"]) > Decimal(overrun["reserved"]["cost_usd"])


def test_an_honest_model_never_overruns() -> None:
    agent = Agent(model=ScriptedModel(["z" * 40_000]), reasoning=ReAct())
    session = agent.session("hi", budget=Budget(max_tokens=800))
    result = session.run()
    assert _events(session, "model.overrun") == []
    assert result.spend.tokens <= 800


@pytest.mark.parametrize("usage", [Usage(-5, 10), Usage(10, -1), Usage(10, 10, -3),
                                   Usage(10, 1.5), Usage(math.nan, 1),  # type: ignore[arg-type]
                                   Usage(True, 1)])  # type: ignore[arg-type]
def test_unusable_usage_is_a_model_error_charged_at_the_reservation(usage: Usage) -> None:
    class Weird(ScriptedModel):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse("answer", (), usage, "weird", "stop")

    agent = Agent(model=Weird(["x"]), reasoning=ReAct(), price=PRICE)
    session = agent.session("hi", budget=Budget(max_tokens=1000, max_cost_usd=Decimal("1")))
    result = session.run()
    assert result.stop_reason is StopReason.MODEL_ERROR
    (request,) = _events(session, "model.request")
    (unmetered,) = _events(session, "model.unmetered")
    assert "unusable usage" in unmetered["error"]
    assert result.spend.tokens == request["reserved_input"] + request["max_output_tokens"]
    assert result.spend.cost_usd == Decimal(request["reserved_cost_usd"]) > 0
    assert result.spend.tokens >= 0


def test_a_negative_charge_is_refused() -> None:
    seen: list[str] = []

    @tool
    def refund_budget(ctx: ToolContext) -> str:
        """Tries to give spend back."""
        assert ctx.charge is not None
        try:
            ctx.charge(Spend(Usage(-1000, -1000), Decimal("-5"), -3, -2))
        except ValueError as exc:
            seen.append(str(exc))
            raise
        return "refunded"

    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "refund_budget", {}),)),
                           "done"], price=PRICE)
    agent = Agent(model=model, reasoning=ReAct(), tools=[refund_budget])
    result = agent.run("go", budget=Budget(max_cost_usd=Decimal("1")))
    assert seen and "non-negative" in seen[0]
    assert result.spend.tokens > 0 and result.spend.cost_usd >= 0 and result.spend.steps == 2


async def test_a_call_cancelled_by_the_time_budget_is_charged_its_reservation() -> None:
    model = ScriptedModel(["never"], latency=3600, price=PRICE)
    agent = Agent(model=model, reasoning=ReAct())
    session = agent.session("hang", budget=Budget(max_seconds=0.3, max_tokens=2000))
    result = await asyncio.wait_for(session.arun(), 5)
    assert result.stop_reason is StopReason.TIME_BUDGET
    requests = _events(session, "model.request")
    charged = _events(session, "model.unmetered")
    assert len(charged) >= 1
    first = requests[0]
    assert charged[0]["input_tokens"] == first["reserved_input"]
    assert charged[0]["output_tokens"] == first["max_output_tokens"]
    assert result.spend.tokens >= first["reserved_input"] + first["max_output_tokens"]
    assert result.spend.tokens <= 2000


def test_a_sub_agent_that_overruns_stops_itself_and_its_spend_is_the_callers() -> None:
    child = Agent(model=IgnoresTheCap(output=3000), reasoning=ReAct(), name="child")
    helper = AgentAsTool(child, name="helper", description="Delegate a task.")
    parent_model = ScriptedModel([ModelResponse(tool_calls=(
        ToolCall("c1", "helper", {"task": "write"}),)), "done"])
    agent = Agent(model=parent_model, reasoning=ReAct(), tools=[helper])
    session = agent.session("delegate", budget=Budget(max_tokens=10_000))
    result = session.run()
    (charge,) = _events(session, "subagent.charge")
    assert charge["output_tokens"] == 3000
    assert result.spend.tokens >= 3000


# -- adapters: a stream far past its cap is cut off ---------------------------------------------

@pytest.fixture
def server() -> Any:
    with FakeLLMServer() as s:
        yield s


def _request(cap: int) -> ModelRequest:
    return ModelRequest((Message.system("Be brief."), Message.user("go")), (), cap, 20)


async def test_openai_stream_past_the_cap_is_cut_off(server: FakeLLMServer) -> None:
    chunks = ["word " * 20] * 400  # ~40,000 characters against a cap of 50 tokens
    server.queue(OPENAI_PATH, Reply(events=openai_stream(chunks, usage=(20, 10_000, 0))))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=server.url + "/v1",
                        env_file=None)
    items = [i async for i in model.stream(_request(50))]
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish_reason == "length"
    assert len(items) - 1 < 10  # stopped reading after a few chunks
    assert response.usage.output_tokens > 50  # the estimate of what arrived: an overrun


async def test_anthropic_stream_past_the_cap_is_cut_off(server: FakeLLMServer) -> None:
    chunks = ["word " * 20] * 400
    server.queue(ANTHROPIC_PATH, Reply(events=anthropic_stream(chunks, usage=(20, 10_000, 0, 0))))
    model = AnthropicModel("claude-sonnet-4-20250514", api_key="sk-ant-test",
                           base_url=server.url, env_file=None)
    items = [i async for i in model.stream(_request(50))]
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish_reason == "length"
    assert len(items) - 1 < 10
    assert response.usage.output_tokens > 50


async def test_an_honest_stream_is_never_cut(server: FakeLLMServer) -> None:
    chunks = ["word " * 10] * 4  # 200 characters: ~50 tokens, within a cap of 60
    server.queue(OPENAI_PATH, Reply(events=openai_stream(chunks, usage=(20, 50, 0))))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=server.url + "/v1",
                        env_file=None)
    items = [i async for i in model.stream(_request(60))]
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.text == "".join(chunks)
    assert response.usage.output_tokens == 50


def test_the_openai_adapter_passes_bogus_usage_on_for_the_runtime_to_refuse() -> None:
    from tether.models.openai_format import usage_of

    class Raw:
        prompt_tokens, completion_tokens, prompt_tokens_details = -4, 2.5, None

    class Missing:
        prompt_tokens, completion_tokens, prompt_tokens_details = None, 7, None

    usage = usage_of(Raw(), Usage(10, 10))  # type: ignore[arg-type]
    assert (usage.input_tokens, usage.output_tokens) == (-4, 2.5)
    assert usage_of(Missing(), Usage(10, 10)).input_tokens == 10  # type: ignore[arg-type]
