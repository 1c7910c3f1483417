"""One ACS session as the Guardian holds it: its contract, what it has seen, its chain, its door.

Why: an ACS session outlives a Guardian process — the observed agent keeps its session id and
keeps sending — so whatever a later request is judged by (the handshake's contract, the request
ids already used, the Intent, the chain head) must survive a restart. Decision: the journal is
that memory. Every request the Guardian takes in is journaled (``acs.hook``) with its request id,
nonce and chain entry — the handshake with its contract, ``sessionStart`` with its Intent —
before it is answered; a Guardian that meets a session it does not hold reads its earlier
activations back from the store (journal sessions ``acs-<digest>-1``, ``-2``, ...) and opens
the next. A replayed request is then refused after a restart exactly as before it; with the
``memory://`` store there is nothing to read back, and the docs say so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.journal.views.acs_steps import GUARDIAN_CONTEXT
from tether.policy.base import Policy
from tether.policy.quotas import Quota
from tether.runtime.accounting.budget import Budget
from tether.runtime.approvals.approver import Approver
from tether.runtime.approvals.requests import StoredApprovals
from tether.runtime.chokepoint.gateway import Gateway
from tether.serve.acs.dispositions import Witness
from tether.serve.acs.wire import SESSION_REFUSED, AcsRefused
from tether.store.base import Store
from tether.tools.base import Tool
from tether.types import Event
from tether.vocabulary import EventType

MAX_SEEN = 100_000  # request ids one session may use: past this, it must start a new session


@dataclass(frozen=True, slots=True)
class Contract:
    """What the handshake negotiated for a session."""

    version: str
    methods: frozenset[str]
    can_ask: bool  # the client declared approver types: it can route an ASK

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "methods": sorted(self.methods),
                "can_ask": self.can_ask}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Contract:
        return cls(str(data["version"]), frozenset(data["methods"]), bool(data["can_ask"]))


@dataclass(frozen=True, slots=True)
class Intent:
    """The session's Intent (§8.4): the capabilities it was opened for, fixed once set."""

    parsed: frozenset[str]
    strict: bool

    def to_dict(self) -> dict[str, Any]:
        return {"parsed": sorted(self.parsed), "strict": self.strict}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Intent:
        return cls(frozenset(data["parsed"]), bool(data["strict"]))


@dataclass(slots=True)
class AcsSession:
    """The Guardian's state of one ACS session (rebuilt from the journal after a restart)."""

    session_id: str
    agent_id: str
    gateway: Gateway
    witness: Witness
    contract: Contract | None = None
    intent: Intent | None = None
    head: str | None = None
    steps: int = 0
    defers: int = 0
    seen: set[str] = field(default_factory=set)
    nonces: set[str] = field(default_factory=set)
    output_masks: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def journal(self, record: Mapping[str, Any]) -> None:
        """Journal one hook and the Guardian's answer to it (flushed by the caller)."""
        self.gateway.journal.append(EventType.ACS_HOOK, record)


def journal_id(session_id: str, activation: int) -> str:
    """The tether journal session of the ``activation``-th Guardian activation of an ACS
    session (a digest: an ACS session id is the peer's to choose)."""
    return f"acs-{hashlib.sha256(session_id.encode()).hexdigest()[:24]}-{activation}"


@dataclass(frozen=True, slots=True)
class Door:
    """What every session's gateway is built with."""

    policy: Policy
    tools: tuple[Tool, ...]  # ObservedTools, some wrapped with declared metadata
    store: Store | None
    approvals: StoredApprovals | None
    quotas: tuple[Quota, ...]
    budget: Budget | None
    tenant_id: str | None
    approval_ttl: float
    telemetry: tuple[Callable[[Event], object], ...] = ()  # sinks told of every session's events
    approver: Approver | None = None  # decides approval requests at once; None: a person


def open_session(door: Door, session_id: str, agent_id: str) -> AcsSession:
    """The session ``session_id`` as the journal left it, with a gateway of its own for this
    activation."""
    earlier = _earlier(door.store, session_id)
    if any(event.type == EventType.ACS_HOOK and event.data.get("method") == "steps/sessionEnd"
           and "refused" not in event.data for events in earlier for event in events):
        raise AcsRefused(SESSION_REFUSED, "session_ended",
                         "this session ended (steps/sessionEnd); start a new one")
    witness = Witness()
    gateway = Gateway(door.tools, policy=door.policy, client=agent_id, budget=door.budget,
                      store=door.store, approvals=door.approvals, tenant_id=door.tenant_id,
                      approval_ttl=door.approval_ttl, check_policy_names=False,
                      session_id=journal_id(session_id, len(earlier) + 1),
                      telemetry=door.telemetry, quotas=door.quotas,
                      context={GUARDIAN_CONTEXT: session_id}, approver=door.approver)
    # told of every event on the journal's bus, not as a telemetry sink: a sink turns on each
    # call's trace span, which cost a call about 50 thousand instructions with no sink to read it
    gateway.journal.bus.subscribe(witness)
    session = AcsSession(session_id, agent_id, gateway, witness)
    for events in earlier:
        for event in events:
            if event.type == EventType.ACS_HOOK:
                _restore(session, event.data)
    return session


def known(store: Store | None, session_id: str) -> bool:
    """Whether an earlier activation journaled the session (a restart must not forget it)."""
    return store is not None and bool(store.read(journal_id(session_id, 1)))


def _earlier(store: Store | None, session_id: str) -> list[list[Any]]:
    """The journals of the session's earlier activations, oldest first."""
    found: list[list[Any]] = []
    while store is not None:
        events = store.read(journal_id(session_id, len(found) + 1))
        if not events:
            break
        found.append(events)
    return found


def _restore(session: AcsSession, data: Mapping[str, Any]) -> None:
    rid, nonce = data.get("request_id"), data.get("nonce")
    if isinstance(rid, str):
        session.seen.add(rid)
    if isinstance(nonce, str):
        session.nonces.add(nonce)
    if isinstance(data.get("contract"), Mapping):
        session.contract = Contract.from_dict(data["contract"])
    if isinstance(data.get("intent"), Mapping):
        session.intent = Intent.from_dict(data["intent"])
    mask = data.get("output_mask")
    if isinstance(mask, Mapping):
        session.output_masks[str(mask["tool"])] = tuple(mask["fields"])
    entry = data.get("entry")
    if isinstance(entry, Mapping):
        session.head, session.steps = entry["entry_hash"], session.steps + 1


def tool_names(policy: object, declared: Iterable[str]) -> set[str]:
    """The tools a Guardian knows: those its tools file declares and those its YAML policy's
    rules name (a tool neither mentions is refused: its metadata is unknown)."""
    from tether.policy.names import yaml_policies

    names = set(declared)
    for found in yaml_policies(policy):
        for rule in getattr(found, "rules", ()):
            names |= set(rule.names)
    return names
