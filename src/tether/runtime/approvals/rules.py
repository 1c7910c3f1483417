"""Who may approve what: the people a console knows, self-approval, roles per tool, break-glass.

Why: a policy says a call needs a person; it does not say which person. Four-eyes rules are the
point of an approval: the person a session runs for should not wave its own refund through, and
a refund should be approved by finance, not by whoever holds a login. ``ApprovalRules`` says so,
read from a small YAML file shared by ``tether console`` and ``tether approvals``::

    people:                      # who the console knows: tenant and roles per authenticated name
      alice@example.com: {tenant: acme, roles: [finance]}
      ops@example.com: {roles: [operator]}          # no tenant: sees every tenant
    self_approval: false         # the session's own user may not decide its requests (default)
    unauthenticated: false       # refuse names no one vouched for (default: allowed, journaled)
    approve:                     # who may approve which tools; none listed: anyone who sees it
      - tools: ["refund*", "wire_*"]
        roles: [finance]
    break_glass: [operator]      # roles that may override the two rules above, marked as such

Decision: the rules only *refuse*; a refusal says which rule and what to do. Denying is held to
the same rules as approving (a denial is a decision someone is accountable for too), except that
any identity may deny under break-glass. Break-glass never overrides tenancy, expiry, a stale
page or a forged request: it lifts the four-eyes rules only, and the decision is marked
``break_glass`` in the approval record, its anchor and the session's journal. Unknown keys, wrong
types and empty names are load errors (the policy loader's stance): a broken rules file must not
quietly allow everything.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import InvalidArgument
from tether.runtime.approvals.identity import Identity
from tether.runtime.approvals.requests import ALL_TENANTS, ApprovalRequest


@dataclass(frozen=True, slots=True)
class Person:
    """What the rules know of one authenticated name: its tenant and roles."""

    tenant_id: Any = ALL_TENANTS
    roles: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class Grant:
    """Tools (glob patterns) that only these roles may approve."""

    tools: tuple[str, ...]
    roles: frozenset[str]

    def covers(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools)


@dataclass(frozen=True, slots=True)
class ApprovalRules:
    """Who may decide which approval requests (see the module docstring for the file format).

    Args:
        people: Authenticated names and their tenant and roles; with none listed, everyone
            authenticated is an operator of every tenant, with no roles.
        self_approval: Whether the session's own user may decide its requests.
        unauthenticated: Whether a name no one vouched for may decide at all.
        approve: Per tool pattern, the roles that may approve it.
        break_glass: Roles that may override self-approval and ``approve``, marked as such."""

    people: Mapping[str, Person] = field(default_factory=dict)
    self_approval: bool = False
    unauthenticated: bool = True
    approve: tuple[Grant, ...] = ()
    break_glass: frozenset[str] = frozenset()

    def identity(self, name: str, method: str) -> Identity | None:
        """The identity of an authenticated ``name``: its tenant and roles from ``people``;
        None when people are listed and this name is not one of them (it sees nothing)."""
        if not self.people:
            return Identity(name, method)
        person = self.people.get(name)
        if person is None:
            return None
        return Identity(name, method, person.tenant_id, person.roles)

    def may_break_glass(self, identity: Identity) -> bool:
        return identity.authenticated and bool(self.break_glass & identity.roles)

    def refusal(self, identity: Identity, request: ApprovalRequest, session_user: str | None,
                *, break_glass: bool = False) -> str | None:
        """Why ``identity`` may not decide ``request`` (made in a session run for
        ``session_user``), or None if it may."""
        if not identity.authenticated and not self.unauthenticated:
            return (f"{identity.name!r} is not authenticated, and these rules accept only "
                    "authenticated approvers (the console's login, or the OS user)")
        if break_glass:
            if not self.may_break_glass(identity):
                return (f"{identity} may not break glass: only the roles "
                        f"{sorted(self.break_glass) or '(none configured)'} may")
            return None
        if not self.self_approval and session_user is not None and identity.name == session_user:
            return (f"{identity.name} is the user this session runs for, and self-approval is "
                    "refused: another person must decide")
        wanted = [g for g in self.approve if g.covers(request.tool)]
        if wanted and not any(g.roles & identity.roles for g in wanted):
            roles = sorted(set().union(*(g.roles for g in wanted)))
            return (f"{request.tool} may be approved only by the roles {roles}; {identity.name} "
                    f"has {sorted(identity.roles) or 'none'}")
        return None

    @classmethod
    def load(cls, path: str | Path) -> ApprovalRules:
        """Read a rules file; InvalidArgument naming the file and the key for anything wrong."""
        import yaml

        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidArgument(f"approval rules {path}: cannot read it ({exc})") from exc
        return cls.from_mapping(raw, where=str(path))

    @classmethod
    def from_mapping(cls, raw: Any, where: str = "approval rules") -> ApprovalRules:
        if not isinstance(raw, Mapping):
            raise InvalidArgument(f"{where}: expected a mapping at the top")
        unknown = set(raw) - {"people", "self_approval", "unauthenticated", "approve",
                              "break_glass"}
        if unknown:
            raise InvalidArgument(f"{where}: unknown keys {sorted(unknown)}; known: people, "
                                  "self_approval, unauthenticated, approve, break_glass")
        people = {name: _person(value, f"{where}: people.{name}")
                  for name, value in _mapping(raw.get("people", {}), f"{where}: people").items()}
        if any(not isinstance(n, str) or not n.strip() for n in people):
            raise InvalidArgument(f"{where}: people: every name must be a non-empty string")
        grants = raw.get("approve", [])
        if not isinstance(grants, list):
            raise InvalidArgument(f"{where}: approve: expected a list of {{tools, roles}}")
        return cls(people, _flag(raw, "self_approval", False, where),
                   _flag(raw, "unauthenticated", True, where),
                   tuple(_grant(g, f"{where}: approve[{i}]") for i, g in enumerate(grants)),
                   _names(raw.get("break_glass", []), f"{where}: break_glass"))


def _mapping(value: Any, where: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{where}: expected a mapping")
    return value


def _flag(raw: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise InvalidArgument(f"{where}: {key}: expected true or false, got {value!r}")
    return value


def _names(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidArgument(f"{where}: expected a list of non-empty names")
    return frozenset(value)


def _person(value: Any, where: str) -> Person:
    body = _mapping(value if value is not None else {}, where)
    unknown = set(body) - {"tenant", "roles"}
    if unknown:
        raise InvalidArgument(f"{where}: unknown keys {sorted(unknown)}; known: tenant, roles")
    tenant = body.get("tenant", ALL_TENANTS)
    if tenant is not ALL_TENANTS and not (isinstance(tenant, str) and tenant.strip()):
        raise InvalidArgument(f"{where}: tenant: expected a tenant id")
    return Person(tenant, _names(body.get("roles", []), f"{where}.roles"))


def _grant(value: Any, where: str) -> Grant:
    body = _mapping(value, where)
    if set(body) != {"tools", "roles"}:
        raise InvalidArgument(f"{where}: expected exactly the keys tools and roles")
    tools = _names(body["tools"], f"{where}.tools")
    roles = _names(body["roles"], f"{where}.roles")
    if not tools or not roles:
        raise InvalidArgument(f"{where}: tools and roles must not be empty")
    return Grant(tuple(sorted(tools)), roles)
