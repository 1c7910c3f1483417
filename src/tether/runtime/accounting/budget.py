"""A budget's limits and a session's spend: the data every budget decision reads.

Why apart from the accountant (``accounting.accountant``): a ``Budget`` is what a user writes
and a ``Spend`` what a result reports; both travel (a recipe, a journal's ``session.start``, a
sub-agent's lease, a framework's run) far from the code that reserves and settles calls.

Decision: both are frozen values, checked when made. ``None`` is unlimited; a limit that is not
a whole, finite, non-negative number raises here, so no later check meets a malformed one. A
charge that would lower spend is refused (``check_charge``): nothing may take spend away.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from tether.errors import InvalidArgument
from tether.types import Usage


def _limit_int(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"Budget.{name} must be a whole number or None, got {value!r}")
    if value < 0:
        raise InvalidArgument(f"Budget.{name} must be >= 0, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class Budget:
    """A session's hard limits, checked before every model and tool call: a call that does not
    fit is not made, and the run stops with the limit's reason (its model gets a wrap-up turn
    first). ``None`` means unlimited. Invalid limits raise here.

    Args:
        max_tokens: Input and output tokens of all model calls, counted worst case before each
            call (its output capped to what is left) and settled after it.
        max_cost_usd: US dollars spent on model calls (a ``Decimal``, or a number read as one),
            priced by the agent's ``price`` or the model's. A model without a price fails the
            session when it is made.
        max_steps: Model turns.
        max_tool_calls: Tool calls.
        max_seconds: Wall-clock seconds since the session started.
        final_turn_share: The share of the token, cost and time limits (and one step) held back
            so the model's wrap-up turn still fits when a limit stops the run.
    """

    max_tokens: int | None = None
    max_cost_usd: Decimal | None = None
    max_steps: int | None = None
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    final_turn_share: float = 0.1  # of tokens, cost and seconds, held back for the wrap-up turn

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_steps", "max_tool_calls"):
            _limit_int(name, getattr(self, name))
        if self.max_cost_usd is not None:
            try:
                cost = Decimal(str(self.max_cost_usd))
            except InvalidOperation:
                raise InvalidArgument(
                    f"Budget.max_cost_usd must be a number, got {self.max_cost_usd!r}"
                ) from None
            if not cost.is_finite() or cost < 0:
                raise InvalidArgument(f"Budget.max_cost_usd must be finite and >= 0, got {cost}")
            object.__setattr__(self, "max_cost_usd", cost)
        if self.max_seconds is not None:
            if isinstance(self.max_seconds, bool) or not isinstance(self.max_seconds, int | float):
                raise InvalidArgument("Budget.max_seconds must be a number, got "
                                      f"{self.max_seconds!r}")
            if not math.isfinite(self.max_seconds) or self.max_seconds < 0:
                raise InvalidArgument(f"Budget.max_seconds must be finite and >= 0, got "
                                 f"{self.max_seconds}")
        share = self.final_turn_share
        if not (isinstance(share, int | float) and 0 <= share < 1):
            raise InvalidArgument(f"Budget.final_turn_share must be in [0, 1), got {share!r}")

    def to_dict(self) -> dict[str, Any]:
        """These limits as plain JSON data (as journaled; ``from_dict`` reads it back)."""
        return {
            "max_tokens": self.max_tokens,
            "max_cost_usd": None if self.max_cost_usd is None else str(self.max_cost_usd),
            "max_steps": self.max_steps,
            "max_tool_calls": self.max_tool_calls,
            "max_seconds": self.max_seconds,
            "final_turn_share": self.final_turn_share,
        }

    def tighter(self, other: Budget) -> Budget:
        """Each limit the smaller of the two (a limit set on one side only stays)."""
        def low(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else min(a, b)

        return Budget(low(self.max_tokens, other.max_tokens),
                      low(self.max_cost_usd, other.max_cost_usd),
                      low(self.max_steps, other.max_steps),
                      low(self.max_tool_calls, other.max_tool_calls),
                      low(self.max_seconds, other.max_seconds), self.final_turn_share)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        """The budget ``to_dict`` wrote."""
        cost = data.get("max_cost_usd")
        return cls(data.get("max_tokens"), None if cost is None else Decimal(cost),
                   data.get("max_steps"), data.get("max_tool_calls"), data.get("max_seconds"),
                   data.get("final_turn_share", 0.1))


@dataclass(frozen=True, slots=True)
class Spend:
    """What a session consumed. ``seconds`` is wall time since the session started."""

    usage: Usage = field(default_factory=Usage)
    cost_usd: Decimal = Decimal(0)
    steps: int = 0
    tool_calls: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        """Input and output tokens, together."""
        return self.usage.total_tokens

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON data: tokens, cost (a string), steps, tool calls, seconds."""
        return {"tokens": self.tokens, "cost_usd": str(self.cost_usd), "steps": self.steps,
                "tool_calls": self.tool_calls, "seconds": round(self.seconds, 6)}

    def against(self, budget: Budget) -> str:
        """This spend against each limit, in words: ``tokens 108 of 150, cost $ 0, ...`` (the
        same words wherever a person reads it: ``tether run``'s live line, a stop's notice)."""
        parts = []
        for name, used, limit in (("tokens", self.tokens, budget.max_tokens),
                                  ("cost $", self.cost_usd, budget.max_cost_usd),
                                  ("steps", self.steps, budget.max_steps),
                                  ("tool calls", self.tool_calls, budget.max_tool_calls),
                                  ("seconds", round(self.seconds, 1), budget.max_seconds)):
            parts.append(f"{name} {used}" + (f" of {limit}" if limit is not None else ""))
        return ", ".join(parts)


def check_charge(spend: Spend) -> None:
    """Refuse a charge that would lower spend, or that is not a count: a sub-agent's spend is
    added to its caller's, and nothing may take spend away."""
    u = spend.usage
    counts = (u.input_tokens, u.output_tokens, u.cached_input_tokens, spend.steps,
              spend.tool_calls)
    if not all(type(n) is int and n >= 0 for n in counts) or not (
            isinstance(spend.cost_usd, Decimal) and spend.cost_usd.is_finite()
            and spend.cost_usd >= 0):
        raise InvalidArgument(f"a charge must be whole, non-negative counts and a non-negative "
                         f"Decimal cost; refused {spend!r}")
