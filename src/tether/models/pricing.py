"""Prices, in Decimal per million tokens, and the lookup that fails closed.

Decision: money is Decimal end to end (never float), and a model whose price is unknown has
``None``, not zero: a cost budget on it is refused at session start unless a price is given. A
price covers what a request can be billed for: input, output, cache reads, cache writes, and the
long-context tiers some models charge past a number of input tokens; the budget reserves at the
tier a request's input reaches, every input token at its dearest kind.

Where prices come from: ``genai-prices`` (the ``prices`` extra), a maintained
dataset, when it is installed and knows the model; otherwise the bundled table below — the
providers' standard list prices (not batch, not priority) as of 2025-11, which go stale: a
deployment billed otherwise, or a model the table does not know, passes its own ``Price``.
``price_for(model, provider)`` says which source priced a model (``tether prices show MODEL``).
Lookup in the table is by exact name, then a documented alias, then a dated-snapshot prefix
("gpt-4o-mini-2024-07-18" is priced as "gpt-4o-mini").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from tether.errors import InvalidArgument
from tether.types import Usage

MILLION = Decimal(1_000_000)


def _money(label: str, value: object) -> Decimal:
    money = value if isinstance(value, Decimal) else Decimal(str(value))
    if not money.is_finite() or money < 0:
        raise InvalidArgument(f"Price.{label} must be a finite, non-negative Decimal, got {money}")
    return money


@dataclass(frozen=True, slots=True)
class Tier:
    """Prices for a request whose input is larger than ``above`` tokens (a long-context tier:
    several models charge the whole request more past 200k input tokens)."""

    above: int
    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None

    def __post_init__(self) -> None:
        if isinstance(self.above, bool) or not isinstance(self.above, int) or self.above < 0:
            raise InvalidArgument("Tier.above must be a whole number of tokens, got "
                                  f"{self.above!r}")
        for label in ("input", "output", "cached_input", "cache_write"):
            value = getattr(self, label)
            if value is not None:
                object.__setattr__(self, label, _money(label, value))


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens. ``cached_input`` (cache reads) and ``cache_write`` default to the
    input price when not given; ``tiers`` price requests above a number of input tokens."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    tiers: tuple[Tier, ...] = ()

    def __post_init__(self) -> None:
        for label in ("input", "output", "cached_input", "cache_write"):
            value = getattr(self, label)
            if value is not None:
                object.__setattr__(self, label, _money(label, value))
        object.__setattr__(self, "tiers", tuple(sorted(self.tiers, key=lambda t: t.above)))

    def at(self, input_tokens: int) -> Price:
        """The flat prices a request of ``input_tokens`` input tokens is charged at."""
        reached = [t for t in self.tiers if input_tokens > t.above]
        if not reached:
            return self if not self.tiers else Price(self.input, self.output, self.cached_input,
                                                     self.cache_write)
        t = reached[-1]
        return Price(t.input, t.output, t.cached_input, t.cache_write)

    def dearest_input(self) -> Decimal:
        """The most one input token can cost: uncached, read or written to the cache."""
        return max(self.input, self.cached_input or self.input, self.cache_write or self.input)

    def worst(self) -> Price:
        """A flat price at least as high as this one for any request, tier and token kind."""
        flat = [self.at(0), *(self.at(t.above + 1) for t in self.tiers)]
        return Price(max(p.dearest_input() for p in flat), max(p.output for p in flat))

    def cost(self, usage: Usage) -> Decimal:
        """What ``usage`` costs in USD at this price (at the tier its input reaches; cached reads
        and writes at their own prices)."""
        p = self.at(usage.input_tokens)
        read = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_tokens, usage.input_tokens - read)
        return (
            (usage.input_tokens - read - written) * p.input
            + read * (p.input if p.cached_input is None else p.cached_input)
            + written * (p.input if p.cache_write is None else p.cache_write)
            + usage.output_tokens * p.output
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
                raise InvalidArgument(f"alias {alias!r} points at unknown model {target!r}")

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


def _p(inp: str, out: str, cached: str | None = None, write: str | None = None,
       tiers: tuple[Tier, ...] = ()) -> Price:
    return Price(Decimal(inp), Decimal(out), Decimal(cached) if cached else None,
                 Decimal(write) if write else None, tiers)


# Anthropic's long-context pricing: a request over 200k input tokens is charged this, whole
_SONNET_LONG = (Tier(200_000, Decimal("6"), Decimal("22.5"), Decimal("0.6"), Decimal("7.5")),)


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
        # Anthropic: cached_input is the cache-read price, cache writes 1.25x input
        "claude-3-haiku": _p("0.25", "1.25", "0.03", "0.30"),
        "claude-3-5-haiku": _p("0.80", "4.00", "0.08", "1.00"),
        "claude-3-5-sonnet": _p("3.00", "15.00", "0.30", "3.75"),
        "claude-3-7-sonnet": _p("3.00", "15.00", "0.30", "3.75"),
        "claude-3-opus": _p("15.00", "75.00", "1.50", "18.75"),
        "claude-sonnet-4": _p("3.00", "15.00", "0.30", "3.75", _SONNET_LONG),
        "claude-sonnet-4-5": _p("3.00", "15.00", "0.30", "3.75", _SONNET_LONG),
        "claude-opus-4": _p("15.00", "75.00", "1.50", "18.75"),
        "claude-opus-4-1": _p("15.00", "75.00", "1.50", "18.75"),
        "claude-opus-4-5": _p("5.00", "25.00", "0.50", "6.25"),
        "claude-haiku-4-5": _p("1.00", "5.00", "0.10", "1.25"),
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
"""tether's bundled price table, by model name (list prices, USD per million tokens): where a
model's price is looked up when genai-prices is not installed or does not know the model."""


BUNDLED = "tether's bundled table (list prices as of 2025-11)"


def price_for(model: str, provider: str | None = None) -> tuple[Price | None, str]:
    """The price of ``model`` and where it came from: genai-prices when installed and it knows
    the model, else the bundled table; ``(None, why)`` when neither does."""
    found = _genai_price(model, provider)
    if found is not None:
        return found
    price = DEFAULT_CATALOG.lookup(model)
    if price is not None:
        return price, BUNDLED
    return None, "no price known (give one with Agent(price=Price(input=..., output=...)))"


def _genai_price(model: str, provider: str | None) -> tuple[Price, str] | None:
    try:
        import genai_prices
    except ImportError:
        return None
    name = model.split(":", 1)[1] if ":" in model else model
    try:
        calc = genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model_ref=name,
                                       provider_id=provider)
    except (LookupError, ValueError):
        return None
    mp = calc.model_price
    fields = [getattr(mp, field, None) for _, field in _FIELDS]
    inp, out, read, write = (_base(f) for f in fields)
    if inp is None or out is None:
        return None
    starts = sorted({t.start for f in fields for t in getattr(f, "tiers", None) or ()})
    tiers = []
    for start in starts:
        t_in, t_out, t_read, t_write = (_tiered(f, start) for f in fields)
        tiers.append(Tier(start, t_in or inp, t_out or out, t_read, t_write))
    price = Price(inp, out, read, write, tuple(tiers))
    return price, f"genai-prices {getattr(genai_prices, '__version__', '')}".strip()


_FIELDS = (("input", "input_mtok"), ("output", "output_mtok"),
           ("cached_input", "cache_read_mtok"), ("cache_write", "cache_write_mtok"))


def _base(value: object) -> Decimal | None:
    if value is None:
        return None
    base = getattr(value, "base", value)  # a TieredPrices, or a plain Decimal
    return base if isinstance(base, Decimal) else Decimal(str(base))


def _tiered(value: object, start: int) -> Decimal | None:
    """The price of ``value`` for a request past ``start`` input tokens."""
    price = _base(value)
    for tier in getattr(value, "tiers", None) or ():
        if tier.start <= start:
            price = tier.price if isinstance(tier.price, Decimal) else Decimal(str(tier.price))
    return price
