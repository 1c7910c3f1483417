"""A governed run's tool door: each framework tool call decided and run by the chokepoint.

Why apart from the run (``integrations.governed``, which says the whole design): the door is
where a framework's tool calls meet tether's own pipeline, and most of what a governed run does
— a call matched to the model turn that asked for it, or journaled as a ``client.call``; a call
paused for an approval and run once when decided, even by a framework that sends it again; a
framework that asks first whether a call must wait (``ask_first``) — happens here.

Decision: no second path to a tool. Every call goes through the chokepoint's ``ToolCalls``, one
at a time under the run's lock; ``ask_first`` only probes the policy without a record, and
sends to the door only a call the policy would send to a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from tether.integrations.decided import Body, deciding, done, identity, jsonable, reading
from tether.integrations.governed_part import GovernedPart
from tether.integrations.nesting import running
from tether.journal.chain import canonical_json
from tether.policy.base import Effect
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.chokepoint.effects import skipped
from tether.runtime.chokepoint.gateway import attach_approval
from tether.runtime.provenance.values import ArgumentProvenance, Sightings
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import call_signature
from tether.tools.base import ToolFailure
from tether.types import ToolCall
from tether.vocabulary import EventType


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the door made of one call: its result (a refusal included), and the approval it
    waits for, if it waits (then the result is the refusal the model may be shown)."""

    result: ToolResult
    approval_id: str | None = None


class GovernedTools(GovernedPart):
    """Mixed into ``GovernedRun``: the tool door."""

    async def call(self, call_id: str, name: str, arguments: Mapping[str, Any],
                   body: Body) -> Outcome:
        """Decide one framework tool call and, if allowed, run ``body`` with the arguments the
        decision covers. Always an Outcome (refusals included); RunStopped when the run stops;
        NestedRunError when called from inside one of this run's own tool calls."""
        self.not_nested()
        async with self._lock:
            self._check_open()
            signature = identity(self.registry.get(name), arguments, name)
            known = self._ledger.get(call_id)
            if known is not None and known[0] == signature:
                return Outcome(known[1])  # resolved already (a framework's second resume)
            call = self._call_of(call_id, name, dict(arguments), signature)
            held = deciding(call.id, body)
            try:
                with running(self.id):
                    (result,) = await self._calls.run([call])
            except Stop as stop:
                approval = self._state.approvals.get(call.id)
                if stop.reason is not StopReason.NEEDS_APPROVAL or approval is None \
                        or call.id in self._state.results:
                    self._stop(stop)
                self._waiting[call_id] = (signature, approval)
                await self._journal.aflush()
                return Outcome(ToolResult(call.id, name, f"Approval required ({approval}): "
                                          f"{stop.detail}. A person must approve it first.",
                                          "denied"), approval)
            finally:
                done(held)
            self._ledger[call_id] = (signature, result)
            self._waiting.pop(call_id, None)
            await self._journal.aflush()
            return Outcome(result)

    async def ask_first(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> bool:
        """For a framework that asks whether a call must wait for a person before it runs it
        (the Agents SDK's ``needs_approval``): True when the call waits — for an approval nobody
        has decided yet, asked for here when the policy requires one. False: it goes to the
        door (``call``) when the framework runs it, which decides it as any call. The policy is
        asked first without journaling anything (``PolicyGate.probe``); only a call it would
        send to a person goes through the door here, so no allowed call runs outside the
        framework's own tool call. RunStopped when the run stops."""
        self.not_nested()
        signature = identity(self.registry.get(name), arguments, name)
        known, waiting = self._ledger.get(call_id), self._waiting.get(call_id)
        if known is not None and known[0] == signature:
            return False  # resolved: the door hands back its result
        if waiting is not None and waiting[0] == signature:
            return self.decided(call_id) is False
        tool = self.registry.get(name)
        if tool is None or self.stopped is not None or self._ended:
            return False  # the door refuses it, or raises
        if self._sightings is None:  # what the session has seen, read as the gate reads it
            self._sightings = Sightings(self.request, self._state.ran)
        try:  # the arguments as the tool reads them: what the door would decide on
            read = tool.validate(arguments)
        except Exception:
            return False  # the door refuses them
        decision = self._gate.probe(tool, read, ArgumentProvenance(read, self._sightings))
        if getattr(decision, "effect", None) is not Effect.REQUIRE_APPROVAL:
            return False

        async def changed(_: dict[str, Any]) -> NoReturn:  # decided again, and not the same
            raise ToolFailure("Error: the policy decided this call differently when it was "
                              "asked again; it was not run. Call it again if it is needed.")

        return (await self.call(call_id, name, arguments, changed)).approval_id is not None

    def decided(self, call_id: str) -> bool | None:
        """Whether a person decided the call the door paused under this framework id (True:
        the door settles it — runs it once, refuses it, or hands back its result; False: it
        still waits). None: the door paused no such call."""
        if call_id in self._ledger:
            return True
        waiting = self._waiting.get(call_id)
        if waiting is None:
            return None
        record = self._approvals.get(waiting[1])
        return record is None or record.status != "pending" or record.expired()

    def _call_of(self, call_id: str, name: str, arguments: dict[str, Any],
                 signature: str) -> ToolCall:
        """The open model turn's call, if this is it as the model asked for it; else a new
        ``client.call`` (no metered model asked for it, or the framework changed it), carrying
        the approval a person was asked for when the framework sent it before."""
        own = self._ids.get(call_id, call_id)
        for call in self._state.unresolved():
            if call.id == own and call.name == name and (
                    call.arguments == arguments or self._reads_as(call, arguments)):
                return call
        for asked in self._state.unresolved():  # every call the model made gets a result
            self._calls.record(skipped(asked, (
                "the framework changed its arguments before running it; what ran is journaled "
                "as a call of its own") if asked.id == own else (
                "the framework ran a call of this turn with changed arguments; this one, if "
                "it runs, is journaled as a call of its own")))
        call = ToolCall(self._fresh(call_id), name, arguments)
        self._journal.append(EventType.CLIENT_CALL, {"call": call})
        waiting = self._waiting.get(call_id)
        if waiting is not None and waiting[0] == signature:
            self._attach(call, waiting[1])
        return call

    def _reads_as(self, call: ToolCall, arguments: Mapping[str, Any]) -> bool:
        """Whether the model's ``call`` reads, by its tool's own reading of arguments, as
        ``arguments``: a framework that validated them before the door (pydantic-ai) hands
        over the model's call normalised, and it is still the model's call."""
        read = reading(self.registry.get(call.name), call.arguments)
        return read is not None and canonical_json(read) == canonical_json(jsonable(arguments))

    def _attach(self, call: ToolCall, approval_id: str) -> None:
        """Journal the earlier approval request as this call's, so the pipeline uses it (once,
        if a person approved it) instead of asking again."""
        record = self._approvals.get(approval_id)
        if record is not None:
            attach_approval(self._journal, call.id, record,
                            call_signature(call.name, call.arguments))

