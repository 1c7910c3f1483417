"""Hard budgets: construction, each limit's stop, checks before the call, the wrap-up turn, the
journal's record of spend, and prices (DESIGN.md, "Budget semantics")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from tether import (
    Agent,
    Budget,
    ModelRequest,
    ModelResponse,
    Price,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    Usage,
)
from tether.models.pricing import DEFAULT_CATALOG, PriceCatalog
from tether.runtime.accounting.accountant import MIN_OUTPUT_TOKENS
from tether.runtime.record.state import fold
from tether.tools.base import ToolArgumentError, ToolContext, ToolMeta
from tether.types import ToolSpec

PRICE = Price(Decimal("1"), Decimal("2"))  # USD per million tokens: input, output


class CountingTool:
    """A cheap read-only tool that counts how often it really runs."""

    def __init__(self, name: str = "bump", delay: float = 0.0, timeout: float = 30.0) -> None:
        self.name = name
        self.meta = ToolMeta(timeout=timeout)
        self.spec = ToolSpec(name, "Record n and return a short text.", {
            "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
        })
        self.delay = delay
        self.executions: list[int] = []

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        n = arguments.get("n")
        if isinstance(n, bool) or not isinstance(n, int):
            raise ToolArgumentError("n", "must be an integer")
        return {"n": n}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        self.executions.append(arguments["n"])
        if self.delay:
            await asyncio.sleep(self.delay)
        return f"ok {arguments['n']}"


def turn_of(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "assistant")


class Recorder:
    """A ScriptedModel responder that keeps calling ``bump`` with fresh arguments while tools are
    offered, and answers ``final`` when they are not (the wrap-up turn)."""

    def __init__(self, calls_per_turn: int = 1, output_tokens: int = 0,
                 final: str = "wrapped up") -> None:
        self.requests: list[ModelRequest] = []
        self.calls_per_turn = calls_per_turn
        self.output_tokens = output_tokens
        self.final = final

    def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        usage = Usage(output_tokens=self.output_tokens)
        if len(self.requests) > 60:  # no budget stopped the loop: end it so the test fails
            return ModelResponse("runaway")
        if not request.tools:
            return ModelResponse(self.final, usage=usage)
        turn = turn_of(request)
        calls = tuple(ToolCall("", "bump", {"n": turn * 100 + i})
                      for i in range(self.calls_per_turn))
        return ModelResponse("working", calls, usage=usage)


def looping_agent(recorder: Recorder, tool: CountingTool | None = None,
                  price: Price | None = PRICE) -> Agent:
    return Agent(model=ScriptedModel(recorder, price=price), reasoning=ReAct(),
                 tools=[tool or CountingTool()])


def assert_within(spend: Any, budget: Budget) -> None:
    if budget.max_tokens is not None:
        assert spend.tokens <= budget.max_tokens
    if budget.max_cost_usd is not None:
        assert spend.cost_usd <= budget.max_cost_usd
    if budget.max_steps is not None:
        assert spend.steps <= budget.max_steps
    if budget.max_tool_calls is not None:
        assert spend.tool_calls <= budget.max_tool_calls


async def guard(run: Any) -> Any:
    """Fail, rather than hang, when a time budget does not end the run."""
    return await asyncio.wait_for(run, 5)


def events_of(session: Any, type: str) -> list[Any]:
    return [e for e in session.replay() if e.type == type]


# -- construction --------------------------------------------------------------------------------

INT_FIELDS = ("max_tokens", "max_steps", "max_tool_calls")


@pytest.mark.parametrize("field", INT_FIELDS)
@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), True, False, 1.5, 10.0, "10",
                                   Decimal(10), [1]])
def test_int_limits_reject_bad_values(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"Budget.{field}"):
        Budget(**{field: value})


@pytest.mark.parametrize("field", INT_FIELDS)
def test_int_limits_accept_whole_numbers(field: str) -> None:
    assert getattr(Budget(**{field: 0}), field) == 0
    assert getattr(Budget(**{field: 7}), field) == 7
    assert getattr(Budget(), field) is None


@pytest.mark.parametrize("value", [-1, Decimal("-0.01"), "-3", float("nan"), float("inf"),
                                   float("-inf"), Decimal("NaN"), Decimal("sNaN"),
                                   Decimal("Infinity"), "inf", "nan", True, False, "abc", "",
                                   [1], object()])
def test_cost_limit_rejects_bad_values(value: Any) -> None:
    with pytest.raises(ValueError, match=r"Budget\.max_cost_usd"):
        Budget(max_cost_usd=value)


@pytest.mark.parametrize(("value", "expected"), [
    (Decimal("0.50"), Decimal("0.50")), (2, Decimal(2)), ("0.125", Decimal("0.125")),
    (0, Decimal(0)), ("1e-3", Decimal("0.001")),
])
def test_cost_limit_becomes_decimal(value: Any, expected: Decimal) -> None:
    cost = Budget(max_cost_usd=value).max_cost_usd
    assert isinstance(cost, Decimal)
    assert cost == expected


@pytest.mark.parametrize("value", [-0.5, -1, float("nan"), float("inf"), True, "1", Decimal(1)])
def test_seconds_limit_rejects_bad_values(value: Any) -> None:
    with pytest.raises(ValueError, match=r"Budget\.max_seconds"):
        Budget(max_seconds=value)


def test_seconds_limit_accepts_numbers() -> None:
    assert Budget(max_seconds=0).max_seconds == 0
    assert Budget(max_seconds=2.5).max_seconds == 2.5


@pytest.mark.parametrize("share", [-0.1, 1, 1.0, 1.5, float("nan"), float("inf"), True, "0.1",
                                   None])
def test_final_turn_share_out_of_range(share: Any) -> None:
    with pytest.raises(ValueError, match="final_turn_share"):
        Budget(final_turn_share=share)


def test_final_turn_share_in_range() -> None:
    assert Budget(final_turn_share=0).final_turn_share == 0
    assert Budget(final_turn_share=0.99).final_turn_share == 0.99


def test_budget_to_dict_is_plain() -> None:
    budget = Budget(max_tokens=5, max_cost_usd="0.25", max_steps=3, max_tool_calls=2,
                    max_seconds=1.5)
    assert budget.to_dict() == {"max_tokens": 5, "max_cost_usd": "0.25", "max_steps": 3,
                                "max_tool_calls": 2, "max_seconds": 1.5, "final_turn_share": 0.1}
    assert Budget.from_dict(budget.to_dict()) == budget


# -- each limit stops the run with its reason ---------------------------------------------------


def test_step_budget() -> None:
    recorder = Recorder()
    tool = CountingTool()
    budget = Budget(max_steps=3)
    result = looping_agent(recorder, tool).run("loop", budget=budget)
    assert result.stop_reason is StopReason.STEP_BUDGET
    assert result.spend.steps == 3
    assert len(recorder.requests) == 3  # two turns with tools, then the wrap-up turn
    assert [bool(r.tools) for r in recorder.requests] == [True, True, False]
    assert tool.executions == [0, 100]
    assert result.answer == "wrapped up"


def test_token_budget() -> None:
    recorder = Recorder(output_tokens=40)
    budget = Budget(max_tokens=700, final_turn_share=0.4)
    result = looping_agent(recorder).run("loop", budget=budget)
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.spend.tokens <= 700
    assert result.answer == "wrapped up"
    assert not recorder.requests[-1].tools


def test_cost_budget() -> None:
    recorder = Recorder(output_tokens=30)
    budget = Budget(max_cost_usd=Decimal("0.001"), final_turn_share=0.3)
    result = looping_agent(recorder).run("loop", budget=budget)
    assert result.stop_reason is StopReason.COST_BUDGET
    assert Decimal(0) < result.spend.cost_usd <= Decimal("0.001")
    assert result.answer == "wrapped up"
    # the charge is the model's price applied to its usage, as Decimal
    assert result.spend.cost_usd == PRICE.cost(result.spend.usage)


def test_tool_call_budget_over_several_turns() -> None:
    tool = CountingTool()
    recorder = Recorder()
    result = looping_agent(recorder, tool).run("loop", budget=Budget(max_tool_calls=2))
    assert result.stop_reason is StopReason.TOOL_CALL_BUDGET
    assert tool.executions == [0, 100]  # the third call was refused, not run
    assert result.spend.tool_calls == 2
    last_results = result.trajectory.steps[2].results
    assert [r.status for r in last_results] == ["skipped"]
    assert "tool_call_budget" in last_results[0].content
    assert result.answer == "wrapped up"


def test_tool_call_budget_within_one_turn() -> None:
    tool = CountingTool()
    recorder = Recorder(calls_per_turn=4)
    result = looping_agent(recorder, tool).run("fan out", budget=Budget(max_tool_calls=3))
    assert result.stop_reason is StopReason.TOOL_CALL_BUDGET
    assert tool.executions == [0, 1, 2]
    assert result.spend.tool_calls == 3
    statuses = {r.call_id: r.status for r in result.trajectory.steps[0].results}
    assert statuses == {"call_1_1": "ok", "call_1_2": "ok", "call_1_3": "ok",
                        "call_1_4": "skipped"}


def test_step_results_follow_call_order_when_the_budget_skips_a_call() -> None:
    recorder = Recorder(calls_per_turn=3)
    result = looping_agent(recorder).run("fan out", budget=Budget(max_tool_calls=2))
    step = result.trajectory.steps[0]
    assert [r.call_id for r in step.results] == [c.id for c in step.tool_calls]


def test_zero_tool_calls_means_none_run() -> None:
    tool = CountingTool()
    recorder = Recorder(calls_per_turn=2)
    result = looping_agent(recorder, tool).run("x", budget=Budget(max_tool_calls=0))
    assert result.stop_reason is StopReason.TOOL_CALL_BUDGET
    assert tool.executions == []
    assert result.spend.tool_calls == 0
    assert [r.status for r in result.trajectory.steps[0].results] == ["skipped", "skipped"]


def test_tool_call_budget_with_a_decorated_tool() -> None:
    from tether import tool

    runs: list[int] = []

    @tool
    def bump(n: int) -> str:
        """Record n."""
        runs.append(n)
        return str(n)

    agent = Agent(model=ScriptedModel(Recorder(), price=PRICE), reasoning=ReAct(), tools=[bump])
    result = agent.run("x", budget=Budget(max_tool_calls=1))
    assert result.stop_reason is StopReason.TOOL_CALL_BUDGET
    assert runs == [0]
    assert result.spend.tool_calls == 1


async def test_time_budget_cuts_a_slow_tool() -> None:
    tool = CountingTool(delay=30)
    recorder = Recorder()
    started = time.monotonic()
    agent = looping_agent(recorder, tool)
    result = await guard(agent.arun("slow", budget=Budget(max_seconds=0.5)))
    elapsed = time.monotonic() - started
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert elapsed < 0.5 + 0.3
    assert tool.executions == [0]
    assert [r.status for r in result.trajectory.steps[0].results] == ["timeout"]
    assert result.answer == "wrapped up"  # the wrap-up turn ran in the held-back time


class HangsWithTools(ScriptedModel):
    """Hangs on every call that offers tools; answers promptly when no tools are offered."""

    def __init__(self) -> None:
        super().__init__(lambda request: "wrapped up", price=PRICE)
        self.calls = 0
        self.cancelled = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if request.tools:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return await super().complete(request)


async def test_time_budget_cancels_a_hung_model_call() -> None:
    model = HangsWithTools()
    agent = Agent(model=model, reasoning=ReAct(), tools=[CountingTool()])
    session = agent.session("hang", budget=Budget(max_seconds=0.5))
    started = time.monotonic()
    result = await guard(session.arun())
    elapsed = time.monotonic() - started
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert elapsed < 0.5 + 0.3
    assert model.cancelled == 1
    assert model.calls == 2  # the hung call, then the wrap-up
    assert result.answer == "wrapped up"
    (cancelled,) = events_of(session, "model.unmetered")  # charged at its reservation
    assert "time budget ran out" in cancelled.data["error"]
    assert events_of(session, "model.error") == []


async def test_time_budget_returns_on_time_when_every_call_hangs() -> None:
    model = ScriptedModel(["never"], latency=3600, price=PRICE)
    agent = Agent(model=model, reasoning=ReAct(), tools=[CountingTool()])
    session = agent.session("hang", budget=Budget(max_seconds=0.4))
    started = time.monotonic()
    result = await guard(session.arun())
    elapsed = time.monotonic() - started
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert elapsed < 0.4 + 0.3
    assert result.answer == ""  # the model said nothing; tether's words are the notice
    assert result.notice.startswith("[tether] The run stopped before an answer")
    assert "time_budget" in result.notice and not result.ok
    # both cancelled calls (the hung one and the wrap-up) are charged what was reserved for them
    reserved = sum(e.data["reserved_input"] for e in events_of(session, "model.request"))
    assert result.spend.tokens == reserved > 0


async def test_time_budget_checked_before_a_model_call() -> None:
    # the first call blocks (no await, so nothing can cancel it) past the normal deadline but
    # inside the wrap-up's; the next call with tools must be refused before it is made
    recorder = Recorder()

    def slow_first(request: ModelRequest) -> ModelResponse:
        if not recorder.requests:
            time.sleep(0.3)
        return recorder(request)

    agent = Agent(model=ScriptedModel(slow_first, price=PRICE), reasoning=ReAct(),
                  tools=[CountingTool()])
    session = agent.session("loop", budget=Budget(max_seconds=0.6, final_turn_share=0.5))
    started = time.monotonic()
    result = await guard(session.arun())
    elapsed = time.monotonic() - started
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert elapsed < 0.6 + 0.3
    assert [bool(r.tools) for r in recorder.requests] == [True, False]
    assert events_of(session, "model.error") == []
    assert result.answer == "wrapped up"


async def test_time_budget_stops_a_model_that_is_slower_than_the_hold() -> None:
    recorder = Recorder()
    model = ScriptedModel(recorder, latency=0.05, price=PRICE)
    agent = Agent(model=model, reasoning=ReAct(), tools=[CountingTool()])
    started = time.monotonic()
    result = await guard(agent.arun("loop", budget=Budget(max_seconds=0.4)))
    elapsed = time.monotonic() - started
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert elapsed < 0.4 + 0.3
    assert len(recorder.requests) >= 3


# -- checked before the call --------------------------------------------------------------------


def test_max_output_tokens_clamped_to_tokens_left() -> None:
    recorder = Recorder(output_tokens=120)
    budget = Budget(max_tokens=800, final_turn_share=0.25)
    hold = 200
    session = looping_agent(recorder).session("loop", budget=budget)
    result = session.run()
    responses = [e.data["response"]["usage"] for e in events_of(session, "model.response")]
    assert len(responses) == len(recorder.requests) >= 3
    used = 0
    for request, usage in zip(recorder.requests, responses, strict=True):
        left = 800 - used - (hold if request.tools else 0)
        assert request.max_output_tokens is not None
        assert request.max_output_tokens >= MIN_OUTPUT_TOKENS
        assert request.input_tokens_estimate + request.max_output_tokens <= left
        assert usage["output_tokens"] <= request.max_output_tokens
        used += usage["input_tokens"] + usage["output_tokens"]
    # the budget really bound, and the wrap-up it held room for was made
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.answer == "wrapped up" and not recorder.requests[-1].tools
    assert events_of(session, "session.wrap_up_skipped") == []
    assert result.spend.tokens == used <= 800


def test_max_output_tokens_clamped_to_cost_left() -> None:
    recorder = Recorder(output_tokens=150)
    budget = Budget(max_cost_usd=Decimal("0.0015"))
    session = looping_agent(recorder).session("loop", budget=budget)
    result = session.run()
    hold = Decimal("0.0015") * Decimal("0.1")
    spent = Decimal(0)
    responses = events_of(session, "model.response")
    assert len(responses) == len(recorder.requests) >= 3
    for request, event in zip(recorder.requests, responses, strict=True):
        left = Decimal("0.0015") - spent - (hold if request.tools else 0)
        assert request.max_output_tokens is not None
        worst = (request.input_tokens_estimate * PRICE.input
                 + request.max_output_tokens * PRICE.output) / 1_000_000
        assert worst <= left
        spent += Decimal(event.data["cost_usd"])
    # the budget really bound: an answer was cut to its clamp
    assert "length" in [e.data["response"]["finish_reason"] for e in responses]
    assert result.spend.cost_usd == spent <= Decimal("0.0015")


def test_model_call_that_cannot_fit_tokens_is_never_made() -> None:
    recorder = Recorder()
    session = looping_agent(recorder).session("x", budget=Budget(max_tokens=20))
    result = session.run()
    assert recorder.requests == []
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.spend.tokens == 0
    assert result.spend.steps == 0
    assert events_of(session, "model.request") == []
    assert "token_budget" in result.notice and result.answer == ""


def test_model_call_that_cannot_fit_cost_is_never_made() -> None:
    recorder = Recorder()
    result = looping_agent(recorder).run("x", budget=Budget(max_cost_usd=Decimal("0.00001")))
    assert recorder.requests == []
    assert result.stop_reason is StopReason.COST_BUDGET
    assert result.spend.cost_usd == 0


def test_zero_steps_means_no_model_call() -> None:
    recorder = Recorder()
    result = looping_agent(recorder).run("x", budget=Budget(max_steps=0))
    assert recorder.requests == []
    assert result.stop_reason is StopReason.STEP_BUDGET
    assert result.spend.steps == 0


def test_later_call_that_cannot_fit_is_never_made() -> None:
    # a model that always spends all but 10 of its clamp: each call is clamped so that a
    # wrap-up still fits after it; once another turn with tools would not, none is made
    requests: list[ModelRequest] = []
    used: list[int] = []

    def greedy(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        assert request.max_output_tokens is not None
        assert request.input_tokens_estimate is not None
        assert sum(used) + request.input_tokens_estimate + request.max_output_tokens <= 620
        call = ToolCall("", "bump", {"n": len(requests)})
        out = request.max_output_tokens - 10
        used.append(request.input_tokens_estimate + out)
        return ModelResponse("working", (call,), usage=Usage(output_tokens=out))

    agent = Agent(model=ScriptedModel(greedy, price=PRICE), reasoning=ReAct(),
                  tools=[CountingTool()])
    session = agent.session("x", budget=Budget(max_tokens=620))
    result = session.run()
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.spend.tokens <= 620
    assert not requests[-1].tools  # the last request was the wrap-up ...
    assert all(r.tools for r in requests[:-1])  # ... and no other call was made after it
    assert events_of(session, "session.wrap_up_skipped") == []


def test_underestimated_input_scales_the_next_reservation() -> None:
    # a provider reports twice the input the runtime estimated: the next reservation covers it
    script = [ModelResponse("a", (ToolCall("", "bump", {"n": 1}),), usage=Usage(input_tokens=0)),
              "done"]
    first_estimate: list[int] = []

    def responder(request: ModelRequest) -> ModelResponse | str:
        turn = turn_of(request)
        if turn == 0:
            assert request.input_tokens_estimate is not None
            first_estimate.append(request.input_tokens_estimate)
            return ModelResponse("a", (ToolCall("", "bump", {"n": 1}),),
                                 usage=Usage(input_tokens=2 * request.input_tokens_estimate))
        return script[turn]

    agent = Agent(model=ScriptedModel(responder, price=PRICE), reasoning=ReAct(),
                  tools=[CountingTool()])
    session = agent.session("x", budget=Budget(max_tokens=10_000))
    result = session.run()
    assert result.finished
    requests = events_of(session, "model.request")
    responses = events_of(session, "model.response")
    assert requests[0].data["reserved_input"] == first_estimate[0]
    assert responses[0].data["response"]["usage"]["input_tokens"] == 2 * first_estimate[0]
    # the second request's estimate is scaled by 2 before it is reserved
    second_estimate = responses[1].data["response"]["usage"]["input_tokens"]
    assert requests[1].data["reserved_input"] >= 2 * second_estimate


@pytest.mark.parametrize("limit", ["0.0002", "0.0031", "0.01"])
def test_reservation_prices_input_at_the_dearer_cached_price(limit: str) -> None:
    # a cached-input price above the input price (e.g. a cache-write rate given as cached_input):
    # the provider decides what is cached, so the reservation must assume the dearer price
    price = Price(Decimal(1), Decimal(1), cached_input=Decimal(100))
    script = [ModelResponse("x" * 400, usage=Usage(cached_input_tokens=10_000))]
    agent = Agent(model=ScriptedModel(script, price=price), reasoning=ReAct())
    budget = Budget(max_cost_usd=Decimal(limit), final_turn_share=0)
    result = agent.run("hi", budget=budget)
    assert result.spend.cost_usd <= budget.max_cost_usd
    if limit == "0.0002":  # the input alone may cost 30 tokens x $100/M
        assert result.stop_reason is StopReason.COST_BUDGET
        assert result.spend.steps == 0
    else:  # the answer fits, or is cut where the budget ends and the run stops on cost
        assert result.stop_reason in (StopReason.FINISHED, StopReason.COST_BUDGET)
        assert result.spend.cost_usd == price.cost(result.spend.usage)
    if limit == "0.01":
        assert result.spend.steps >= 1 and result.spend.cost_usd > 0


# -- cost budgets need a price ------------------------------------------------------------------


def test_cost_budget_on_unpriced_model_fails_closed_at_session() -> None:
    agent = Agent(model=ScriptedModel(["hi"], price=None), reasoning=ReAct())
    with pytest.raises(ValueError, match=r"price.*Agent\(price=Price"):
        agent.session("x", budget=Budget(max_cost_usd="1"))
    with pytest.raises(ValueError, match="price"):
        agent.run("x", budget=Budget(max_cost_usd=0))
    # a default budget on the agent is refused the same way
    strict = Agent(model=ScriptedModel(["hi"], price=None), reasoning=ReAct(),
                   budget=Budget(max_cost_usd="1"))
    with pytest.raises(ValueError, match="price"):
        strict.session("x")


def test_unpriced_model_without_cost_budget_runs() -> None:
    agent = Agent(model=ScriptedModel(["hi"], price=None), reasoning=ReAct())
    result = agent.run("x", budget=Budget(max_tokens=1000))
    assert result.finished
    assert result.spend.cost_usd == 0


def test_cost_budget_works_with_agent_price() -> None:
    agent = Agent(model=ScriptedModel(["hi"], price=None), reasoning=ReAct(), price=PRICE)
    session = agent.session("x", budget=Budget(max_cost_usd="1"))
    result = session.run()
    assert result.finished
    assert result.answer == "hi"
    assert result.spend.cost_usd == PRICE.cost(result.spend.usage) > 0


def test_agent_price_overrides_model_price() -> None:
    agent = Agent(model=ScriptedModel(["hi"], price=Price(Decimal(100), Decimal(100))),
                  reasoning=ReAct(), price=PRICE)
    result = agent.run("x", budget=Budget(max_cost_usd="1"))
    assert result.spend.cost_usd == PRICE.cost(result.spend.usage)


# -- the wrap-up turn ---------------------------------------------------------------------------


@pytest.mark.parametrize(("budget", "reason"), [
    (Budget(max_steps=2), StopReason.STEP_BUDGET),
    (Budget(max_tool_calls=1), StopReason.TOOL_CALL_BUDGET),
    (Budget(max_tokens=900, final_turn_share=0.3), StopReason.TOKEN_BUDGET),
    (Budget(max_cost_usd=Decimal("0.0008"), final_turn_share=0.3), StopReason.COST_BUDGET),
])
def test_wrap_up_turn_after_a_budget_stop(budget: Budget, reason: StopReason) -> None:
    recorder = Recorder(output_tokens=40, final="partial answer: missing the rest")
    session = looping_agent(recorder).session("loop", budget=budget)
    result = session.run()
    assert result.stop_reason is reason
    final = recorder.requests[-1]
    assert final.tools == ()
    assert all(r.tools for r in recorder.requests[:-1])
    note = final.messages[-1]
    assert note.role == "user"
    assert reason.value in note.content
    assert "Tools are no longer available" in note.content
    assert result.answer == "partial answer: missing the rest"
    final_requests = [e for e in events_of(session, "model.request") if e.data["final"]]
    assert len(final_requests) == 1
    assert final_requests[0].data["tools"] == []
    assert_within(result.spend, budget)
    assert result.spend.steps == len(recorder.requests)  # the wrap-up is counted


def test_wrap_up_drops_tool_calls() -> None:
    # a model that answers the wrap-up with a tool call anyway: the call is not run
    tool = CountingTool()

    def responder(request: ModelRequest) -> ModelResponse:
        if turn_of(request) > 60:  # no budget stopped the loop: end it so the test fails
            return ModelResponse("runaway")
        return ModelResponse("still trying", (ToolCall("", "bump", {"n": turn_of(request)}),))

    agent = Agent(model=ScriptedModel(responder, price=PRICE), reasoning=ReAct(), tools=[tool])
    result = agent.run("x", budget=Budget(max_steps=2))
    assert result.stop_reason is StopReason.STEP_BUDGET
    assert result.answer == "still trying"
    assert tool.executions == [0]


@pytest.mark.parametrize(("budget", "reason"), [
    (Budget(max_steps=0), StopReason.STEP_BUDGET),
    (Budget(max_tokens=30), StopReason.TOKEN_BUDGET),
    (Budget(max_cost_usd=Decimal("0.00002")), StopReason.COST_BUDGET),
])
def test_wrap_up_that_cannot_fit(budget: Budget, reason: StopReason) -> None:
    recorder = Recorder(output_tokens=5000)
    session = looping_agent(recorder).session("loop", budget=budget)
    result = session.run()
    assert result.stop_reason is reason
    assert result.answer == ""
    assert result.notice.startswith("[tether] The run stopped before an answer")
    assert reason.value in result.notice
    assert all(r.tools for r in recorder.requests)  # no wrap-up request was sent
    skipped = events_of(session, "session.wrap_up_skipped")
    assert len(skipped) == 1
    assert_within(result.spend, budget)


def test_wrap_up_uses_the_held_back_share() -> None:
    # share 0.5: normal turns may use only half; the wrap-up may use the rest
    recorder = Recorder(output_tokens=60)
    budget = Budget(max_tokens=1000, final_turn_share=0.5)
    session = looping_agent(recorder).session("loop", budget=budget)
    result = session.run()
    responses = events_of(session, "model.response")
    before_final = sum(e.data["response"]["usage"]["input_tokens"]
                       + e.data["response"]["usage"]["output_tokens"] for e in responses[:-1])
    assert before_final <= 500
    assert result.answer == "wrapped up"
    assert 500 < result.spend.tokens <= 1000


# -- the journal --------------------------------------------------------------------------------


def test_journal_records_costs_and_fold_reproduces_the_tally() -> None:
    recorder = Recorder(calls_per_turn=2, output_tokens=25)
    budget = Budget(max_cost_usd=Decimal("0.002"), max_tool_calls=5, max_steps=10)
    session = looping_agent(recorder).session("loop", budget=budget)
    result = session.run()
    assert result.stop_reason is StopReason.TOOL_CALL_BUDGET

    responses = events_of(session, "model.response")
    assert len(responses) == result.spend.steps
    total = Decimal(0)
    for event in responses:
        usage = Usage(**event.data["response"]["usage"])
        cost = Decimal(event.data["cost_usd"])
        assert cost == PRICE.cost(usage) > 0
        total += cost
    assert total == result.spend.cost_usd

    (end,) = events_of(session, "session.end")
    assert end.data["spend"] == result.spend.to_dict()
    assert end.data["reason"] == "tool_call_budget"
    assert Decimal(end.data["spend"]["cost_usd"]) == result.spend.cost_usd

    state = fold(session.replay())
    assert state.tally.steps == result.spend.steps
    assert state.tally.tool_calls == result.spend.tool_calls == 5
    assert state.tally.usage == result.spend.usage == result.usage
    assert state.tally.cost == result.spend.cost_usd
    assert state.stop_reason is StopReason.TOOL_CALL_BUDGET
    assert state.answer == result.answer
    assert session.verify() is None


def test_fold_reproduces_the_tally_after_a_model_error() -> None:
    # a model error counts a step; the fold must agree
    agent = Agent(model=ScriptedModel([ModelResponse("a", (ToolCall("", "bump", {"n": 1}),))],
                                      price=PRICE),
                  reasoning=ReAct(), tools=[CountingTool()])
    session = agent.session("x", budget=Budget(max_steps=5))
    result = session.run()
    assert result.stop_reason is StopReason.MODEL_ERROR
    state = fold(session.replay())
    assert state.tally.steps == result.spend.steps == 2
    assert state.tally.usage == result.spend.usage
    assert state.tally.cost == result.spend.cost_usd


# -- pricing ------------------------------------------------------------------------------------


def test_price_cost_with_cached_input() -> None:
    price = Price(Decimal("2.50"), Decimal("10.00"), Decimal("1.25"))
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=400_000)
    assert price.cost(usage) == Decimal("12")  # 0.6M*2.5 + 0.4M*1.25 + 1M*10
    assert isinstance(price.cost(usage), Decimal)
    assert price.cost(Usage(1000, 0, 0)) == Decimal("0.0025")


def test_price_cached_defaults_to_input_price() -> None:
    price = Price(Decimal("3"), Decimal("15"))
    assert price.cost(Usage(1_000_000, 0, 1_000_000)) == Decimal(3)


def test_price_cached_tokens_capped_at_input() -> None:
    price = Price(Decimal("2"), Decimal("0"), Decimal("1"))
    assert price.cost(Usage(100, 0, 500)) == Decimal(100) / 1_000_000


def test_price_converts_and_validates() -> None:
    price = Price(1, "0.5")  # type: ignore[arg-type]
    assert price.input == Decimal(1) and price.output == Decimal("0.5")
    with pytest.raises(ValueError, match=r"Price\.output"):
        Price(Decimal(1), Decimal(-1))
    with pytest.raises(ValueError, match=r"Price\.input"):
        Price(Decimal("NaN"), Decimal(1))


@pytest.mark.parametrize(("name", "base"), [
    ("gpt-4o-mini", "gpt-4o-mini"),
    ("gpt-4o", "gpt-4o"),
    ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
    ("chatgpt-4o-latest", "gpt-4o"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
    ("openai:gpt-4o-mini", "gpt-4o-mini"),
    ("anthropic:claude-3-5-haiku-20241022", "claude-3-5-haiku"),
])
def test_catalog_lookup(name: str, base: str) -> None:
    price = DEFAULT_CATALOG.lookup(name)
    assert price is not None
    assert price == DEFAULT_CATALOG.lookup(base)


def test_catalog_distinguishes_similar_names() -> None:
    mini = DEFAULT_CATALOG.lookup("gpt-4o-mini-2024-07-18")
    assert mini == Price(Decimal("0.15"), Decimal("0.60"), Decimal("0.075"))
    assert mini != DEFAULT_CATALOG.lookup("gpt-4o")


@pytest.mark.parametrize("name", ["llama-3-70b", "unknown-model-2024-01-01", "gpt-5", "",
                                  "openai:", "mistral:large"])
def test_catalog_unknown_is_none(name: str) -> None:
    assert DEFAULT_CATALOG.lookup(name) is None


def test_catalog_rejects_dangling_alias() -> None:
    with pytest.raises(ValueError, match="unknown model"):
        PriceCatalog({"a": PRICE}, aliases={"b": "c"})
