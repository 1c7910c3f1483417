"""The policy gate: build the SARC request from real data, decide, journal the decision.

Decision: the subject comes from the session (who started it), never from model arguments; the
resource from the tool's declared metadata; the context from the live tally. The decision is
journaled before anything runs — with the arguments as the decision allows the journal to show
them — and ``decide`` makes a broken policy deny.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from tether.journal.chain import Journal
from tether.policy.base import Action, Context, Decision, Effect, Policy, Resource, Subject, decide
from tether.policy.deadline import decide_within, runs_inline
from tether.policy.reads import reads_provenance
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.provenance.inherited import asked_by_untrusted
from tether.runtime.provenance.labels import ArgumentLabels
from tether.runtime.provenance.values import ArgumentProvenance, Sightings
from tether.runtime.record.state import SessionState
from tether.tools.base import Tool, ToolMeta
from tether.types import PLANNED_CALL_PREFIX, detached
from tether.vocabulary import EventType

# read on every call: bound once (an enum member read through its class is slow, benchmarks.md)
_TOOL_DECISION = EventType.TOOL_DECISION
_DENY = Effect.DENY
_NONE: frozenset[str] = frozenset()  # a tool none of whose arguments chooses what it returns

CHARGED = frozenset({Effect.ALLOW, Effect.PARTIAL_ALLOW, Effect.MASK})
Shown = Callable[[Mapping[str, Any], Decision], Mapping[str, Any]]
Keep = Callable[[str, Mapping[str, Any]], None]  # (call id, arguments)


def resource_of(tool: Tool) -> Resource:
    m = tool.meta
    return Resource(tool.name, m.tags, m.risk, m.side_effect, m.egress, m.output_trust, m.owner,
                    m.idempotent, m.parties, m.intents, m.shapes)


class PolicyGate:
    __slots__ = ("_accountant", "_extra", "_inherits", "_inline", "_journal", "_keep",
                 "_policy", "_resources", "_session_id", "_sightings", "_state", "_timeout",
                 "request", "subject")

    def __init__(self, policy: Policy, subject: Subject, session_id: str, journal: Journal,
                 state: SessionState, accountant: Accountant, extra: Mapping[str, Any],
                 keep: Keep | None = None, timeout: float | None = None,
                 request: str = "") -> None:
        self._policy = policy
        self._inline = runs_inline(policy)
        # results inherit the distrust of the calls that asked for them (provenance.inherited):
        # only where the policy decides on provenance at all (tether.policy.reads)
        self._inherits = reads_provenance(policy)
        self._timeout = timeout  # seconds a policy that may block has to decide
        self._keep = keep  # where arguments the journal hides are kept, if anywhere
        self.subject = subject
        self._session_id = session_id
        self._journal = journal
        self._state = state
        self._accountant = accountant
        self._extra = extra
        self.request = request  # what the user asked: the session's task, or a caller's request
        self._sightings = Sightings(request, state.ran)
        self._resources: dict[str, Resource] = {}

    @property
    def policy(self) -> Policy:
        """The policy deciding this session's calls (a sub-agent's must pass it too)."""
        return self._policy

    def decide(self, tool: Tool, call_id: str, arguments: Mapping[str, Any], signature: str,
               shown: Shown) -> Decision:
        resource = self._resources.get(tool.name)
        first = resource is None  # the first decision on this tool in this activation
        if resource is None:
            resource = self._resources[tool.name] = resource_of(tool)
        provenance = ArgumentProvenance(arguments, self._sightings)
        labels = ArgumentLabels(arguments, self._state.private)
        context = self._context(provenance, call_id.startswith(PLANNED_CALL_PREFIX), labels)
        action = Action(tool.name, arguments)
        if self._inline:
            decision = decide(self._policy, self.subject, action, resource, context)
        else:  # it may block: bounded by its deadline and by the time budget, and given its
            # own copy (a thread left running past its deadline must not reach what the tool
            # will run with)
            decision = decide_within(self._policy, self._deadline(context), self.subject,
                                     Action(tool.name, detached(arguments)), resource, context,
                                     inline=False)
        visible = shown(arguments, decision)
        if visible is not arguments:  # hidden here, so hidden everywhere else in the journal
            if self._keep is not None:
                self._keep(call_id, arguments)
            for key, value in arguments.items():
                if visible.get(key) is not value:
                    self._journal.hide_argument(call_id, key)
                    text = value if isinstance(value, str) else json.dumps(value)
                    self._journal.redact(text)
        record = {
            "call_id": call_id, "tool": tool.name, "arguments": visible,
            "decision": decision, "signature": signature,
            "charged": decision.effect in CHARGED,
            # what the policy saw, so a stored decision can be re-asked of another policy
            "context": {"step": context.step, "tainted": context.tainted,
                        "spend": context.spend},
        }
        if first:  # a tool's metadata cannot change within an activation: recorded once
            record["resource"] = resource.to_dict()
        if (self._inherits and not resource.side_effect and tool.meta.selects != _NONE
                and decision.effect is not _DENY):
            # a read that may run: what its result inherits rests on the origins this decision
            # saw (tether.runtime.provenance.inherited)
            provenance.compute()
        seen = provenance.read()
        if seen is not None:  # the decision saw where the arguments came from
            record["provenance"] = seen
        carried = labels.read()
        if carried is not None:  # ... and on the private data they carry
            record["labels"] = carried
        self._journal.append(_TOOL_DECISION, record)
        return decision

    def asked_by(self, call_id: str, meta: ToolMeta) -> list[str]:
        """The arguments of a read that, as its decision saw them, only untrusted text supplied:
        its result inherits their distrust (``tether.runtime.provenance.inherited``). None for a
        side effect, a call decided without provenance, or a policy that reads none (then the
        rule is off and costs a result nothing)."""
        if not self._inherits or meta.side_effect:
            return []
        decided = self._state.decisions.get(call_id)
        return asked_by_untrusted(decided.get("provenance"), meta.selects) if decided else []

    def _context(self, provenance: Mapping[str, frozenset[str]], planned: bool = False,
                 labels: Mapping[str, frozenset[str]] | None = None) -> Context:
        """The live context of a decision: step, spend, budget left, taint, time, and whether
        the call is a strategy's planned one."""
        acc = self._accountant
        t = acc.tally
        elapsed = acc.elapsed()
        spend = {"tokens": t.usage.total_tokens, "cost_usd": t.cost, "steps": t.steps,
                 "tool_calls": t.tool_calls, "seconds": elapsed}
        return Context(self._session_id, t.steps, spend, acc.remaining(elapsed),
                       self._state.tainted, time.time(), self._extra, self.request, provenance,
                       planned, self._state.effects, self._state.plan, labels or {})

    def _deadline(self, context: Context) -> float | None:
        """Seconds a policy that may block has to decide: its own limit, or the time left."""
        left: float | None = context.budget_left["seconds"]
        if left is None or self._timeout is None:
            return self._timeout
        return min(self._timeout, max(left, 0.0))

    def probe(self, tool: Tool, arguments: Mapping[str, Any],
              provenance: Mapping[str, frozenset[str]], member: Policy | None = None, *,
              watch: Callable[[Action, Context], tuple[Action, Context]] | None = None) -> Any:
        """The policy's decision on ``tool`` with stand-in ``arguments`` and ``provenance``,
        in the session's live context, journaled nowhere: tool selection asks it before a
        turn which tools the policy refuses whatever the call (``tether.runtime.context.probing``).
        A policy that fails denies, as at the gate. ``member``: one of the policy's members
        (deciding inline), asked as it is — its answer or its exception, unchecked.
        ``watch``: what the action and context are handed to the policy as."""
        context = self._context(provenance)
        action = Action(tool.name, arguments)
        if watch is not None:
            action, context = watch(action, context)
        if member is not None:
            return member.evaluate(self.subject, action, resource_of(tool), context)
        if self._inline:
            return decide(self._policy, self.subject, action, resource_of(tool), context)
        return decide_within(self._policy, self._deadline(context), self.subject, action,
                             resource_of(tool), context, inline=False)
