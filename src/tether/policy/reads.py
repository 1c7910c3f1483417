"""Whether a policy decides on where values came from: what turns inherited distrust on.

Why: a tool result inherits the distrust of the call that asked for it
(``tether.runtime.provenance.inherited``): a lookup whose arguments only untrusted text supplied
returns untrusted results. Knowing that takes the provenance of every call's arguments — a
ledger of every result, tokenised — which a policy that never asks where a value came from does
not need. Such a session (the default ``AllowAll``, a role check, a budget rule) must pay
nothing for it.

Decision: a policy says so with a class attribute ``reads_provenance`` (tether's own do: the
provenance presets ``True``, the others ``False``; a YAML policy when one of its rules has an
``args_from`` condition); a combinator reads provenance when any member does. A policy that
says nothing is one tether cannot see into, so it is taken to read provenance (fail closed: it
costs the ledger, never the promise); declare ``reads_provenance = False`` on a policy that
never reads ``context.provenance`` to spare it.
"""

from __future__ import annotations


def reads_provenance(policy: object) -> bool:
    """Whether ``policy`` may decide on ``context.provenance``: what it declares, else whether
    any of its ``members`` may; a policy that declares nothing may."""
    declared = getattr(policy, "reads_provenance", None)
    if declared is not None:
        return bool(declared)
    members = getattr(policy, "members", None)
    if members is not None:
        return any(reads_provenance(member) for member in members)
    return True
