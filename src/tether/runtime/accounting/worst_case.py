"""What a model call can cost at most, from the model's price: the figures reservations use.

Why apart from the accountant: the price lookup (the tier an input reaches, the dearest of its
input prices, what money buys in tokens) is arithmetic on a ``Price`` alone; the accountant and
``tether prices`` both use it, and neither needs the other.

Decision: worst case, always. Every input token is priced at the dearest of the uncached,
cache-read and cache-write prices of the tier the input reaches (the provider decides what it
serves from its cache); a cost budget on a model with no price fails closed (``check_price``).
"""

from __future__ import annotations

from decimal import Decimal

from tether.errors import InvalidArgument
from tether.models.pricing import MILLION, Price
from tether.runtime.accounting.budget import Budget

UNBOUNDED = 2**31  # the tokens money buys at a price of nothing


def worst_case_cost(price: Price, input_tokens: int, output_tokens: int) -> Decimal:
    """The most a call can cost: priced at the tier its input reaches, every input token at the
    dearest of the uncached, cache-read and cache-write prices (the provider, not the runtime,
    decides what is served from or written to its cache)."""
    p_in, p_out = dearest_prices(price, input_tokens)
    return (input_tokens * p_in + output_tokens * p_out) / MILLION


def dearest_prices(price: Price, input_tokens: int) -> tuple[Decimal, Decimal]:
    """The dearest input price and the output price of a request of ``input_tokens``."""
    at = price.at(input_tokens)
    return at.dearest_input(), at.output


def tokens_for(money: Decimal, per_million: Decimal) -> int:
    """How many tokens ``money`` buys at ``per_million``; -1 when it buys nothing."""
    if money < 0:
        return -1
    if per_million == 0:
        return UNBOUNDED
    return int(money * MILLION / per_million)


def check_price(budget: Budget, price: Price | None) -> None:
    """Fail closed: a cost budget cannot be enforced for a model whose price is unknown."""
    if budget.max_cost_usd is not None and price is None:
        raise InvalidArgument(
            "a cost budget needs the model's price, and this model has none; give one with "
            "Agent(price=Price(input=..., output=...)) or drop max_cost_usd"
        )
