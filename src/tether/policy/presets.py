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
