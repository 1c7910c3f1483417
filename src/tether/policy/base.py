"""The policy seam: a SARC request in, a Decision out, and failure means deny.

Decision: a policy sees four frozen records built by the runtime from real data on every call —
Subject (who, from the session, never from model arguments), Action (tool and arguments),
Resource (the tool's declared metadata) and Context (step, spend, budget left, taint, time and
caller extras). ``decide`` wraps any policy so that an exception, or an answer that is not a
Decision, becomes a DENY whose reason names the failure: a broken policy never opens the gate.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tether.records import fast_init

if TYPE_CHECKING:
    from tether.policy.request_plan import RequestPlan


class Effect(enum.StrEnum):
    """What a policy's ``Decision`` does with a tool call, enforced before anything runs."""

    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"
    PARTIAL_ALLOW = "partial_allow"
    MASK = "mask"
    DEGRADE = "degrade"


RESTRICTIVENESS: tuple[Effect, ...] = (
    Effect.DENY,
    Effect.REQUIRE_APPROVAL,
    Effect.DEGRADE,
    Effect.PARTIAL_ALLOW,
    Effect.MASK,
    Effect.ALLOW,
)
"""Effects from most to least restrictive: ``DenyOverrides`` picks the earliest one any member
returned; compare two effects with ``RESTRICTIVENESS.index``."""


@dataclass(frozen=True, slots=True)
class Subject:
    """Who a call is made for: from the session (``agent.session(user_id=..., tenant_id=...,
    roles=...)``) and the agent's name, never from model arguments."""

    user_id: str | None = None
    tenant_id: str | None = None
    roles: frozenset[str] = frozenset()
    agent: str = "agent"


@fast_init
@dataclass(frozen=True, slots=True)
class Action:
    """What a call does: the tool's name and the arguments the model gave it."""

    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Resource:
    """What a call touches: the tool's declared metadata (``tether.tools.ToolMeta``), never
    what the tool says about itself at call time."""

    name: str
    tags: frozenset[str] = frozenset()
    risk: str = "low"
    side_effect: bool = False
    egress: bool = False
    output_trust: str = "trusted"
    owner: str | None = None
    idempotent: bool = False
    parties: frozenset[str] = frozenset()  # arguments that name a party (ToolMeta.parties)
    intents: frozenset[str] = frozenset()  # words that ask for the tool (ToolMeta.intents)
    # arguments besides the parties that shape the effect (ToolMeta.shapes); None: all others
    shapes: frozenset[str] | None = None

    def shaping(self, arguments: Mapping[str, Any]) -> list[str]:
        """The arguments of a call, besides its parties, that shape its effect: the declared
        ``shapes``, or every argument that is not a party."""
        if self.shapes is None:
            return [name for name in arguments if name not in self.parties]
        return [name for name in arguments if name in self.shapes]

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON data, as journaled."""
        out = {"name": self.name, "tags": sorted(self.tags), "risk": self.risk,
               "side_effect": self.side_effect, "egress": self.egress,
               "output_trust": self.output_trust, "owner": self.owner,
               "idempotent": self.idempotent}
        if self.parties:
            out["parties"] = sorted(self.parties)
        if self.intents:
            out["intents"] = sorted(self.intents)
        if self.shapes is not None:
            out["shapes"] = sorted(self.shapes)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Resource:
        """The resource ``to_dict`` wrote."""
        return cls(data["name"], frozenset(data.get("tags", ())), data.get("risk", "low"),
                   data.get("side_effect", False), data.get("egress", False),
                   data.get("output_trust", "trusted"), data.get("owner"),
                   data.get("idempotent", False), frozenset(data.get("parties", ())),
                   frozenset(data.get("intents", ())),
                   frozenset(data["shapes"]) if "shapes" in data else None)


@dataclass(frozen=True, slots=True)
class MadeEffect:
    """A side effect this session already made: a side-effecting call that began to run (its
    ``tool.started`` is journaled), with the arguments it was decided on."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]


@fast_init
@dataclass(frozen=True, slots=True)
class Context:
    """Where a call stands, built by the runtime for every decision.

    Args:
        session_id: The session's id.
        step: Model turns taken so far.
        spend: What the session spent so far: ``tokens``, ``cost_usd``, ``steps``,
            ``tool_calls``, ``seconds``.
        budget_left: What each limit has left (None: unlimited).
        tainted: Whether any untrusted tool output has entered the conversation.
        time: When the decision is made (seconds since the epoch).
        extra: The caller's facts: ``agent.session(context=...)``.
        request: The user's request: the session's task (or the ``request=`` it was given),
            put here by the runtime, never by the caller or the model; "" where there is none.
        provenance: Where each argument's value could have come from: a set of ``"user"``,
            ``"trusted"``, ``"untrusted"``, ``"nowhere"``; computed only if read.
        planned: The call is a strategy's, from its own validated plan, not one a model asked
            for (LLM+P's steps).
        effects: The side effects this session already made, in order, so a policy can tell a
            repeat from a first call.
        plan: What the request asks for, read before anything untrusted; None where no plan
            was read.
        labels: The kinds of private data each argument carries (``"passport"``, ``"iban"``),
            read from results whose tools declare private keys; computed only if read.
    """

    session_id: str
    step: int
    spend: Mapping[str, Any]
    budget_left: Mapping[str, Any]
    tainted: bool = False
    time: float = field(default_factory=time.time)
    extra: Mapping[str, Any] = field(default_factory=dict)
    # the user's request: the session's task, put here by the runtime — never by the caller's
    # context= (that is ``extra``), never by the model; "" where there is none (a gateway)
    request: str = ""
    # where each argument's value could have come from: a set of "user", "trusted",
    # "untrusted", "nowhere" (tether.runtime.provenance.values); computed only if read
    provenance: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # a strategy's call from its own validated plan (``Handle.call_planned``: LLM+P's steps),
    # not one a model asked for — a policy can hold a plan's side effects to its own rule
    planned: bool = False
    # the side effects this session already made, in order (folded from the journal, so a
    # resumed run and a what-if see the same): a policy can tell a repeat from a first call
    effects: Sequence[MadeEffect] = ()
    # what the request asks for, read once before anything untrusted (tether.policy.plan;
    # journaled in the session's start); None where no plan was read (a gateway)
    plan: RequestPlan | None = None
    # the kinds of private data each argument carries (tether.runtime.provenance.labels: "passport",
    # "iban"), read from results whose tools declare private keys; computed only if read
    labels: Mapping[str, frozenset[str]] = field(default_factory=dict)


@fast_init
@dataclass(frozen=True, slots=True)
class Decision:
    """A policy's answer for one call.

    Args:
        effect: What happens to the call (``Effect``).
        reason: Why, in words: journaled, and shown to the model when the call is refused.
        policy_id: The rule or policy that decided.
        fields: ``PARTIAL_ALLOW``: the arguments that pass; ``MASK``: the fields to redact.
        mask_in: ``MASK``: where to redact: ``"input"``, ``"output"``, ``"journal"``.
        fallback: ``DEGRADE``: the tool to run instead (its call is decided again).
    """

    effect: Effect
    reason: str = ""
    policy_id: str = ""
    fields: tuple[str, ...] = ()  # PARTIAL_ALLOW: fields that pass; MASK: fields to redact
    mask_in: tuple[str, ...] = ()  # MASK: where to redact ("input", "output", "journal")
    fallback: str | None = None  # DEGRADE: the tool to run instead

    @property
    def allowed(self) -> bool:
        """Whether the effect is ``ALLOW``."""
        return self.effect is Effect.ALLOW

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON data, as journaled (the empty parts left out)."""
        out: dict[str, Any] = {"effect": self.effect.value, "reason": self.reason,
                               "policy_id": self.policy_id}
        if self.fields:
            out["fields"] = list(self.fields)
        if self.mask_in:
            out["mask_in"] = list(self.mask_in)
        if self.fallback:
            out["fallback"] = self.fallback
        return out


@runtime_checkable
class Policy(Protocol):
    """Decides every tool call before it runs: any object with this ``evaluate`` method (a
    class of your own, ``tether.policy.YamlPolicy``, the combinators and presets of
    ``tether.policy``). An exception or an answer that is not a ``Decision`` denies the call.
    A policy that does no I/O may say so with a class attribute ``inline = True``; any other
    has ``Agent(policy_timeout=...)`` seconds to decide."""

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        """The decision for one call: who (``subject``), what (``action``), on what tool
        (``resource``), where the session stands (``context``)."""
        ...


@runtime_checkable
class DenyParts(Protocol):
    """A policy made of parts any one of which, denying, makes the whole deny (the members of
    a ``DenyOverrides``, ``FirstMatch`` or ``DefaultDeny``; a YAML policy's deny rules).

    Tool selection asks each part alone whether it refuses a tool without reading the call,
    when the whole read the arguments: one part's rule on ``amount`` must not hide another
    part's outright refusal. A part is believed only for a deny the whole also gives, so a
    policy that lists its parts wrongly can hide nothing the gate would let pass."""

    @property
    def deny_parts(self) -> tuple[object, ...]: ...


class AllowAll:
    """The default policy: every call is allowed (and still journaled)."""

    inline = True  # no I/O: decides on the caller's thread (see tether.policy.deadline)
    reads_provenance = False  # nothing to inherit (tether.policy.reads)

    def __repr__(self) -> str:
        return "AllowAll()"

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        return ALLOWED


ALLOWED = Decision(Effect.ALLOW, "allowed by default", "allow-all")


def decide(
    policy: Policy, subject: Subject, action: Action, resource: Resource, context: Context
) -> Decision:
    """Evaluate ``policy`` and fail closed: an exception or a non-Decision denies."""
    try:
        decision = policy.evaluate(subject, action, resource, context)
    except Exception as exc:
        return Decision(Effect.DENY, f"policy error ({type(exc).__name__}: {exc}); denied",
                        policy_id_of(policy))
    if decision is None:
        return Decision(Effect.DENY, "policy abstained (returned None) and nothing supplied a "
                        "default; denied — wrap it in DefaultDeny(...) or FirstMatch(..., "
                        "default=...)", policy_id_of(policy))
    if not isinstance(decision, Decision) or not isinstance(decision.effect, Effect):
        return Decision(Effect.DENY, f"policy returned {type(decision).__name__}, not a "
                        "Decision; denied", policy_id_of(policy))
    problem = "" if decision.effect in _PLAIN else malformed(decision)
    if problem:
        return Decision(Effect.DENY, f"policy returned a malformed {decision.effect.value} "
                        f"decision ({problem}); denied", decision.policy_id or
                        policy_id_of(policy))
    return decision


MASK_TARGETS = ("input", "output", "journal")
_PLAIN = frozenset({Effect.ALLOW, Effect.DENY})  # effects that read no fields, targets, fallback


def malformed(decision: Decision) -> str:
    """Why a decision cannot be enforced as written ('' when it can). An effect that would be
    applied half-way (a MASK naming no field, a target nobody knows) must not pass as one."""
    effect, fields = decision.effect, decision.fields
    if not isinstance(fields, tuple) or not all(isinstance(f, str) and f for f in fields):
        return "fields must be a tuple of field names"
    if not isinstance(decision.mask_in, tuple) or any(
            t not in MASK_TARGETS for t in decision.mask_in):
        return f"mask_in must name only {', '.join(MASK_TARGETS)}"
    if effect in (Effect.MASK, Effect.PARTIAL_ALLOW) and not fields:
        return "it names no fields"
    if effect is Effect.DEGRADE and not (isinstance(decision.fallback, str)
                                         and decision.fallback):
        return "it names no fallback tool"
    return ""


def policy_id_of(policy: object) -> str:
    """The id a policy reports itself by: its ``policy_id`` attribute, else its class name."""
    return str(getattr(policy, "policy_id", None) or type(policy).__name__)
