"""Combining policies: several answers in, one decision out, and a deny is never outvoted.

Why: real deployments stack policies — a tenant's YAML rules, a preset such as
``contain_untrusted``, a hand-written check — and the stack must have one meaning that does not
depend on who wrote which part. The decision embodied here, from DESIGN.md ("Permission
semantics"):

- A member may return ``None`` to **abstain** ("not my business"); a combinator skips it.
- An explicit DENY from any member wins over anything, whatever its position.
- A member that raises, or answers with something that is not a Decision, makes the whole
  combination DENY with the error in the reason (fail closed). Members are asked in order and
  the first deny or error ends the evaluation.
- ``FirstMatch`` otherwise takes the first member that decided; if all abstain, its ``default``.
- ``DenyOverrides`` otherwise takes the most restrictive decision (``RESTRICTIVENESS`` in
  ``policy.base``; ties go to the earlier member); if all abstain, it abstains too, so it nests.
- ``DefaultDeny`` turns abstention into DENY: wrap a set in it to make the set default-deny.

The deciding member's Decision is returned unchanged, so the journal names the rule that decided
(e.g. ``expenses:interns-no-refunds``); a decision a combinator makes itself carries the
combinator's ``policy_id`` (``...:default``, ``...:error``).

Typing: ``DenyOverrides`` is generic in what its members return. Built from total policies it is
a total ``Policy``; with an abstaining member its ``evaluate`` is typed ``Decision | None``, and
mypy asks you to give it a default (``DefaultDeny``) before an Agent will take it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

from tether.errors import InvalidArgument, RunError, WrongType
from tether.policy.base import (
    RESTRICTIVENESS,
    Action,
    Context,
    Decision,
    Effect,
    Resource,
    Subject,
    policy_id_of,
)
from tether.policy.deadline import members_inline

D_co = TypeVar("D_co", bound="Decision | None", covariant=True)

_RANK = {effect: rank for rank, effect in enumerate(RESTRICTIVENESS)}
# A default decision carries no fields or fallback, so these three effects cannot be defaults.
_DEFAULTABLE = (Effect.ALLOW, Effect.DENY, Effect.REQUIRE_APPROVAL)


class Voter(Protocol[D_co]):
    """Anything with ``evaluate``; returning ``None`` means abstain. Every Policy is a Voter."""

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> D_co: ...


class _Failed(RunError):
    """A member raised or answered with something that is not a Decision or None."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


def _members(kind: str, policies: Sequence[object], *, at_least: int) -> tuple[object, ...]:
    if len(policies) < at_least:
        raise InvalidArgument(f"{kind} needs at least {at_least} "
                              f"polic{'y' if at_least == 1 else 'ies'}; pass them as positional "
                              f"arguments, e.g. {kind}(yaml_policy, contain_untrusted)")
    for index, member in enumerate(policies):
        if isinstance(member, list | tuple):
            raise WrongType(f"{kind} member {index} is a {type(member).__name__}; pass the "
                            f"policies as separate arguments: {kind}(*policies)")
        if not callable(getattr(member, "evaluate", None)):
            raise WrongType(f"{kind} member {index} ({member!r}) has no evaluate(subject, "
                            "action, resource, context) method; pass a policy object such as "
                            "load_policy('policy.yaml') or an instance of your policy class")
    return tuple(policies)


def _ask(combinator: str, member: object, subject: Subject, action: Action, resource: Resource,
         context: Context) -> Decision | None:
    """One member's answer; raises ``_Failed`` carrying a DENY when the member misbehaves."""
    try:
        answer = member.evaluate(subject, action, resource, context)  # type: ignore[attr-defined]
    except Exception as exc:
        raise _Failed(Decision(
            Effect.DENY, f"policy error in {policy_id_of(member)} ({type(exc).__name__}: {exc}); "
            "denied (fail closed)", f"{combinator}:error")) from exc
    if answer is None:
        return None
    if not isinstance(answer, Decision) or not isinstance(answer.effect, Effect):
        raise _Failed(Decision(
            Effect.DENY, f"{policy_id_of(member)} returned {type(answer).__name__}, not a "
            "Decision or None; denied (fail closed)", f"{combinator}:error"))
    return answer


def _default_effect(value: Effect | str, kind: str) -> Effect:
    if isinstance(value, str) and value in _DEFAULTABLE:  # an Effect is a str, too
        return Effect(value)
    raise InvalidArgument(f"{kind} default must be one of "
                          f"{', '.join(e.value for e in _DEFAULTABLE)}, got {value!r}; "
                          "partial_allow, mask and degrade need fields or a fallback, so return "
                          "them from a member policy instead")


class FirstMatch:
    """The first member that decides wins — unless any member denies or fails, which denies."""

    __slots__ = ("_default", "_members", "policy_id")

    def __init__(self, *policies: Voter[Decision | None], default: Effect | str = Effect.DENY,
                 policy_id: str | None = None) -> None:
        self._members = _members("FirstMatch", policies, at_least=0)
        effect = _default_effect(default, "FirstMatch")
        self.policy_id = policy_id or (
            f"first-match({', '.join(policy_id_of(m) for m in self._members)})")
        self._default = Decision(effect, f"no policy in {self.policy_id} decided; default "
                                 f"{effect.value}", f"{self.policy_id}:default")

    @property
    def members(self) -> tuple[object, ...]:
        return self._members

    @property
    def deny_parts(self) -> tuple[object, ...]:
        """Any member's deny (or error) is the whole's (``tether.policy.base.DenyParts``)."""
        return self._members

    @property
    def inline(self) -> bool:
        """Decides on the caller's thread when every member does."""
        return members_inline(*self._members)

    def __repr__(self) -> str:
        return f"FirstMatch({', '.join(map(repr, self._members))}, default={self._default.effect})"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        first: Decision | None = None
        try:
            for member in self._members:
                answer = _ask(self.policy_id, member, subject, action, resource, context)
                if answer is None:
                    continue
                if answer.effect is Effect.DENY:
                    return answer
                if first is None:
                    first = answer
        except _Failed as failed:
            return failed.decision
        return self._default if first is None else first


class DenyOverrides(Generic[D_co]):
    """The most restrictive answer wins; abstains only if every member abstains."""

    __slots__ = ("_members", "policy_id")

    def __init__(self, *policies: Voter[D_co], policy_id: str | None = None) -> None:
        self._members = _members("DenyOverrides", policies, at_least=1)
        self.policy_id = policy_id or (
            f"deny-overrides({', '.join(policy_id_of(m) for m in self._members)})")

    @property
    def members(self) -> tuple[object, ...]:
        return self._members

    @property
    def deny_parts(self) -> tuple[object, ...]:
        """Any member's deny (or error) is the whole's (``tether.policy.base.DenyParts``)."""
        return self._members

    @property
    def inline(self) -> bool:
        """Decides on the caller's thread when every member does."""
        return members_inline(*self._members)

    def __repr__(self) -> str:
        return f"DenyOverrides({', '.join(map(repr, self._members))})"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> D_co:
        best: Decision | None = None
        best_rank = len(RESTRICTIVENESS)
        try:
            for member in self._members:
                answer = _ask(self.policy_id, member, subject, action, resource, context)
                if answer is None:
                    continue
                if answer.effect is Effect.DENY:
                    return answer  # type: ignore[return-value]
                rank = _RANK[answer.effect]
                if rank < best_rank:
                    best, best_rank = answer, rank
        except _Failed as failed:
            return failed.decision  # type: ignore[return-value]
        return best  # type: ignore[return-value]


class DefaultDeny:
    """Makes any policy total: where it abstains, DENY."""

    __slots__ = ("_inner", "policy_id")

    def __init__(self, policy: Voter[Decision | None], *, policy_id: str | None = None) -> None:
        (self._inner,) = _members("DefaultDeny", (policy,), at_least=1)
        self.policy_id = policy_id or f"default-deny({policy_id_of(policy)})"

    @property
    def members(self) -> tuple[object, ...]:
        return (self._inner,)

    @property
    def deny_parts(self) -> tuple[object, ...]:
        """The inner policy's deny (or error) is the whole's."""
        return (self._inner,)

    @property
    def inline(self) -> bool:
        """Decides on the caller's thread when every member does."""
        return members_inline(self._inner)

    def __repr__(self) -> str:
        return f"DefaultDeny({self._inner!r})"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        try:
            answer = _ask(self.policy_id, self._inner, subject, action, resource, context)
        except _Failed as failed:
            return failed.decision
        if answer is None:
            return Decision(Effect.DENY, f"{policy_id_of(self._inner)} did not decide; denied by "
                            "default", f"{self.policy_id}:default")
        return answer
