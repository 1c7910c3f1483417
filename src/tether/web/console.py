"""What a console serves and how it admits people: one frozen value, built once at start.

Why: the console holds no state of its own, but it does hold settings — the store, the approval
rules, how people authenticate — and every page reads them. One frozen value on
``app.state.console`` keeps them in one place that no request can change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tether.runtime.approvals.rules import ApprovalRules
from tether.store.base import Store


@dataclass(frozen=True, slots=True)
class Console:
    """A console's settings.

    Args:
        store: The store it shows (and where decisions are recorded).
        rules: Who may decide which approvals (``ApprovalRules``).
        auth: ``"link"`` (a one-time login link), ``"header:NAME"`` (a reverse proxy's header,
            trusted only from ``proxies``) or ``"none"`` (everyone is an unauthenticated
            operator; only with an explicit flag).
        proxies: Addresses whose ``header:NAME`` is trusted.
        operator: The name the login link signs in as (the OS user who started the console).
        reports: Directories of evaluation reports the console lists."""

    store: Store
    rules: ApprovalRules = field(default_factory=ApprovalRules)
    auth: str = "link"
    proxies: frozenset[str] = frozenset({"127.0.0.1", "::1"})
    operator: str = "operator"
    reports: tuple[str, ...] = ()
