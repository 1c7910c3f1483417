"""Who decides an approval: a name that authentication vouched for, never one a form typed.

Why: "approved by alice" is worth what the word "alice" is worth. A free-text approver name lets
anyone who can reach the command line or a form sign as anyone. So every decision carries an
``Identity``: the name, *how* it was established (a one-time login link, a header set by an
authenticating proxy, the operating-system account running the CLI), the tenant whose approvals
it may see and the roles the approval rules (``tether.runtime.approvals.rules``) read. A name no
one vouched for is still possible where a team wants it (``tether approvals approve --approver
NAME --unauthenticated``), and it is journaled as exactly that.

Decision: plain frozen data; establishing it is the face's job (``tether.web`` authenticates a
browser, ``tether.cli`` asks the OS), deciding what it may do is the rules'.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass, field
from typing import Any

from tether.runtime.approvals.requests import ALL_TENANTS

#: How an identity was established, as journaled with each decision.
LOGIN_LINK = "login-link"  # the console's one-time link, opened by whoever started it
OS_USER = "os-user"  # the account running `tether approvals`
UNAUTHENTICATED = "unauthenticated"  # a name given with --unauthenticated, or a console --no-auth
IN_PROCESS = "in-process"  # an Approver rule inside the agent's own process


def header_method(header: str) -> str:
    """The method of an identity a reverse proxy vouched for in ``header``."""
    return f"header:{header}"


@dataclass(frozen=True, slots=True)
class Identity:
    """A person (or rule) about to decide approvals, as authentication established them.

    Args:
        name: Who, as authenticated (an e-mail from a proxy's header, an OS account name).
        method: How that was established (``login-link``, ``header:NAME``, ``os-user``,
            ``unauthenticated``); journaled with every decision.
        tenant_id: The tenant whose approvals they see; ``ALL_TENANTS`` for an operator of the
            whole store; None sees only sessions without a tenant.
        roles: What the approval rules may require of them (``ApprovalRules``)."""

    name: str
    method: str
    tenant_id: Any = ALL_TENANTS
    roles: frozenset[str] = field(default_factory=frozenset)

    @property
    def authenticated(self) -> bool:
        """Whether something other than the person's own word established the name."""
        return self.method != UNAUTHENTICATED

    @property
    def all_tenants(self) -> bool:
        return self.tenant_id is ALL_TENANTS

    def __str__(self) -> str:
        return f"{self.name} ({self.method})"


def os_identity(tenant_id: Any = ALL_TENANTS) -> Identity:
    """The account running this process: what `tether approvals approve` decides as."""
    return Identity(getpass.getuser(), OS_USER, tenant_id)
