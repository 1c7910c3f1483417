"""Runs inside runs: a sub-agent started in a governed tool's body.

Why its own module: a tool's body may start another agent, and a governed run takes one call at
a time — so a sub-agent given the run's own tools or model would wait forever for the call it
runs inside, and one given a run of its own would escape the parent's budget and policy. Both
are decided here, once, for every adapter.

Decision: a sub-agent gets a *sub-run*: a run of its own made in the tool's body with
``parent=``, which draws on the parent call's lease of the budget, is bound by the parent's
policy as well as its own, and charges its spend back to that call — the native
``AgentAsTool`` rule, through the same ``ToolContext`` hooks (``sub_budget``, ``charge``,
``policy``). A call on a run from inside one of its own tool calls is refused at once
(``NestedRunError``): the parent's call fails with that message and the parent goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from tether.errors import InvalidArgument, UsageError
from tether.integrations.decided import running_call
from tether.policy.base import Policy, policy_id_of
from tether.policy.combinators import DenyOverrides
from tether.runtime.accounting.budget import Budget
from tether.tools.base import ToolContext

if TYPE_CHECKING:
    from tether.runtime.accounting.budget import Spend

# the ids of the runs whose tool body runs in this context
_INSIDE: ContextVar[frozenset[str]] = ContextVar("tether_inside", default=frozenset())


class NestedRunError(UsageError, RuntimeError):
    """A governed run was called from inside one of its own tool calls (a sub-agent given the
    run's tools or model): refused at once, since it would wait forever for the call it runs
    in. The parent's call fails with this message; the parent run goes on."""


class Lender(Protocol):
    """A governed run (or an adapter's run object) a sub-run can be started under."""

    def lend(self) -> ToolContext: ...


@contextmanager
def running(run_id: str) -> Iterator[None]:
    """The body of one of ``run_id``'s tool calls runs in this block."""
    token = _INSIDE.set(_INSIDE.get() | {run_id})
    try:
        yield
    finally:
        _INSIDE.reset(token)


def not_nested(run_id: str) -> None:
    """NestedRunError when this context runs inside one of ``run_id``'s own tool calls."""
    if run_id in _INSIDE.get():
        raise NestedRunError(
            f"tether: governed run {run_id} was called from inside one of its own tool calls "
            "(a sub-agent given the run's tools or model); that call would wait for the one "
            "it runs in, so it is refused. Give the sub-agent a run of its own, made in the "
            "tool's body with parent=run (it draws on this call's budget and obeys this run's "
            "policy too), or run a tether Agent there")


def lent_by(run_id: str) -> ToolContext:
    """What a sub-run made inside one of ``run_id``'s tool calls draws on: that call's lease of
    the budget, its charge, and the run's policy. ValueError outside its tool calls: a
    sub-run's spend must land on the call that made it."""
    lent = running_call(run_id)
    if lent is None:
        raise InvalidArgument(f"a sub-run of governed run {run_id} is made inside one of its tool "
                              "calls (the tool's body), where its spend lands on that call; make "
                              "it there, or give the run no parent")
    return lent


def sub_run(lent: ToolContext, budget: Budget | None, policy: Policy,
            ) -> tuple[Budget | None, Policy]:
    """A sub-run's budget (its own, tightened to the call's lease) and policy (its own and the
    parent's: a permission the parent denies it never gets)."""
    lease = lent.sub_budget() if lent.sub_budget is not None else None
    if lease is not None:
        budget = (budget or Budget()).tighter(lease)
    if lent.policy is not None:
        policy = DenyOverrides(policy, lent.policy, policy_id=(
            f"{policy_id_of(policy)} and the parent's {policy_id_of(lent.policy)}"))
    return budget, policy


def charge_back(lent: ToolContext | None, spend: Spend) -> None:
    """A sub-run's spend, charged to the parent call that lent it its budget."""
    if lent is not None and lent.charge is not None:
        lent.charge(spend)
