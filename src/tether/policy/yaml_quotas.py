"""A YAML policy's ``quotas:``: rolling-window limits read and checked like its rules.

Why apart from ``policy.yaml_policy``: quotas are not rules (they decide nothing about one
call; they count calls across sessions), but they belong in the same file a deployment reviews.
Decision: each entry is read through the same checked ``Node`` as a rule, so an unknown key, a
wrong type, a NaN or a negative limit is a load error that says where and what to write; the
values become ``tether.policy.quotas.Quota`` (whose own checks then cannot fail silently).

    quotas:
      - id: refunds           # names the quota (its use is kept under it)
        tool: refund          # count calls of this tool (counts: tool_calls)
        limit: 20
        window: 1h            # seconds, or a span: 30s, 15m, 1h, 1d
        per: tenant           # agent | tenant | user
      - id: daily-spend
        counts: cost_usd      # tokens | cost_usd | steps | tool_calls
        limit: 50             # dollars, for cost_usd
        window: 1d
        per: agent
"""

from __future__ import annotations

from decimal import Decimal

from tether.errors import InvalidArgument
from tether.policy.quotas import DIMENSIONS, PER, Quota
from tether.policy.yaml_source import Node

_KEYS = ("id", "counts", "tool", "limit", "window", "per")


def read_quotas(node: Node) -> tuple[Quota, ...]:
    """The quotas of a policy's ``quotas:`` list (PolicyLoadError saying where, if invalid)."""
    quotas: list[Quota] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(node.items("a list of quotas")):
        keys = item.within(f"quotas[{index}]").mapping(
            _KEYS, required=("id", "limit", "window"), what="a quota with id, limit and window")
        name = keys["id"].text()
        if name in seen:
            keys["id"].fail(f"the quota id {name!r} is already used by quotas[{seen[name]}]",
                            "give every quota its own id")
        seen[name] = index
        tool = keys["tool"].text("a tool name") if "tool" in keys else None
        counts = keys["counts"].choice(DIMENSIONS) if "counts" in keys else "tool_calls"
        per = keys["per"].choice(PER) if "per" in keys else "tenant"
        number = keys["limit"].number()
        if counts != "cost_usd" and not isinstance(number, int):
            keys["limit"].fail(f"a {counts} limit must be a whole number, got {number!r}",
                               "write an integer such as 20")
        limit = number if isinstance(number, int) else Decimal(str(number))
        window = keys["window"]
        if not isinstance(window.value, str):
            window.number()  # a bool, a NaN, an infinity: refused with the reason
        try:
            quotas.append(Quota(name, limit, window.value, per=per, counts=counts, tool=tool))
        except InvalidArgument as exc:
            item.within(f"quotas[{index}] (id {name!r})").fail(str(exc), "fix the value above")
    return tuple(quotas)
