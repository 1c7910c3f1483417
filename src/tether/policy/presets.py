"""Ready-made policies for risks every agent deployment shares.

Why: prompt injection turns anything the model has read into instructions. Once a session has
read untrusted content (a web page, an email, a tool whose ``output_trust`` is ``untrusted``),
any tool that can send data out (``egress``) or change the world (``side_effect``) is a way to
act on those instructions. ``contain_untrusted`` does not try to detect injection; it makes such
a call wait for a human. It only ever answers ALLOW or REQUIRE_APPROVAL, so it is meant to be
stacked with your own rules: ``DenyOverrides(load_policy("policy.yaml"), contain_untrusted)``
keeps your denials and adds the approval step on tainted sessions.
"""

from __future__ import annotations

from tether.policy.base import Action, Context, Decision, Effect, Resource, Subject


class ContainUntrusted:
    """After untrusted input, egress and side-effecting tools need an approval."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from its arguments alone: no I/O (see tether.policy.deadline)

    def __init__(self, policy_id: str = "contain-untrusted") -> None:
        self.policy_id = policy_id
        self._clean = Decision(Effect.ALLOW, "no untrusted content in play for this call",
                               policy_id)

    def __repr__(self) -> str:
        return f"ContainUntrusted(policy_id={self.policy_id!r})"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        if not context.tainted or not (resource.egress or resource.side_effect):
            return self._clean
        what = " and ".join(name for name, on in (("sends data out (egress)", resource.egress),
                                                  ("has side effects", resource.side_effect)) if on)
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"the session has read untrusted content, and '{action.tool}' {what}; "
                        "a person must approve this call", self.policy_id)


contain_untrusted = ContainUntrusted()


TRUSTED_ORIGINS = frozenset({"user", "trusted"})  # origins a party may come from unasked


class ContainUntrustedFlows:
    """Per-argument containment: a call whose declared party (recipient, account, URL, ...)
    could only have come from untrusted content or from nowhere, or that sends untrusted data
    out through a tool that declares no parties, needs an approval. Unlike ``contain_untrusted``
    (one taint bit for the whole session), a payment to the account the user named still runs
    after the agent has read a phishing e-mail."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from its arguments alone: no I/O (see tether.policy.deadline)

    def __init__(self, policy_id: str = "contain-untrusted-flows") -> None:
        self.policy_id = policy_id
        self._clean = Decision(Effect.ALLOW, "every party of this call has a trusted origin",
                               policy_id)

    def __repr__(self) -> str:
        return f"ContainUntrustedFlows(policy_id={self.policy_id!r})"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        if not (resource.egress or resource.side_effect):
            return self._clean
        for party in sorted(resource.parties):
            if party not in action.arguments:
                continue
            origins = context.provenance.get(party) or frozenset()
            if origins and not origins & TRUSTED_ORIGINS:
                came = " or ".join(sorted(origins))
                return Decision(Effect.REQUIRE_APPROVAL,
                                f"'{party}' of '{action.tool}' could only have come from {came} "
                                "content, not from the user or a trusted tool; a person must "
                                "approve this call", self.policy_id)
        if resource.egress and not resource.parties:
            tainted = sorted(name for name in action.arguments
                             if "untrusted" in (context.provenance.get(name) or ()))
            if tainted:
                return Decision(Effect.REQUIRE_APPROVAL,
                                f"'{action.tool}' sends data out and declares no parties, and "
                                f"{tainted} carry untrusted content; a person must approve "
                                "this call", self.policy_id)
        return self._clean


contain_untrusted_flows = ContainUntrustedFlows()
