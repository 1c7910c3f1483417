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
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from tether.types import ToolSpec


class PolicyNameError(ValueError):
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


def unknown_names(policy: object, tools: Iterable[ToolSpec]) -> list[str]:
    """One line per rule that names a tool or an argument none of ``tools`` has."""
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
                problems.append(f"{where} names tool {name!r}, which none of the agent's tools "
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


def check_names(policy: object, tools: Iterable[ToolSpec]) -> None:
    """PolicyNameError listing every problem ``unknown_names`` finds."""
    problems = unknown_names(policy, tools)
    if problems:
        raise PolicyNameError(
            "the policy names what its tools do not have, so those rules would never match:\n  "
            + "\n  ".join(problems) + "\nFix the names; a policy shared by agents whose tools "
            "differ can opt out with Agent(check_policy_names=False)")


def _closest(name: str, candidates: Iterable[str]) -> str:
    import difflib

    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
