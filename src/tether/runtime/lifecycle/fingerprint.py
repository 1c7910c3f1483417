"""A recipe's fingerprint: what a resumed session must still be run by.

Why: a session paused (or crashed) under one recipe — its agent name, tools and policy — and
resumed under another would run its waiting calls under rules nobody approved them for: another
agent's tools, a looser policy. The journal records the fingerprint at the session's start, and
resume refuses a recipe whose fingerprint differs unless told explicitly.

Decision: the fingerprint covers what changes what a call may do — the agent's name, each tool's
name, parameters schema and declared metadata, and the policy's rules (a YAML policy's compiled
decisions and the tools they apply to; a policy written in code, by its class name and id) — and
not what does not (descriptions, prompts, the model, the module a class is imported from). It is
a short SHA-256 over canonical JSON.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, cast

from tether.journal.chain import canonical_json
from tether.policy.base import policy_id_of
from tether.policy.names import is_yaml_policy

if TYPE_CHECKING:
    from tether.policy.yaml_policy import YamlPolicy
    from tether.runtime.lifecycle.agent import Agent


def recipe_fingerprint(agent: Agent) -> str:
    """A short, stable hash of what governs ``agent``'s calls."""
    tools = sorted([tool.name, dict(tool.spec.parameters), tool.meta.to_dict()]
                   for tool in agent.registry)
    body = canonical_json({"agent": agent.name, "tools": tools,
                           "policy": _policy(agent.policy)})
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def _policy(policy: object) -> Any:
    if is_yaml_policy(policy):
        yaml = cast("YamlPolicy", policy)
        return {"yaml": yaml.policy_id, "default": yaml.default.value,
                "rules": [[r.id, r.priority, r.decision.to_dict(), sorted(r.tools or ())]
                          for r in yaml.rules]}
    members = getattr(policy, "members", None)
    kind = type(policy).__qualname__  # not its module: run as a script, that is __main__
    if members is not None:
        return {"combinator": kind, "members": [_policy(m) for m in members]}
    return {"code": kind, "id": policy_id_of(policy)}
