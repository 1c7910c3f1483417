"""Whether the policy denies a tool whatever its arguments: the probe tool selection hides by.

Why: tool selection (``tether.runtime.context.selecting``) never offers a tool the policy denies
outright, but must offer one whose deny depends on the call ("deny unless amount <= 100"): only
the gate, with the model's real arguments, can decide that call. So before a turn each
candidate is put to the policy with no arguments, and the answer counts only if the policy
provably never looked at them.

Decision: **watch the doors, not the rooms.** The arguments reach a policy only through
``action.arguments`` and the two context fields derived from them, ``context.provenance`` and
``context.labels``. The probe hands the policy an ``Action`` and a ``Context`` (subclasses, so
``isinstance`` holds) that note any attribute read of those three names. Every way of reading
the arguments starts with such a read — ``json.dumps(action.arguments)`` as a policy calling OPA
or a remote service does, ``.copy()``, ``| {}``, ``str()``, ``dict()``, ``{**...}``, a deep
copy, ``repr(action)``, ``dataclasses.asdict(action)``, equality, hashing, pickling — so none
can slip past, as each did past a watched stand-in dict (whose C-level copy, union, repr and
JSON encoding read its storage without calling a method). What reads nothing of them cannot
depend on them. A deny counts only if none was read; anything else offers the tool and the gate
decides each call, so the probe can only hide, never grant. (Code that digs past attribute
access on purpose — a slot descriptor called by hand — is a policy lying to its operator, not
a way of reading a call.)

A policy that raises or times out without opening a door denies (fail closed) and hides the
tool. When the whole read the arguments, a member whose denial alone decides (of a
``DenyOverrides``, as a sub-agent's policy is combined with its caller's, or a ``DefaultDeny``)
is asked on its own the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tether.policy.base import Action, Context, Decision, DenyParts, Effect
from tether.policy.deadline import runs_inline

if TYPE_CHECKING:
    from tether.runtime.chokepoint.gate import PolicyGate

_ACTION_DOORS = frozenset({"arguments"})
_CONTEXT_DOORS = frozenset({"provenance", "labels"})


class Watch:
    """Whether a probed policy read a door to the arguments (set once, never cleared)."""

    __slots__ = ("read",)

    def __init__(self) -> None:
        self.read = False

    def __call__(self, action: Action, context: Context) -> tuple[Action, Context]:
        """The SARC pieces the probe decides on, watched."""
        watched_action = _WatchedAction(action.tool, action.arguments)
        object.__setattr__(watched_action, "_watch", self)
        watched_context = _WatchedContext(*(getattr(context, f.name)
                                            for f in dataclasses.fields(Context)))
        object.__setattr__(watched_context, "_watch", self)
        return watched_action, watched_context


class _WatchedAction(Action):
    __slots__ = ("_watch",)

    def __getattribute__(self, name: str) -> Any:
        if name in _ACTION_DOORS:
            object.__getattribute__(self, "_watch").read = True
        return object.__getattribute__(self, name)


class _WatchedContext(Context):
    __slots__ = ("_watch",)

    def __getattribute__(self, name: str) -> Any:
        if name in _CONTEXT_DOORS:
            object.__getattribute__(self, "_watch").read = True
        return object.__getattribute__(self, name)


def denied_outright(gate: PolicyGate, tool: Any) -> bool:
    """Whether the policy denies ``tool`` now without looking at any argument — itself, or
    one member whose denial alone decides (a ``DenyOverrides`` member, a ``DefaultDeny``'s
    inner policy: a sub-agent's policy with its caller's, where one member reads arguments
    and the other refuses the tool outright)."""
    watch = Watch()
    decision = gate.probe(tool, {}, {}, watch=watch)
    if decision.effect is not Effect.DENY:
        return False
    return not watch.read or any(_member_denies(gate, tool, m) for m in _overriding(gate.policy))


def _overriding(policy: object) -> Iterator[Any]:
    """The parts of ``policy`` whose DENY (or error) alone makes the whole deny, at any depth
    (``tether.policy.base.DenyParts``)."""
    if isinstance(policy, DenyParts):
        for part in policy.deny_parts:
            yield part
            yield from _overriding(part)


def _member_denies(gate: PolicyGate, tool: Any, member: Any) -> bool:
    if not runs_inline(member):  # asked as it is, it would have no deadline: not asked
        return False
    watch = Watch()
    try:
        decision = gate.probe(tool, {}, {}, member, watch=watch)
    except Exception:  # the whole denies when a member fails
        return not watch.read
    return isinstance(decision, Decision) and decision.effect is Effect.DENY and not watch.read
