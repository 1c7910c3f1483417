"""Who a command decides approvals as: the OS account, or a name given as unauthenticated.

Why: ``--approver NAME`` let anyone at a shell sign as anyone. A decision made from a command
line is now made as the account running it (``os-user``), which the operating system vouched for;
a free name is still possible, where a team wants it, only with ``--unauthenticated`` beside it,
and is journaled as exactly that. ``--rules FILE`` applies the same approval rules the console
applies (``tether.runtime.approvals.rules``): roles per tool, self-approval, break-glass.

Decision: ``tether approvals`` and ``tether fleet`` both add these options here and build the
identity here, so the two commands cannot drift apart.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tether.errors import UsageError

if TYPE_CHECKING:
    from tether.runtime.approvals.identity import Identity
    from tether.runtime.approvals.rules import ApprovalRules


def add_decider_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--approver", metavar="NAME", default=None,
                        help="decide under this name instead of your OS account's; needs "
                        "--unauthenticated (journaled as such)")
    parser.add_argument("--unauthenticated", action="store_true",
                        help="accept --approver's name on your word (journaled as "
                        "unauthenticated; approval rules may refuse it)")
    parser.add_argument("--rules", metavar="FILE", default=None,
                        help="approval rules (YAML: people, self_approval, approve, "
                        "break_glass); the console's --rules file")
    parser.add_argument("--break-glass", action="store_true",
                        help="override self-approval and role rules, if the rules give you a "
                        "break-glass role (marked in the journal)")


def decider(args: argparse.Namespace) -> tuple[Identity, ApprovalRules]:
    """The identity ``args`` decide as and the rules they decide under; UsageError when
    ``--approver`` comes without ``--unauthenticated`` (or the reverse)."""
    from tether.runtime.approvals.identity import OS_USER, UNAUTHENTICATED, Identity
    from tether.runtime.approvals.requests import ALL_TENANTS
    from tether.runtime.approvals.rules import ApprovalRules

    rules = ApprovalRules.load(args.rules) if args.rules else ApprovalRules()
    if args.approver is not None and not args.unauthenticated:
        raise UsageError(f"--approver {args.approver!r} is a name no one vouched for: add "
                         "--unauthenticated to decide under it anyway (journaled as "
                         "unauthenticated), or leave --approver out to decide as your OS "
                         "account")
    if args.unauthenticated and not (args.approver or "").strip():
        raise UsageError("--unauthenticated needs --approver NAME: the name to decide under")
    if args.approver is not None:
        name, method = args.approver.strip(), UNAUTHENTICATED
    else:
        import getpass

        name, method = getpass.getuser(), OS_USER
    person = rules.people.get(name)
    tenant = getattr(args, "tenant", None)
    scope = tenant if tenant is not None else (person.tenant_id if person else ALL_TENANTS)
    return Identity(name, method, scope, person.roles if person else frozenset()), rules
