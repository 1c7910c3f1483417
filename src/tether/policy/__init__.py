"""Governance: SARC requests, decisions and the policies that make them.

The seam (``base``) is imported eagerly because the runtime needs it on every call; combinators,
presets and the YAML engine load on first use, so importing the seam never pays for them (and
``yaml`` itself is imported only when a YAML policy is parsed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports
from tether.policy.base import (
    RESTRICTIVENESS,
    Action,
    AllowAll,
    Context,
    Decision,
    Effect,
    Policy,
    Resource,
    Subject,
    decide,
    policy_id_of,
)

if TYPE_CHECKING:
    from tether.policy.combinators import DefaultDeny, DenyOverrides, FirstMatch, Voter
    from tether.policy.containment import (
        KeepPrivate,
        NoUnaskedRepeats,
        ScopeToPlan,
        UntrustedShapes,
        keep_private,
        no_unasked_repeats,
        scope_to_plan,
        untrusted_shapes,
    )
    from tether.policy.days import NamedDays, named_days
    from tether.policy.presets import (
        ContainUntrusted,
        ContainUntrustedFlows,
        ScopeToRequest,
        contain_untrusted,
        contain_untrusted_flows,
        scope_to_request,
    )
    from tether.policy.quotas import Quota
    from tether.policy.yaml_policy import YamlPolicy, load_policy
    from tether.policy.yaml_source import PolicyLoadError

_WHERE = {
    "DefaultDeny": "combinators", "DenyOverrides": "combinators", "FirstMatch": "combinators",
    "Voter": "combinators", "ContainUntrusted": "presets", "contain_untrusted": "presets",
    "ContainUntrustedFlows": "presets", "contain_untrusted_flows": "presets",
    "ScopeToRequest": "presets", "scope_to_request": "presets",
    "NoUnaskedRepeats": "containment", "no_unasked_repeats": "containment",
    "ScopeToPlan": "containment", "scope_to_plan": "containment",
    "KeepPrivate": "containment", "keep_private": "containment",
    "UntrustedShapes": "containment", "untrusted_shapes": "containment",
    "NamedDays": "days", "named_days": "days",
    "YamlPolicy": "yaml_policy", "load_policy": "yaml_policy", "PolicyLoadError": "yaml_source",
    "Quota": "quotas",
}

__all__ = ["RESTRICTIVENESS", "Action", "AllowAll", "ContainUntrusted", "ContainUntrustedFlows",
           "Context", "Decision", "DefaultDeny", "DenyOverrides", "Effect", "FirstMatch",
           "KeepPrivate", "NamedDays", "NoUnaskedRepeats", "Policy", "PolicyLoadError", "Quota",
           "Resource", "ScopeToPlan", "ScopeToRequest", "Subject", "UntrustedShapes", "Voter",
           "YamlPolicy", "contain_untrusted", "contain_untrusted_flows", "decide", "keep_private",
           "load_policy", "named_days", "no_unasked_repeats", "policy_id_of", "scope_to_plan",
           "scope_to_request", "untrusted_shapes"]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
