"""Property: spend never exceeds any limit, for any script of model responses and tool results
(DESIGN.md, "Budget semantics", point 4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, target
from hypothesis import strategies as st

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
from tether.runtime.record.state import fold
from tether.tools.base import ToolArgumentError, ToolContext, ToolMeta
from tether.types import ToolSpec


class CheapTool:
    """A read-only tool that counts its executions and returns ``pad`` characters."""

    name = "cheap"
    meta = ToolMeta()
    spec = ToolSpec("cheap", "Return pad characters.", {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "pad": {"type": "integer"}},
        "required": ["n"],
    })

    def __init__(self) -> None:
        self.executions = 0

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("n", "pad"):
            value = arguments.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ToolArgumentError(key, "must be an integer")
            out[key] = value
        return out

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        self.executions += 1
        return "r" * arguments["pad"] or f"n={arguments['n']}"


DECIMALS = st.sampled_from([Decimal(s) for s in ("0", "0.1", "0.5", "1", "2", "3", "15")])

calls = st.lists(
    st.builds(lambda name, n, pad: ToolCall("", name, {"n": n, "pad": pad}),
              name=st.sampled_from(["cheap", "cheap", "cheap", "missing"]),
              n=st.integers(0, 3), pad=st.integers(0, 400)),
    max_size=3,
)

responses = st.builds(
    lambda text, out, cached, tool_calls: ModelResponse(
        text, tuple(tool_calls), Usage(output_tokens=out, cached_input_tokens=cached)),
    text=st.integers(0, 600).map(lambda n: "t" * n),
    out=st.one_of(st.just(0), st.integers(1, 2000)),
    cached=st.integers(0, 300),
    tool_calls=calls,
)


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    def maybe(strategy: st.SearchStrategy[Any]) -> Any:
        return draw(st.one_of(st.none(), strategy))

    return Budget(
        max_tokens=maybe(st.integers(0, 2500)),
        max_cost_usd=maybe(st.integers(0, 4000).map(lambda n: Decimal(n) / 1_000_000)),
        max_steps=maybe(st.integers(0, 8)),
        max_tool_calls=maybe(st.integers(0, 6)),
        max_seconds=maybe(st.just(60.0)),
        final_turn_share=draw(st.sampled_from([0, 0.1, 0.3, 0.5])),
    )


prices = st.builds(Price, DECIMALS, DECIMALS, st.one_of(st.none(), DECIMALS))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(responses, min_size=1, max_size=8), budget=budgets(), price=prices,
       show_budget=st.booleans(), exhausted=st.sampled_from([None, "done"]))
def test_spend_never_exceeds_any_limit(script: list[ModelResponse], budget: Budget, price: Price,
                                       show_budget: bool, exhausted: str | None) -> None:
    tool = CheapTool()
    model = ScriptedModel(script, price=price, when_exhausted=exhausted)
    agent = Agent(model=model, reasoning=ReAct(), tools=[tool], show_budget=show_budget)
    session = agent.session("Use the cheap tool, then answer.", budget=budget)
    result = session.run()
    spend = result.spend

    # steer generation towards runs that spend close to their limits
    if budget.max_tokens:
        target(spend.tokens / budget.max_tokens, label="tokens")
    if budget.max_cost_usd:
        target(float(spend.cost_usd / budget.max_cost_usd), label="cost")

    if budget.max_tokens is not None:
        assert spend.tokens <= budget.max_tokens
    if budget.max_cost_usd is not None:
        assert spend.cost_usd <= budget.max_cost_usd
    if budget.max_steps is not None:
        assert spend.steps <= budget.max_steps
    if budget.max_tool_calls is not None:
        assert spend.tool_calls <= budget.max_tool_calls
        assert tool.executions <= budget.max_tool_calls
    assert tool.executions <= spend.tool_calls

    # the charge is the price applied to the usage; the journal reproduces the live tally
    assert spend.cost_usd == sum((Decimal(e.data["cost_usd"]) for e in session.replay()
                                  if e.type == "model.response"), Decimal(0))
    tally = fold(session.replay()).tally
    assert (tally.steps, tally.tool_calls, tally.usage, tally.cost) == (
        spend.steps, spend.tool_calls, spend.usage, spend.cost_usd)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(responses, min_size=1, max_size=8), budget=budgets(), price=prices)
@example(  # issue 30: a repeated call's loop warning overflowed results cut to their floor
    script=[ModelResponse("", tuple(ToolCall("", "cheap", {"n": 0, "pad": pad})
                                    for pad in (0, 0, 1)), Usage(output_tokens=1))],
    budget=Budget(max_cost_usd=Decimal("0.000572"), final_turn_share=0),
    price=Price(Decimal(2), Decimal(0)))
def test_a_budget_stop_after_work_always_gets_its_wrap_up_turn(
        script: list[ModelResponse], budget: Budget, price: Price) -> None:
    """DESIGN, budget point 5: the wrap-up's cost was held back inside the budget — each normal
    call leaves room for it, and tool results are cut to keep that room."""
    model = ScriptedModel(script, price=price, when_exhausted="done")
    agent = Agent(model=model, reasoning=ReAct(), tools=[CheapTool()])
    session = agent.session("Use the cheap tool, then answer.", budget=budget)
    result = session.run()
    events = session.replay()
    normal_turns = [e for e in events if e.type == "model.request" and not e.data["final"]]
    if result.stop_reason in (StopReason.TOKEN_BUDGET, StopReason.COST_BUDGET) and normal_turns:
        assert [e for e in events if e.type == "session.wrap_up_skipped"] == []
        assert next(e for e in reversed(events) if e.type == "model.request").data["final"]


money = st.decimals(min_value=0, max_value=1000, places=9, allow_nan=False, allow_infinity=False)
per_million = st.decimals(min_value=0, max_value=100, places=6, allow_nan=False,
                          allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(limit=money, spent=money, p_in=per_million, p_out=per_million,
       input_tokens=st.integers(0, 2_000_000), output_tokens=st.integers(0, 2_000_000),
       final=st.booleans(), share=st.sampled_from([0.0, 0.1, 0.5]))
def test_the_quick_affordability_check_never_admits_what_the_exact_count_refuses(
        limit: Decimal, spent: Decimal, p_in: Decimal, p_out: Decimal, input_tokens: int,
        output_tokens: int, final: bool, share: float) -> None:
    from tether.runtime.accounting.accountant import Accountant, Tally

    accountant = Accountant(Budget(max_cost_usd=limit, final_turn_share=share),
                            Price(p_in, p_out), Tally())
    left = limit - spent
    if accountant._plainly_affords(left, input_tokens, output_tokens, final):
        assert accountant._affordable_output(left, input_tokens, final) >= output_tokens


class Dishonest(ScriptedModel):
    """Ignores the output cap it is sent, and reports input ``factor`` times the estimate."""

    def __init__(self, script: list[ModelResponse], factors: list[int], **kwargs: Any) -> None:
        super().__init__(script, **kwargs)
        self.factors = factors

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        response = await super().complete(replace(request, max_output_tokens=None))
        factor = self.factors[turn % len(self.factors)]
        u = response.usage
        return replace(response, usage=Usage(u.input_tokens * factor, u.output_tokens,
                                             u.cached_input_tokens))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(responses, min_size=1, max_size=8), budget=budgets(), price=prices,
       factors=st.lists(st.sampled_from([1, 1, 2, 10, 100]), min_size=1, max_size=4))
def test_a_dishonest_provider_is_stopped_at_its_first_overrun(
        script: list[ModelResponse], budget: Budget, price: Price, factors: list[int]) -> None:
    model = Dishonest(script, factors, price=price, when_exhausted="done")
    session = Agent(model=model, reasoning=ReAct(), tools=[CheapTool()]).session(
        "Use the cheap tool, then answer.", budget=budget)
    result = session.run()
    events = session.replay()
    overruns = [e for e in events if e.type == "model.overrun"]
    spend = result.spend
    within = ((budget.max_tokens is None or spend.tokens <= budget.max_tokens)
              and (budget.max_cost_usd is None or spend.cost_usd <= budget.max_cost_usd))
    if not overruns:  # every call it made happened to keep within what was reserved
        assert within
        return
    first = overruns[0]
    asked = next(e for e in reversed(events[:first.seq - 1]) if e.type == "model.request")
    assert result.stop_reason is not StopReason.FINISHED
    if not asked.data["final"]:  # (an overrun in the wrap-up leaves the stop that caused it)
        assert result.stop_reason.value == first.data["limit"]
    later = [e for e in events if e.seq > first.seq and e.type == "model.request"]
    assert all(e.data["final"] for e in later) and len(later) <= 1  # at most the wrap-up
    # what was spent before the overrun was within every limit, so the overrun is the only excess
    before = fold([e for e in events if e.seq < first.seq - 1]).tally
    if budget.max_tokens is not None:
        assert before.usage.total_tokens <= budget.max_tokens
    if budget.max_cost_usd is not None:
        assert before.cost <= budget.max_cost_usd


@pytest.mark.xfail(strict=True, reason="known gap (found by the property above, December 2026): "
                   "a model that reports far fewer output tokens than tether estimates its "
                   "text (16 reported for 237 characters) grows the next request past what the "
                   "call's reservation planned, so the wrap-up no longer fits; it is skipped, "
                   "journaled (session.wrap_up_skipped), and the limit holds")
def test_a_model_under_reporting_its_output_still_gets_its_wrap_up() -> None:
    script = [ModelResponse("t" * 237, (ToolCall("", "cheap", {"n": 0, "pad": 81}),),
                            Usage(output_tokens=16))]
    model = ScriptedModel(script, price=Price(Decimal(0), Decimal(0)), when_exhausted="done")
    session = Agent(model=model, reasoning=ReAct(), tools=[CheapTool()]).session(
        "Use the cheap tool, then answer.", budget=Budget(max_tokens=366, final_turn_share=0))
    result = session.run()
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.usage.total_tokens <= 366  # the limit holds either way
    assert not [e for e in session.replay() if e.type == "session.wrap_up_skipped"]
