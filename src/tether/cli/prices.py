"""``tether prices show MODEL``: what a model's calls will be charged, and where that price is from.

Why: a cost budget is only as hard as the price behind it. Before trusting one, an operator
should see the price tether will use — per token kind and per long-context tier — and whether it
came from the maintained genai-prices dataset or from tether's bundled table, which goes stale.

Exit codes: 0 the model has a price; 1 no price is known for it (a cost budget on it would be
refused); 2 bad usage.
"""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any

from tether.cli.common import EXIT_FINDING, EXIT_OK, error, usage


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "prices", help="show model prices", description="Show what models are charged.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="prices commands", metavar="COMMAND")
    show = sub.add_parser("show", help="a model's price and its source",
                          description="Print the price a model's calls are charged at — input, "
                          "output, cache reads and writes, long-context tiers — and where it "
                          "comes from.")
    show.add_argument("model", help="the model name, e.g. claude-sonnet-4-5 or openai:gpt-4o")
    show.add_argument("--provider", choices=["openai", "anthropic"],
                      help="the provider, when the name alone is ambiguous")
    show.set_defaults(run=run_show)


def run_show(args: argparse.Namespace) -> int:
    from tether.models.pricing import price_for
    from tether.runtime.accounting.worst_case import worst_case_cost

    provider = args.provider
    if provider is None and ":" in args.model:
        provider = args.model.split(":", 1)[0]
    price, source = price_for(args.model, provider)
    if price is None:
        error(f"{args.model}: {source}")
        return EXIT_FINDING
    print(f"{args.model}: priced by {source}")
    kinds = _kinds(price.input, price.output, price.cached_input, price.cache_write)
    print(f"  per million tokens: {kinds}")
    for tier in price.tiers:
        print(f"  past {tier.above:,} input tokens (the whole request): "
              f"{_kinds(tier.input, tier.output, tier.cached_input, tier.cache_write)}")
    reserved = worst_case_cost(price, 1_000, 500)
    print(f"  a call of 1,000 input and 500 output tokens is reserved at ${reserved:f} (every "
          "input token at its dearest kind) and charged at most that")
    return EXIT_OK


def _kinds(inp: Decimal, out: Decimal, read: Decimal | None, write: Decimal | None) -> str:
    parts = [f"input ${inp:f}", f"output ${out:f}",
             f"cache read ${(inp if read is None else read):f}",
             f"cache write ${(inp if write is None else write):f}"]
    return ", ".join(parts)
