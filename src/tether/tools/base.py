"""The tool seam: what a tool declares about itself and how the runtime calls it.

Decision: a tool is data (name, description, schema, metadata) plus one async ``invoke``. Every
fact a policy may need (tags, risk, side effect, egress, output trust, owner) is declared up
front as frozen metadata, because the permission layer decides on declarations, never on what a
tool says about itself at call time. Server-side context reaches a tool through ``ToolContext``,
never through the model-visible schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

from tether.errors import InvalidArgument, RunError, WrongType
from tether.records import fast_init
from tether.tools.asking import SessionAsking
from tether.tools.caller import SILENT, Caller
from tether.types import ToolSpec

Risk = Literal["low", "medium", "high", "critical"]
Trust = Literal["trusted", "untrusted"]
RISKS: tuple[Risk, ...] = ("low", "medium", "high", "critical")


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """Declared facts about a tool. Defaults are the cautious ones a policy can rely on."""

    tags: frozenset[str] = frozenset()
    risk: Risk = "low"
    side_effect: bool = False
    egress: bool = False
    output_trust: Trust = "trusted"
    timeout: float = 30.0
    idempotent: bool = False
    owner: str | None = None
    credentials: bool = False  # receives a ScopedToken from the CredentialBroker at call time
    # arguments that name a party — a recipient, an account, a URL, a participant, the id of a
    # thing destroyed — where a value an attacker planted would do harm
    parties: frozenset[str] = frozenset()
    # words that ask for what the tool does ("reservation", "book+hotel": both words); a
    # request that uses none of them did not ask for it (tether.policy.presets.ScopeToRequest)
    intents: frozenset[str] = frozenset()
    # keys of an untrusted structured result whose values the third party who wrote the rest
    # cannot choose (an id the system assigned): provenance sees them as trusted
    trusted_fields: frozenset[str] = frozenset()
    # keys of the result whose values are private, and their kind ({"passport_number":
    # "passport"}; "*" for the whole result): tether.runtime.provenance.labels follows them into
    # arguments
    private: Mapping[str, str] = field(default_factory=dict)
    # the calls whose results ``private`` labels, by argument value ({"channel": ["private"]}:
    # only the private channel's messages); empty: every call's
    private_when: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # arguments besides the parties that shape the effect (an amount, a date, a title, a
    # body): one copied whole from untrusted text makes a side effect wait
    # (tether.policy.containment.UntrustedShapes). None: every argument not a party — the safe
    # default; an empty set: none but the parties
    shapes: frozenset[str] | None = None
    # arguments that choose what a read returns (a query, an id): one only untrusted text
    # supplied makes the result untrusted (tether.runtime.provenance.inherited). None: every
    # argument — the safe default; an empty set: none (a confirmation, whose result is that of
    # the call already staged and governed, whatever code it is given)
    selects: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.private, Mapping) or not all(
                isinstance(k, str) and k and isinstance(v, str) and v.split() == [v]
                for k, v in self.private.items()):
            raise WrongType("private maps result keys ('*' for the whole result) to the kind "
                            "of data they hold, one word each: {'passport_number': 'passport'}")
        object.__setattr__(self, "private", MappingProxyType(
            {k: v.casefold() for k, v in sorted(self.private.items())}))
        object.__setattr__(self, "private_when", _private_when(self.private_when, self.private))
        for name in ("shapes", "selects"):  # None (every argument) or a set of names
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str):
                raise WrongType(f"{name} must be a collection of argument names such as "
                                f"{{{value!r}}}, not the string {value!r}")
            object.__setattr__(self, name, frozenset(value))
        for name, what in (("tags", "strings"), ("parties", "argument names"),
                           ("trusted_fields", "keys"), ("intents", "words")):
            value = getattr(self, name)
            if isinstance(value, str):  # frozenset("payments") would be a set of letters
                raise WrongType(f"{name} must be a collection of {what} such as "
                                f"{{{value!r}}}, not the string {value!r}")
            if not isinstance(value, frozenset):
                object.__setattr__(self, name, frozenset(value))
        both = sorted(self.parties & (self.shapes or frozenset()))
        if both:
            raise InvalidArgument(f"{both} are parties (where they came from is checked as a "
                                  "party's); shapes lists the other arguments that shape the "
                                  "effect")
        words = frozenset(word.casefold() for word in self.intents)
        if any(not all(part and part.split() == [part] for part in word.split("+"))
               for word in words):
            raise InvalidArgument(f"intents are words, or words joined by '+' that must all be "
                                  f"asked for (book+hotel), got {sorted(self.intents)}")
        object.__setattr__(self, "intents", words)
        if self.risk not in RISKS:
            raise InvalidArgument(f"risk must be one of {RISKS}, got {self.risk!r}")
        if self.output_trust not in ("trusted", "untrusted"):
            raise InvalidArgument(f"output_trust must be 'trusted' or 'untrusted', got "
                                  f"{self.output_trust!r}")
        if not (self.timeout > 0):  # also rejects NaN
            raise InvalidArgument("timeout must be a positive number of seconds, got "
                                  f"{self.timeout!r}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tags": sorted(self.tags), "risk": self.risk, "side_effect": self.side_effect,
            "egress": self.egress, "output_trust": self.output_trust, "owner": self.owner,
            "idempotent": self.idempotent,
        }
        if self.parties:  # only when declared: a recipe without any keeps its fingerprint
            out["parties"] = sorted(self.parties)
        if self.intents:
            out["intents"] = sorted(self.intents)
        if self.trusted_fields:
            out["trusted_fields"] = sorted(self.trusted_fields)
        if self.private:
            out["private"] = dict(self.private)
        if self.private_when:
            out["private_when"] = {k: sorted(v) for k, v in self.private_when.items()}
        if self.shapes is not None:
            out["shapes"] = sorted(self.shapes)
        if self.selects is not None:
            out["selects"] = sorted(self.selects)
        return out

    def private_for(self, arguments: Mapping[str, Any]) -> Mapping[str, str]:
        """The private keys of a call's result: ``private``, unless ``private_when`` names
        argument values this call does not have (then none; an argument the call leaves out
        may have any value, so its result is private)."""
        if not self.private_when or all(
                name not in arguments or _names_one(arguments[name], values)
                for name, values in self.private_when.items()):
            return self.private
        return NOTHING_PRIVATE

    def __hash__(self) -> int:  # every field, a read-only mapping as its items
        return hash(tuple(tuple(value.items()) if isinstance(value, Mapping) else value
                          for value in (getattr(self, f.name) for f in fields(self))))


NOTHING_PRIVATE: Mapping[str, str] = MappingProxyType({})


def _spelled(value: Any) -> str:
    """An argument's value as ``private_when`` compares it: case and spacing aside."""
    return " ".join(str(value).split()).casefold()


def _names_one(value: Any, values: frozenset[str]) -> bool:
    """Whether an argument names one of ``values`` (a list: any of its items does)."""
    items = value if isinstance(value, list | tuple) else [value]
    return any(_spelled(item) in values for item in items)


def _private_when(when: Any, private: Mapping[str, str]) -> Mapping[str, frozenset[str]]:
    if not isinstance(when, Mapping) or not all(
            isinstance(k, str) and k and not isinstance(v, str) and v
            and all(isinstance(x, str) for x in v) for k, v in when.items()):
        raise WrongType("private_when maps argument names to the values for which the result "
                        "is private: {'channel': ['private']}")
    if when and not private:
        raise WrongType("private_when says which calls' results are private; declare which "
                        "keys are (private) too")
    return MappingProxyType({k: frozenset(_spelled(x) for x in v)
                             for k, v in sorted(when.items())})


@fast_init
@dataclass(frozen=True, slots=True)
class ToolContext:
    """Server-side facts injected into a tool call. Never shown to the model."""

    session_id: str
    call_id: str
    step: int
    user_id: str | None = None
    tenant_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    credentials: Any = None  # a tether.credentials.ScopedToken for tools that declare one
    sub_budget: Callable[[], Any] | None = None  # the Budget a sub-agent may spend right now
    charge: Callable[[Any], None] | None = None  # adds a sub-agent's Spend to the caller's
    policy: Any = None  # the caller's policy: a sub-agent's calls must pass it too
    timeout: float | None = None  # seconds this call may take: its own, or what the budget left
    request: str = ""  # what the user asked the calling session: a sub-agent's request too
    # this call's span as a W3C traceparent (tether.tracing) when the recipe has telemetry:
    # a sub-agent runs under it, an MCP tool sends it in the request's _meta
    traceparent: str = ""
    telemetry: tuple[Callable[[Any], object], ...] = ()  # the caller's sinks: a sub-agent's too
    # what a call may ask of its session while it runs — a governed model call, a question for
    # a person (tether.tools.asking.SessionAsking, the runtime's SessionAsks, one per session: a
    # tool that asks gets its call's asks from it with for_call, so a tool that never asks costs
    # nothing): an MCP server's sampling and elicitation requests go through it
    asks: SessionAsking | None = None
    # whoever waits for the result (tether.tools.caller): an MCP client to tell progress and
    # logs to, or to ask; SILENT when nobody is (an agent's model)
    caller: Caller = SILENT


class ToolArgumentError(RunError, ValueError):
    """Arguments do not match the tool's schema. ``field`` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class ToolFailure(RunError):
    """Raised by a tool to fail with exactly ``text`` as its result (status ``error`` or
    ``timeout``), instead of the executor's ``Error: 'tool' failed: Type: message``. A rerun
    raises it to replay a recorded failure word for word."""

    def __init__(self, text: str, status: str = "error") -> None:
        super().__init__(text)
        self.text = text
        self.status = "timeout" if status == "timeout" else "error"


@runtime_checkable
class Tool(Protocol):
    """Anything the executor can call. ``blocking`` tools run on a daemon thread."""

    @property
    def name(self) -> str: ...

    @property
    def meta(self) -> ToolMeta: ...

    @property
    def spec(self) -> ToolSpec: ...

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return the validated arguments, or raise ToolArgumentError naming the field."""
        ...

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any: ...


class ToolWrapper:
    """A tool around another (``inner``): its name, metadata, schema, validation and call are
    the inner tool's unless a subclass says otherwise — an overlay's declared metadata, an
    evaluation's injected faults."""

    __slots__ = ("inner",)

    def __init__(self, inner: Tool) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def meta(self) -> ToolMeta:
        return self.inner.meta

    @property
    def spec(self) -> ToolSpec:
        return self.inner.spec

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.inner.validate(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        return await self.inner.invoke(arguments, context)
