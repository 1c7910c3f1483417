"""A Guardian from a policy and a store: the observed agent's tools, approvals and quotas.

Why: ``tether acs serve`` and a program embedding a Guardian build it the same way, and the
choices are the security-relevant ones — which tools exist (those the policy names and those a
tools overlay declares: any other is refused, since nothing declares what it does), what a tool
nobody declared is taken to be (``OBSERVED_META``: side effects, egress, untrusted output — the
cautious reading), where approvals live (the store, so ``tether approvals approve`` in another
process decides them), which quotas count (the policy's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tether.runtime.approvals.approver import Approver, ApproverFn, as_approver
from tether.runtime.approvals.requests import StoredApprovals
from tether.serve.acs.dispositions import OBSERVED_META, ObservedTool
from tether.serve.acs.guardian import Guardian
from tether.serve.acs.session import Door, tool_names
from tether.store.memory import MemoryStore

if TYPE_CHECKING:
    from tether.policy.base import Policy
    from tether.policy.overlay import Overlay
    from tether.store.base import Store
    from tether.tools.base import Tool
    from tether.types import Event


def acs_guardian(policy: Policy, *, secret: bytes, store: Store | None = None,
                 tools: Iterable[str] = (), overlay: Overlay | None = None,
                 skew_ms: int = 300_000, tenant_id: str | None = None,
                 approval_ttl: float = 24 * 3600.0,
                 telemetry: Iterable[Callable[[Event], object]] = (),
                 approver: Approver | ApproverFn | None = None) -> Guardian:
    """A Guardian deciding with ``policy``, journaling into ``store`` (default: memory).

    Args:
        policy: Decides every tool call; a YAML policy's tool names are tools the Guardian knows.
        secret: The deployment's key material (16 bytes or more), shared with the agent.
        store: Journals, approvals and the request ids a restart must remember.
        tools: More tool names the Guardian knows (declared cautiously, as foreign tools).
        overlay: A tools overlay (``tether.policy.overlay``): the tools it names exactly, and
            the metadata it declares for any tool.
        skew_ms: How far a request's timestamp may be from the Guardian's clock.
        tenant_id: The tenant the sessions and their approvals belong to.
        approval_ttl: Seconds an approval request stays answerable.
        telemetry: Sinks told of every session's events (``OTelSink(shape="acs")``,
            ``SIEMSink(shape="acs")`` for ACS Trace; the ServerHello says which it emits).
        approver: An agent or service approver (§9): decides every approval request the
            moment it is made (``Approver``, or ``(ApprovalRequest) -> True / False / None``;
            None leaves it to a person). An answer that is no verdict — an ACS approver's ASK —
            denies, and the call is refused ``-32003`` (ACS-R-012).
    """
    declared = set(tools)
    if overlay is not None:
        declared |= {e.pattern for e in overlay.entries if not e.is_glob}
    observed: tuple[Tool, ...] = tuple(ObservedTool(name, OBSERVED_META)
                                       for name in sorted(tool_names(policy, declared)))
    if overlay is not None:
        observed = overlay.apply(observed)
    store = store if store is not None else MemoryStore()
    approvals = StoredApprovals(store) if tenant_id is None else StoredApprovals(store, tenant_id)
    door = Door(policy, observed, store, approvals, tuple(getattr(policy, "quotas", ())), None,
                tenant_id, approval_ttl, tuple(telemetry), as_approver(approver))
    return Guardian(door, secret, skew_ms=skew_ms)
