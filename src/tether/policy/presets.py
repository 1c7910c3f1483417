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
from tether.tokens import tokens


class ContainUntrusted:
    """After untrusted input, egress and side-effecting tools need an approval."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from its arguments alone: no I/O (see tether.policy.deadline)
    reads_provenance = False  # one taint bit (tether.policy.reads)

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
"""``ContainUntrusted()``, ready to use: after untrusted input, egress and side-effecting tools
need an approval."""


TRUSTED_ORIGINS = frozenset({"user", "trusted"})  # origins a party may come from unasked
# a party of a tool this risky that untrusted content also names waits, even if a trusted tool
# shows it too: "delete file 13" names an id the drive's listing vouches for
CONTESTED_RISKS = frozenset({"high", "critical"})


class ContainUntrustedFlows:
    """Per-argument containment: a call whose declared party (recipient, account, URL, ...)
    could only have come from untrusted content or from nowhere, that sends untrusted data out
    through a tool that declares no parties, or that sends to its (vetted) parties a message the
    model wrote around a link only untrusted content gave (a phishing link relayed to a
    colleague), needs an approval; so does a party of a high- or critical-risk tool that
    untrusted content names, unless the user named it too ("delete file 13" names an id the
    drive's listing shows as well: which of the two the model followed, no one can say).
    Unlike ``contain_untrusted`` (one taint bit for the whole session), a payment to the
    account the user named still runs after the agent has read a phishing e-mail."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from its arguments alone: no I/O (see tether.policy.deadline)
    reads_provenance = True  # where each party came from (tether.policy.reads)

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
            if (resource.risk in CONTESTED_RISKS and "user" not in origins
                    and origins >= {"trusted", "untrusted"}):
                return Decision(Effect.REQUIRE_APPROVAL,
                                f"'{party}' of '{action.tool}' (risk {resource.risk}) is named "
                                "by untrusted content, and not by the user: a trusted tool "
                                "showing it too does not say which one the model followed; a "
                                "person must approve this call", self.policy_id)
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
        elif resource.egress:  # its parties passed: is a planted link riding along?
            planted = sorted(name for name in action.arguments if name not in resource.parties
                             and _planted_in_composed(context.provenance.get(name)))
            if planted:
                return Decision(Effect.REQUIRE_APPROVAL,
                                f"'{action.tool}' sends {planted} out: text the model wrote "
                                "around a link only untrusted content gave; a person must "
                                "approve this call", self.policy_id)
        return self._clean


def _planted_in_composed(origins: frozenset[str] | None) -> bool:
    """Text the model composed (found nowhere whole) around a piece — a link — that only
    untrusted content gave. A verbatim relay of untrusted text is not this: the user may well
    have asked for it ("forward the article to Alice"), and its parties were vetted."""
    return (origins is not None and "nowhere" in origins and "untrusted" in origins
            and not origins & TRUSTED_ORIGINS)


contain_untrusted_flows = ContainUntrustedFlows()
"""``ContainUntrustedFlows()``, ready to use: a call whose party could only have come from
untrusted content needs an approval."""


class ScopeToRequest:
    """A side-effecting tool runs unasked only when the user's request asks for what it does.

    Why: provenance stops an injected *value* (an attacker's account, address, URL), but not an
    injected *action* whose values are all innocent — "book the most expensive hotel in Paris"
    names a hotel the trusted listing also names. What the user asked for is known before any
    untrusted text is read: the request (``context.request``, put there by the runtime from the
    session's task). Each side-effecting tool declares the words that ask for it (``intents``:
    ``reserve_hotel`` — reservation, book+hotel, where ``+`` joins words that must all be
    there: "book a table" does not ask for a hotel); a request that uses none of them did not
    ask for the tool, so a call to it waits for a person. Words match whole tokens, case
    aside ("invited" does not ask to invite). A side-effecting tool that declares no intents,
    and every side effect in a session without a request (the gateway), needs an approval too:
    the scope fails closed. Tools without side effects are never scoped. It only answers ALLOW
    or REQUIRE_APPROVAL; stack it: ``DenyOverrides(contain_untrusted_flows, scope_to_request)``.
    """

    __slots__ = ("_asked", "_no_effect", "policy_id")
    inline = True  # decides from its arguments alone: no I/O (see tether.policy.deadline)
    reads_provenance = False  # the request's words (tether.policy.reads)

    def __init__(self, policy_id: str = "scope-to-request") -> None:
        self.policy_id = policy_id
        self._asked = Decision(Effect.ALLOW, "the user's request asks for what this tool does",
                               policy_id)
        self._no_effect = Decision(Effect.ALLOW, "no side effect: nothing to scope", policy_id)

    def __repr__(self) -> str:
        return f"ScopeToRequest(policy_id={self.policy_id!r})"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        if not resource.side_effect:
            return self._no_effect
        if not resource.intents:
            return Decision(Effect.REQUIRE_APPROVAL,
                            f"'{action.tool}' has side effects and declares no intents (the "
                            "words that ask for it), so no request can ask for it; a person "
                            "must approve this call, or declare its intents", self.policy_id)
        words = set(tokens(context.request))
        if any(words.issuperset(intent.split("+")) for intent in resource.intents):
            return self._asked
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"the user's request asks for none of what '{action.tool}' does "
                        f"({', '.join(sorted(resource.intents))}); a person must approve "
                        "this call", self.policy_id)


scope_to_request = ScopeToRequest()
"""``ScopeToRequest()``, ready to use: a side-effecting tool the user's request did not ask for
waits for a person."""
