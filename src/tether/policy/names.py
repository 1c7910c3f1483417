"""A YAML policy must name tools and arguments that exist: a misspelt deny rule denies nothing.

Why: ``when: {tool: refnud}`` loads, lints clean and matches no call, so the refund it was
written to stop runs. The rules are data; the tools they govern are known when an Agent is
built. Checking one against the other turns the silent gap into an error at the place it was
made.

Decision: every tool name a rule mentions (in ``tool`` conditions and as a ``fallback``) must be
one of the tools given, and every argument a rule mentions (in ``args`` conditions and in
``fields``) must be a parameter of at least one tool the rule can match. Each problem names the
policy file, the rule and the closest existing name. Policies inside combinators are checked
too; policies written in code cannot be inspected and are left alone. A policy shared by agents
with different tools opts out (``Agent(check_policy_names=False)``).

Every entry point that puts a policy in front of tools checks it the same way: an Agent when it
is built, ``tether mcp serve`` (and ``tether.serve.server.serve``) against the tools it serves,
``tether mcp proxy`` against the upstream's tools once listed. A proxied server's tools can
change under a running proxy, so there the check is repeated at each change and, while it finds
problems, ``NamesGuard`` denies every call (fail closed) saying why.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from tether.errors import UsageError
from tether.policy.base import (
    Action,
    Context,
    Decision,
    Effect,
    Policy,
    Resource,
    Subject,
    policy_id_of,
)
from tether.policy.deadline import runs_inline
from tether.types import ToolSpec

AGENT_TOOLS = "the agent's tools"
AGENT_ADVICE = ("Fix the names; a policy shared by agents whose tools differ can opt out with "
                "Agent(check_policy_names=False)")


class PolicyNameError(UsageError, ValueError):
    """A policy names tools or arguments the tools it governs do not have."""


def is_yaml_policy(policy: object) -> bool:
    """Whether ``policy`` is a YamlPolicy, without loading the YAML engine to find out (if it
    is not loaded, nothing is one)."""
    loaded = sys.modules.get("tether.policy.yaml_policy")
    return loaded is not None and isinstance(policy, loaded.YamlPolicy)


def yaml_policies(policy: object) -> Iterator[object]:
    """The YAML policies in ``policy``: itself, or the members of combinators, recursively."""
    if is_yaml_policy(policy):
        yield policy
    for member in getattr(policy, "members", ()):
        yield from yaml_policies(member)


def unknown_names(policy: object, tools: Iterable[ToolSpec], *,
                  whose: str = AGENT_TOOLS) -> list[str]:
    """One line per rule that names a tool or an argument none of ``tools`` has (``whose``
    says in the line whose tools they are)."""
    found_any = list(yaml_policies(policy))
    if not found_any:
        return []
    from tether.policy.yaml_policy import YamlPolicy

    params = {spec.name: frozenset((spec.parameters or {}).get("properties") or ())
              for spec in tools}
    problems: list[str] = []
    for found in found_any:
        assert isinstance(found, YamlPolicy)
        for rule in found.rules:
            where = f"{found.source}: rule {rule.id!r}"
            for name in sorted(rule.names - params.keys()):
                problems.append(f"{where} names tool {name!r}, which none of {whose} "
                                f"is{_closest(name, params)}")
            scope = params.keys() if rule.tools is None else rule.tools & params.keys()
            if not scope:
                continue
            known = frozenset().union(*(params[t] for t in scope))
            for arg in sorted(rule.args - known):
                which = ", ".join(sorted(scope)) if len(scope) <= 3 else f"{len(scope)} tools"
                problems.append(f"{where} names argument {arg!r}, which {which} "
                                f"{'does' if len(scope) == 1 else 'do'} not take"
                                f"{_closest(arg, known)}")
    return problems


def check_names(policy: object, tools: Iterable[ToolSpec], *, whose: str = AGENT_TOOLS,
                advice: str = AGENT_ADVICE) -> None:
    """PolicyNameError listing every problem ``unknown_names`` finds, then ``advice``."""
    problems = unknown_names(policy, tools, whose=whose)
    if problems:
        raise PolicyNameError(names_message(problems, advice))


def names_message(problems: Iterable[str], advice: str) -> str:
    """The one wording of a policy-name refusal, wherever it is made."""
    return ("the policy names what its tools do not have, so those rules would never match:\n  "
            + "\n  ".join(problems) + "\n" + advice)


class NamesGuard:
    """``policy``, re-checked against tools that change under it; while the last check found
    problems, every call is denied with them (fail closed: a rule that names nothing served
    would otherwise deny nothing). ``check`` is called with the tools as they are now."""

    def __init__(self, policy: Policy, *, whose: str, advice: str) -> None:
        self.policy = policy
        self.whose = whose
        self.advice = advice
        self.problems: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"NamesGuard({self.policy!r})"

    @property
    def members(self) -> tuple[object, ...]:
        return (self.policy,)

    @property
    def inline(self) -> bool:
        return runs_inline(self.policy)

    @property
    def policy_id(self) -> str:
        return policy_id_of(self.policy)

    def check(self, tools: Iterable[ToolSpec]) -> bool:
        """Check the names against ``tools``; whether the verdict changed (then ``problems``
        says what is wrong now, or is empty when all is well again)."""
        problems = tuple(unknown_names(self.policy, tools, whose=self.whose))
        changed, self.problems = problems != self.problems, problems
        return changed

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        problems = self.problems
        if problems:
            return Decision(Effect.DENY, "every call is refused until the policy matches the "
                            "tools again: " + names_message(problems, self.advice),
                            "tether:policy-names")
        return self.policy.evaluate(subject, action, resource, context)


def _closest(name: str, candidates: Iterable[str]) -> str:
    import difflib

    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
