"""Quotas: rolling-window limits shared by every session of an agent, a tenant or a user.

Why: a ``Budget`` bounds one session; a deployment that runs many sessions at once — a fleet,
several workers, several tenants on one store — also needs limits over all of them together
(``refund: 20 calls per hour per tenant``, ``cost: $50 per day per agent``). A quota is that
limit, declared in code (``Agent(quotas=[Quota(...)])``) or in the policy YAML (``quotas:``),
and kept in the store, so every worker on the store counts against the same figure.

Decision: a quota is plain frozen data, checked when made: a name, what it counts (``counts``:
``tokens``, ``cost_usd``, ``steps`` — model calls — or ``tool_calls``, optionally of one
``tool``), a limit, a rolling window in seconds, and whom it is counted per (``agent``,
``tenant`` or ``user``). Amounts go to the store as whole units (``units``): tokens, steps and
calls as they are, dollars as picodollars rounded up, so the store sums integers exactly. A
quota's key names its subject's value, so one tenant's use never counts against another's.
Enforcing it is the runtime's (``tether.runtime.accounting.quota``); here it only lives as data,
below the YAML engine that reads it (``tether.policy.yaml_quotas``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument

if TYPE_CHECKING:
    from tether.policy.base import Subject

DIMENSIONS = ("tokens", "cost_usd", "steps", "tool_calls")
PER = ("agent", "tenant", "user")
PICO = Decimal(10) ** 12  # a cost quota's units: picodollars (whole numbers the store sums)
_SPANS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
NOBODY = "-"  # the key's value for a subject without one (no tenant, no user)


def window_seconds(value: Any, where: str = "Quota.window") -> float:
    """Seconds from a number or a span such as ``"90s"``, ``"15m"``, ``"1h"``, ``"1d"``."""
    if isinstance(value, str):
        match = _SPAN.match(value)
        if match is None:
            raise InvalidArgument(f"{where} {value!r} is not a span: write seconds (3600) or a "
                                  "number and a unit: '30s', '15m', '1h', '1d'")
        seconds = float(match.group(1)) * _SPANS[match.group(2)]
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgument(f"{where} must be seconds or a span like '1h', got {value!r}")
    else:
        seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidArgument(f"{where} must be a positive, finite number of seconds, got "
                              f"{value!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class Quota:
    """A limit over every session it covers, in a rolling window (``Agent(quotas=[...])``).

    Args:
        name: Names the quota in stops, the journal and the store (its key).
        limit: The most the window may hold: a whole number, or dollars (a ``Decimal`` or a
            number read as one) for ``counts="cost_usd"``.
        window: The rolling window: seconds, or a span such as ``"1h"`` or ``"1d"``.
        per: Whom it is counted per: ``"agent"`` (the agent's name), ``"tenant"`` or
            ``"user"`` (the session's).
        counts: What it counts: ``"tokens"``, ``"cost_usd"``, ``"steps"`` (model calls) or
            ``"tool_calls"`` (the default).
        tool: With ``counts="tool_calls"``: count only calls of this tool.
    """

    name: str
    limit: int | Decimal
    window: float | str
    per: str = "tenant"
    counts: str = "tool_calls"
    tool: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidArgument(f"Quota.name must be a non-empty string, got {self.name!r}")
        if self.counts not in DIMENSIONS:
            raise InvalidArgument(f"Quota.counts must be one of {', '.join(DIMENSIONS)}, got "
                                  f"{self.counts!r}")
        if self.per not in PER:
            raise InvalidArgument(f"Quota.per must be one of {', '.join(PER)}, got {self.per!r}")
        if self.tool is not None and (self.counts != "tool_calls" or not isinstance(self.tool, str)
                                      or not self.tool):
            raise InvalidArgument("Quota.tool names the tool whose calls a tool_calls quota "
                                  f"counts; got tool={self.tool!r} with counts={self.counts!r}")
        object.__setattr__(self, "window", window_seconds(self.window))
        object.__setattr__(self, "limit", _limit(self.limit, self.counts))

    @property
    def seconds(self) -> float:
        """The window in seconds."""
        assert isinstance(self.window, float)
        return self.window

    @property
    def limit_units(self) -> int:
        """The limit in the store's whole units."""
        return self.units(self.limit)

    def units(self, amount: int | Decimal) -> int:
        """``amount`` of what this quota counts in the store's whole units (dollars rounded up
        to picodollars: a reservation is never smaller than its cost)."""
        if self.counts == "cost_usd":
            return int((Decimal(amount) * PICO).to_integral_value(ROUND_CEILING))
        return int(amount)

    def shown(self, units: int) -> str:
        """``units`` back in the quota's own terms, for a person."""
        if self.counts == "cost_usd":
            return f"${(Decimal(units) / PICO).normalize():f}"
        what = self.counts.replace("_", " ")
        return f"{units} {what[:-1] if units == 1 else what}"

    def key(self, subject: Subject) -> str:
        """The store key this quota counts ``subject``'s use under: one per agent, tenant or
        user (so one tenant's use never counts against another's)."""
        value = {"agent": subject.agent, "tenant": subject.tenant_id,
                 "user": subject.user_id}[self.per]
        return json.dumps([self.name, self.counts, self.tool, self.per,
                           NOBODY if value is None else value], separators=(",", ":"))

    def counts_tool(self, name: str) -> bool:
        """Whether a call of the tool ``name`` counts against this quota."""
        return self.counts == "tool_calls" and self.tool in (None, name)

    def describe(self) -> str:
        """``'refunds' (20 tool calls of refund per 3600s per tenant)``."""
        what = self.shown(self.limit_units) + (f" of {self.tool}" if self.tool else "")
        return f"{self.name!r} ({what} per {self.seconds:g}s per {self.per})"


def _limit(value: Any, counts: str) -> int | Decimal:
    if counts == "cost_usd":
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
            raise InvalidArgument(f"Quota.limit must be dollars, got {value!r}")
        try:
            money = Decimal(str(value))
        except InvalidOperation:
            raise InvalidArgument(f"Quota.limit must be dollars, got {value!r}") from None
        if not money.is_finite() or money < 0:
            raise InvalidArgument(f"Quota.limit must be finite and >= 0, got {value!r}")
        return money
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"Quota.limit of {counts} must be a whole number >= 0, got {value!r}")
    return value


def check_quotas(quotas: Any) -> tuple[Quota, ...]:
    """``quotas`` as a tuple of ``Quota``s with distinct names (an error names what is wrong)."""
    out = tuple(quotas)
    for quota in out:
        if not isinstance(quota, Quota):
            raise InvalidArgument(f"quotas takes tether.Quota values, got {quota!r}")
    names = [q.name for q in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidArgument(f"quota name(s) {', '.join(twice)} given twice: give each quota "
                              "its own name (its use is kept under it)")
    return out
