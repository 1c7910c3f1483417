"""Prices that do not under-charge: cache writes and long-context tiers are charged, reservations
use the tier a request's input reaches, genai-prices is used when installed (the bundled table
when not), an unknown model still fails closed, and ``tether prices show`` says what is charged
and where the price came from."""

from __future__ import annotations

import sys
from decimal import Decimal

import pytest

from tether import Agent, Budget, ReAct, ScriptedModel, StopReason
from tether.cli import main
from tether.models.pricing import BUNDLED, DEFAULT_CATALOG, Price, Tier, price_for
from tether.runtime.accounting.worst_case import worst_case_cost
from tether.types import Usage

from conftest import import_or_unavailable

SONNET = Price(Decimal("3"), Decimal("15"), Decimal("0.30"), Decimal("3.75"),
               (Tier(200_000, Decimal("6"), Decimal("22.5"), Decimal("0.6"), Decimal("7.5")),))


def test_cache_writes_are_charged_at_their_own_price() -> None:
    usage = Usage(input_tokens=10_000, output_tokens=100, cached_input_tokens=2_000,
                  cache_write_tokens=5_000)
    expected = (3_000 * Decimal("3") + 2_000 * Decimal("0.30") + 5_000 * Decimal("3.75")
                + 100 * Decimal("15")) / 1_000_000
    assert SONNET.cost(usage) == expected
    flat = Price(Decimal("3"), Decimal("15"), Decimal("0.30"))
    assert flat.cost(usage) < SONNET.cost(usage)  # the old table charged writes as input


def test_a_long_context_request_is_charged_its_tier_whole() -> None:
    small, large = Usage(200_000, 1_000), Usage(200_001, 1_000)
    assert SONNET.cost(small) == (200_000 * Decimal(3) + 1_000 * Decimal(15)) / 1_000_000
    assert SONNET.cost(large) == (200_001 * Decimal(6) + 1_000 * Decimal("22.5")) / 1_000_000


def test_reservations_use_the_tier_and_the_dearest_kind_the_input_can_reach() -> None:
    assert worst_case_cost(SONNET, 1_000, 100) == (1_000 * Decimal("3.75")
                                                   + 100 * Decimal(15)) / 1_000_000
    assert worst_case_cost(SONNET, 250_000, 100) == (250_000 * Decimal("7.5")
                                                     + 100 * Decimal("22.5")) / 1_000_000
    worst = SONNET.worst()
    assert (worst.input, worst.output) == (Decimal("7.5"), Decimal("22.5"))


def test_a_budget_holds_when_every_token_is_a_cache_write() -> None:
    class Writes(ScriptedModel):
        async def complete(self, request: object) -> object:  # type: ignore[override]
            response = await super().complete(request)  # type: ignore[arg-type]
            u = response.usage
            return type(response)(response.text, response.tool_calls,
                                  Usage(u.input_tokens, u.output_tokens, 0, u.input_tokens),
                                  response.model, response.finish_reason)

    agent = Agent(model=Writes(["x" * 4000], price=SONNET), reasoning=ReAct())
    limit = Decimal("0.002")
    result = agent.run("hi", budget=Budget(max_cost_usd=limit))
    assert result.spend.cost_usd <= limit
    assert result.stop_reason in (StopReason.FINISHED, StopReason.COST_BUDGET)


def test_genai_prices_is_used_when_installed_and_the_bundled_table_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import_or_unavailable("genai_prices", "prices")
    price, source = price_for("claude-sonnet-4-5", "anthropic")
    assert source.startswith("genai-prices") and price is not None
    assert price.cache_write is not None and price.tiers
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if it were not installed
    price, source = price_for("claude-sonnet-4-5", "anthropic")
    assert source == BUNDLED and price == DEFAULT_CATALOG.lookup("claude-sonnet-4-5")
    assert price is not None and price.cache_write == Decimal("3.75") and price.tiers
    assert price_for("no-such-model-anywhere")[0] is None


def test_an_unknown_model_still_fails_closed() -> None:
    from tether.models import OpenAIModel

    model = OpenAIModel("my-finetune-xyz", api_key="k", base_url="http://127.0.0.1:9",
                        env_file=None)
    assert model.price is None
    with pytest.raises(ValueError, match="needs the model's price"):
        Agent(model=model, reasoning=ReAct()).session(
            "hi", budget=Budget(max_cost_usd=Decimal("1")))


def test_prices_show_says_what_is_charged_and_from_where(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    assert main(["prices", "show", "claude-sonnet-4-5"]) == 0
    out = capsys.readouterr().out
    assert "priced by tether's bundled table" in out
    assert "cache write $3.75" in out and "past 200,000 input tokens" in out
    assert main(["prices", "show", "no-such-model"]) == 1
    assert "no price known" in capsys.readouterr().err
