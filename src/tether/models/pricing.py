"""Prices, in Decimal per million tokens, and the lookup that fails closed.

Decision: money is Decimal end to end (never float), and a model whose price is unknown has
``None``, not zero: a cost budget on it is refused at session start unless a price is given.
Lookup is by exact name, then a documented alias, then a dated-snapshot prefix
("gpt-4o-mini-2024-07-18" is priced as "gpt-4o-mini"). Catalog prices are the providers'
standard list prices (not batch, not priority, prompts within the standard context tier); a
deployment billed otherwise passes its own ``Price``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from tether.types import Usage

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens. ``cached_input`` defaults to the input price when not given."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None

    def __post_init__(self) -> None:
        for label, value in (("input", self.input), ("output", self.output),
                             ("cached_input", self.cached_input)):
            if value is None:
                continue
            if not isinstance(value, Decimal):
                object.__setattr__(self, label, Decimal(str(value)))
                value = getattr(self, label)
            if not value.is_finite() or value < 0:
                raise ValueError(
                    f"Price.{label} must be a finite, non-negative Decimal, got {value}"
                )

    def cost(self, usage: Usage) -> Decimal:
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        ) / MILLION



ZERO_PRICE = Price(Decimal(0), Decimal(0))

_SNAPSHOT = re.compile(r"^(?P<base>.+?)-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$")


class PriceCatalog:
    """Immutable name → Price table with aliases and dated-snapshot matching."""

    def __init__(self, prices: Mapping[str, Price], aliases: Mapping[str, str] | None = None):
        self._prices = dict(prices)
        self._aliases = dict(aliases or {})
        for alias, target in self._aliases.items():
            if target not in self._prices:
                raise ValueError(f"alias {alias!r} points at unknown model {target!r}")

    def lookup(self, model: str) -> Price | None:
        name = model.split(":", 1)[1] if ":" in model else model
        if name in self._prices:
            return self._prices[name]
        if name in self._aliases:
            return self._prices[self._aliases[name]]
        match = _SNAPSHOT.match(name)
        if match:
            return self.lookup(match.group("base"))
        return None


def _p(inp: str, out: str, cached: str | None = None) -> Price:
    return Price(Decimal(inp), Decimal(out), Decimal(cached) if cached else None)


DEFAULT_CATALOG = PriceCatalog(
    {
        "gpt-4o": _p("2.50", "10.00", "1.25"),
        "gpt-4o-mini": _p("0.15", "0.60", "0.075"),
        "gpt-4.1": _p("2.00", "8.00", "0.50"),
        "gpt-4.1-mini": _p("0.40", "1.60", "0.10"),
        "gpt-4.1-nano": _p("0.10", "0.40", "0.025"),
        "o3-mini": _p("1.10", "4.40", "0.55"),
        "o1": _p("15.00", "60.00", "7.50"),
        "o3": _p("2.00", "8.00", "0.50"),
        "o4-mini": _p("1.10", "4.40", "0.275"),
        # Anthropic: cached_input is the cache-read price. Cache writes (1.25x input) are not
        # priced separately; tether never asks for them (no cache_control is sent).
        "claude-3-haiku": _p("0.25", "1.25", "0.03"),
        "claude-3-5-haiku": _p("0.80", "4.00", "0.08"),
        "claude-3-5-sonnet": _p("3.00", "15.00", "0.30"),
        "claude-3-7-sonnet": _p("3.00", "15.00", "0.30"),
        "claude-3-opus": _p("15.00", "75.00", "1.50"),
        "claude-sonnet-4": _p("3.00", "15.00", "0.30"),
        "claude-sonnet-4-5": _p("3.00", "15.00", "0.30"),
        "claude-opus-4": _p("15.00", "75.00", "1.50"),
        "claude-opus-4-1": _p("15.00", "75.00", "1.50"),
        "claude-opus-4-5": _p("5.00", "25.00", "0.50"),
        "claude-haiku-4-5": _p("1.00", "5.00", "0.10"),
    },
    aliases={
        "claude-3-5-haiku-latest": "claude-3-5-haiku",
        "claude-3-5-sonnet-latest": "claude-3-5-sonnet",
        "claude-3-7-sonnet-latest": "claude-3-7-sonnet",
        "claude-3-opus-latest": "claude-3-opus",
        "claude-sonnet-4-0": "claude-sonnet-4",
        "claude-opus-4-0": "claude-opus-4",
        "chatgpt-4o-latest": "gpt-4o",
    },
)
