"""Containment rules for an attacker who has read the policy: what provenance alone lets pass.

Why: ``contain_untrusted_flows`` asks where each *party* came from, and ``scope_to_request``
whether the request asks for the *kind* of action. An injection that knows both asks for the
user's own side effect once more — the same payment again, the same message to the same
colleague — with every value innocent and every word asked for; or it has the user's private
data sent to a party the user named. What tells such calls apart is read from the journal, so a
resumed run, a rerun and a what-if see the same: what the request asked for (the plan, read
before anything untrusted), what private data the session read, and the side effects it already
made (``Context.plan``, ``Context.labels``, ``Context.effects``).

Decision: ``ScopeToPlan`` checks a side effect against what the request asks for, read once
before anything untrusted (``tether.policy.plan``): the tool, and the parties its clause names.
``KeepPrivate`` lets private data the session read (``Context.labels``) leave only where the
request asks to send that kind of data with that tool. ``NoUnaskedRepeats`` makes a side effect
that repeats one already made — the same tool to the same parties (for a tool that declares
none, the same arguments that shape the effect) — wait for a person, unless the request asks
for the repetition ("twice", "again", "three times": the plan's count for the tool); an
``idempotent`` tool repeats harmlessly and is let be. ``UntrustedShapes`` makes a side effect
wait when a value other than a party that shapes it (``ToolMeta.shapes``: a title, an amount, a
body) was copied whole from untrusted text, unless the request points at a source to relay.
Each only answers ALLOW or REQUIRE_APPROVAL; stack them with
``contain_untrusted_flows`` (``contained`` in ``tether.evals.injection``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tether.policy.base import Action, Context, Decision, Effect, MadeEffect, Resource, Subject
from tether.policy.plan import (
    RequestPlan,
    links,
    named_hosts,
    names_a_source,
    read_request,
    same,
    unnamed_parties,
)
from tether.tokens import tokens
from tether.vouched import leaves


def plan_of(context: Context, resource: Resource) -> RequestPlan:
    """The session's request plan, or — where none was journaled (a context built by hand, a
    session recorded before plans) — the request read for this tool alone."""
    if context.plan is not None:
        return context.plan
    return read_request(context.request, [resource])


def _same(value: Any) -> Any:
    """A party's value as compared for sameness: as the plan compares a named one (whole
    tokens, case and spacing aside), a list's items in any order."""
    if isinstance(value, list | tuple):
        return sorted(same(v) for v in value)
    return same(value)


def repeats(resource: Resource, arguments: Mapping[str, Any],
            effects: Sequence[MadeEffect]) -> list[MadeEffect]:
    """The side effects already made that this call would repeat: the same tool to the same
    parties, or, for a tool that declares none, with the same arguments that shape the effect
    (``Resource.shaping``)."""
    same_tool = [e for e in effects if e.tool == resource.name]
    if not resource.parties:
        if resource.shapes is None:  # every argument shapes it
            return [e for e in same_tool if e.arguments == arguments]
        shapes = resource.shapes
        shaped = {name: value for name, value in arguments.items() if name in shapes}
        return [e for e in same_tool
                if {name: value for name, value in e.arguments.items() if name in shapes}
                == shaped]
    parties = sorted(resource.parties)
    wanted = [_same(arguments.get(name)) for name in parties]
    return [e for e in same_tool if [_same(e.arguments.get(name)) for name in parties] == wanted]


class NoUnaskedRepeats:
    """A side effect that repeats one the session already made waits for a person, unless the
    request asks for it that many times (see the module's docstring)."""

    __slots__ = ("_first", "policy_id")
    inline = True  # decides from its arguments and the journaled history alone: no I/O
    reads_provenance = False  # (tether.policy.reads)

    def __init__(self, policy_id: str = "no-unasked-repeats") -> None:
        self.policy_id = policy_id
        self._first = Decision(Effect.ALLOW, "not a repeat of a side effect already made",
                               policy_id)

    def __repr__(self) -> str:
        return f"NoUnaskedRepeats(policy_id={self.policy_id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if not resource.side_effect or resource.idempotent or not context.effects:
            return self._first
        earlier = repeats(resource, action.arguments, context.effects)
        if not earlier:
            return self._first
        asked = max((e.count for e in plan_of(context, resource).asks(action.tool)), default=1)
        ids = ", ".join(e.call_id for e in earlier)
        if len(earlier) < asked:
            return Decision(Effect.ALLOW, f"the request asks for this {asked} times; it ran "
                            f"{len(earlier)} ({ids})", self.policy_id)
        target = (f"to the same {', '.join(sorted(resource.parties))}" if resource.parties
                  else "with the same arguments")
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"'{action.tool}' already ran {target} in this session ({ids}) and the "
                        "request does not ask for it again; a person must approve this repeat",
                        self.policy_id)


no_unasked_repeats = NoUnaskedRepeats()
"""``NoUnaskedRepeats()``, ready to use."""


class ScopeToPlan:
    """A side-effecting tool runs unasked only when the request plan asks for it, to the
    parties its clause names (``tether.policy.plan``): "remind me to book a hotel" asks for a
    reminder, not a booking; "book a room at 'Le Marais Boutique'" asks for that hotel, not the
    one an injection names. A session without a plan is read from its request; one without a
    request (a gateway) asks for nothing: the scope fails closed."""

    __slots__ = ("_no_effect", "policy_id")
    inline = True  # decides from the journaled plan and the arguments alone: no I/O
    reads_provenance = False  # (tether.policy.reads)

    def __init__(self, policy_id: str = "scope-to-plan") -> None:
        self.policy_id = policy_id
        self._no_effect = Decision(Effect.ALLOW, "no side effect: nothing to scope", policy_id)

    def __repr__(self) -> str:
        return f"ScopeToPlan(policy_id={self.policy_id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if not resource.side_effect:
            return self._no_effect
        plan = plan_of(context, resource)
        entries = plan.asks(action.tool)
        if not entries:
            return Decision(Effect.REQUIRE_APPROVAL, _unasked(action.tool, resource, plan),
                            self.policy_id)
        unnamed = unnamed_parties(resource, action.arguments, plan, entries)
        if unnamed:
            return Decision(Effect.REQUIRE_APPROVAL,
                            f"the request asks for '{action.tool}' ({entries[0].clause!r}) but "
                            f"not for {', '.join(unnamed)}; a person must approve this call",
                            self.policy_id)
        return Decision(Effect.ALLOW, f"the request asks for it: {entries[0].clause!r}",
                        self.policy_id)


def _unasked(tool: str, resource: Resource, plan: RequestPlan) -> str:
    if not resource.intents:
        return (f"'{tool}' has side effects and declares no intents (the words that ask for "
                "it), so no request can ask for it; a person must approve this call, or "
                "declare its intents")
    mentioned = [(clause, why) for clause, why in plan.aside
                 if read_request(clause, [resource]).aside]
    if mentioned:
        whys = " or ".join(dict.fromkeys(why for _, why in mentioned))
        clauses = "; ".join(repr(clause) for clause, _ in mentioned)
        return (f"'{tool}' is only {whys} in the user's request ({clauses}), which does not "
                "ask for it; a person must approve this call")
    return (f"the user's request asks for none of what '{tool}' does "
            f"({', '.join(sorted(resource.intents))}); a person must approve this call")


scope_to_plan = ScopeToPlan()
"""``ScopeToPlan()``, ready to use."""


class KeepPrivate:
    """Private data the session read (``Context.labels``: an argument's kinds, from results
    whose tools declare private keys) leaves through an egress or side-effecting call only when
    the request asks to send that kind with that tool: a clause asking for the tool uses the
    kind's word ("e-mail my wife my passport number" lets ``passport`` go with ``send_email``).
    Anything else waits for a person, named in the reason: which argument, which kind."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from the journaled labels and plan alone: no I/O
    reads_provenance = False  # labels, not origins (tether.policy.reads)

    def __init__(self, policy_id: str = "keep-private") -> None:
        self.policy_id = policy_id
        self._clean = Decision(Effect.ALLOW, "no private data the request did not ask to send",
                               policy_id)

    def __repr__(self) -> str:
        return f"KeepPrivate(policy_id={self.policy_id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if not (resource.egress or resource.side_effect) or not context.labels:
            return self._clean
        plan = plan_of(context, resource)
        asked = {_singular(word) for e in plan.asks(action.tool) for word in tokens(e.clause)}
        unasked = sorted(f"{name} carries {kind}" for name, kinds in context.labels.items()
                         for kind in kinds if _singular(kind) not in asked)
        if not unasked:
            return self._clean
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"private data the session read would leave with '{action.tool}' "
                        f"({'; '.join(unasked)}) and the request does not ask to send it; a "
                        "person must approve this call", self.policy_id)


def _singular(word: str) -> str:
    """A word as a kind is compared: "messages" asks for "message" data and the other way."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word


keep_private = KeepPrivate()
"""``KeepPrivate()``, ready to use."""


class UntrustedShapes:
    """A side effect shaped by untrusted content alone waits: a value other than a party that
    shapes the effect (``ToolMeta.shapes``; by default every argument not a party) — an
    amount, a date, a title, a subject, a body — that every origin says was copied from text a
    third party wrote (a phishing text as a calendar event's title, an injected amount), in an
    egress or side-effecting call. Unless the clause asking for the tool points at a source (a
    URL, an e-mail address, a quoted file, or a thing written to be read: "post the article at
    www.x.com to general", "create the event based on the emails about it"; not the words that
    ask for the tool itself: "send a message to Alice" names no source): relaying what the
    user pointed at is what the user asked — unless the relayed text links to a host the
    request does not name (a phishing link in the page the user pointed at: whoever reads the
    relay is sent there). Values the model composed (``nowhere`` among their origins) are the
    link rule's (``contain_untrusted_flows``) and the plan's."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from the journaled provenance and plan alone: no I/O
    reads_provenance = True  # (tether.policy.reads)

    def __init__(self, policy_id: str = "untrusted-shapes") -> None:
        self.policy_id = policy_id
        self._clean = Decision(Effect.ALLOW, "no value of this call only untrusted text gave",
                               policy_id)

    def __repr__(self) -> str:
        return f"UntrustedShapes(policy_id={self.policy_id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if not (resource.egress or resource.side_effect):
            return self._clean
        copied = sorted(name for name in resource.shaping(action.arguments)
                        if (origins := context.provenance.get(name))
                        and origins <= UNTRUSTED_ONLY)
        if not copied:
            return self._clean
        plan = plan_of(context, resource)
        if any(names_a_source(e.clause, resource.intents) for e in plan.asks(action.tool)):
            named = named_hosts(plan)
            foreign = sorted({host for name in copied for text in leaves(action.arguments[name])
                              for host in links(text) if host not in named})
            if not foreign:
                return Decision(Effect.ALLOW, f"{copied} relay a source the request names",
                                self.policy_id)
            return Decision(Effect.REQUIRE_APPROVAL,
                            f"{copied} of '{action.tool}' relay untrusted text that links to "
                            f"{', '.join(foreign)}, which the request does not name: whoever "
                            "reads it is sent there; a person must approve this call",
                            self.policy_id)
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"{copied} of '{action.tool}' only untrusted text gave, and the request "
                        "names no source to relay; a person must approve this call",
                        self.policy_id)


UNTRUSTED_ONLY = frozenset({"untrusted"})
untrusted_shapes = UntrustedShapes()
"""``UntrustedShapes()``, ready to use."""
