"""A foreign framework's run under tether: one tool door and one model meter over one journal.

Why: another framework (pydantic-ai, the OpenAI Agents SDK, LangGraph) keeps its own loop, so
tether cannot be the loop; it can only stand in the framework's own seams — where a tool is
called and where a model is asked. This module is what every such adapter shares, and knows no
framework: a governed run is one tether session whose model turns are the framework's model
calls and whose tool calls are the framework's tool calls.

Decision: the door is the chokepoint's own tool pipeline (``ToolCalls``: gates, loop check,
budget, policy, every effect, approvals, credentials, journal), as the ``Gateway``'s is — no
second path to a tool. A call the metered model asked for runs as a call of that model turn,
so the journal reads like a native session's; one no metered model asked for (or whose
arguments the framework changed) is journaled ``client.call`` first, as a gateway's is. The
policy sees the user's request (``Context.request``) and the request plan is read before
anything runs, so ``scope_to_plan`` and the containment rules work as for a native agent. The
meter reserves a model call before it is made — input estimated, output capped to what the
budget leaves — charges the usage reported after, and stops the run at the first overrun. A
foreign framework gives tether no wrap-up turn, so nothing is held back for one: each call is
reserved as a last turn would be. A stop is journaled (``session.end`` with its reason) and
raised as ``RunStopped`` through the framework's loop; every later call raises it again.
A call that needs approval returns an ``Outcome`` naming the approval; once a person decides
it (in the approval store), the same call — same framework call id, same arguments — runs
once when the framework sends it again, and never again after that — also from another
process: a run stored with its journal is continued with ``resume=`` its id
(``tether.integrations.reopen``). A framework that asks whether a call must wait before it
runs it (the Agents SDK) asks ``ask_first``: the policy is probed without a record, and only a
call it sends to a person enters the door there — so its approval exists when the framework
pauses, and an allowed call still runs inside the framework's own tool call. A sub-agent
started inside a governed tool gets a run of its own made with ``parent=`` (the call's lease of
the budget, the parent's policy too, its spend charged back: as a native sub-agent); one given
this run's own tools or model is refused at once (``NestedRunError``), since the door takes one
call at a time and it would wait for the call it runs in.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from tether.errors import RunError
from tether.integrations.decided import FOREIGN_META as FOREIGN_META  # their former home
from tether.integrations.decided import (
    Body,
    deciding,
    done,
    identity,
    jsonable,
    reading,
)
from tether.integrations.decided import ForeignTool as ForeignTool
from tether.integrations.nesting import (
    Lender,
    charge_back,
    lent_by,
    not_nested,
    running,
    sub_run,
)
from tether.integrations.nesting import NestedRunError as NestedRunError  # raised from here
from tether.integrations.reopen import Reopened, framework_id, reopen
from tether.journal.chain import Journal, canonical_json
from tether.policy.base import Effect, Policy, Subject
from tether.policy.deadline import DEFAULT_POLICY_TIMEOUT
from tether.policy.names import check_names
from tether.policy.plan import read_request
from tether.runtime.accounting.budget import Accountant, Budget, Reservation
from tether.runtime.accounting.limits import Limits
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.approvals.requests import ApprovalStore, StoredApprovals
from tether.runtime.chokepoint.assembly import (
    RunContext,
    ToolDoor,
    assemble,
    subject_record,
    write_start,
)
from tether.runtime.chokepoint.effects import skipped
from tether.runtime.chokepoint.executor import ToolExecutor
from tether.runtime.chokepoint.gate import resource_of
from tether.runtime.chokepoint.gateway import attach_approval
from tether.runtime.chokepoint.model_call import Door, ModelCall
from tether.runtime.lifecycle.interrupt import lost_call_charge
from tether.runtime.provenance.recalled import recall_hidden
from tether.runtime.provenance.values import ArgumentProvenance, Sightings
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState, call_signature
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.tools.base import Tool, ToolContext, ToolFailure
from tether.tools.registry import ToolRegistry
from tether.types import Message, ModelResponse, ToolCall, Usage
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker
    from tether.models.pricing import Price

class RunStopped(RunError):
    """The governed run stopped (a budget, a loop, a model that overran its cap): nothing more
    runs in it. ``reason`` is a ``StopReason``; the journal's ``session.end`` says the same."""

    def __init__(self, reason: StopReason, detail: str) -> None:
        super().__init__(f"tether stopped the run ({reason}): {detail}")
        self.reason, self.detail = reason, detail


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the door made of one call: its result (a refusal included), and the approval it
    waits for, if it waits (then the result is the refusal the model may be shown)."""

    result: ToolResult
    approval_id: str | None = None


@dataclass(frozen=True, slots=True)
class Metered:
    """A model call reserved: its step and what the budget holds for it."""

    step: int
    reservation: Reservation

    @property
    def max_output_tokens(self) -> int | None:
        """The output cap to send the model (None: no limit binds)."""
        return self.reservation.max_output_tokens


class GovernedRun:
    """One foreign framework's run (or several resumptions of it), governed as one session."""

    def __init__(self, tools: Iterable[Tool], *, policy: Policy, request: str,
                 budget: Budget | None = None, price: Price | None = None,
                 store: Store | None = None, approvals: ApprovalStore | None = None,
                 user: str = "user", tenant_id: str | None = None, roles: Iterable[str] = (),
                 framework: str = "foreign", model: str = "", limits: Limits | None = None,
                 approval_ttl: float = 24 * 3600.0, max_result_chars: int = 20_000,
                 session_id: str | None = None, credentials: CredentialBroker | None = None,
                 policy_timeout: float | None = DEFAULT_POLICY_TIMEOUT,
                 resume: str | None = None, parent: Lender | None = None) -> None:
        self.registry = ToolRegistry(tools)
        check_names(policy, self.registry.specs, whose=f"the {framework} run's tools", advice=(
            "Fix the names, or declare the tools the policy names"))
        self._lent = None if parent is None else parent.lend()
        if self._lent is not None:  # a sub-run: the parent's lease, the parent's denials too
            budget, policy = sub_run(self._lent, budget, policy)
        back = None
        if resume is not None:  # a stored run, continued (tether.integrations.reopen)
            back = reopen(store, resume, framework=framework, tenant_id=tenant_id,
                          tools=self.registry, request=request, budget=budget)
            budget, user, roles = back.budget, back.user, back.roles
        self.id = resume or session_id or os.urandom(16).hex()
        self.request = request
        self.subject = Subject(user, tenant_id, frozenset(roles), framework)
        self.budget = budget or Budget()
        self._state = back.state if back is not None else SessionState()
        self._accountant = Accountant(self.budget, price, self._state.tally)
        self._approvals = approvals or StoredApprovals(store or MemoryStore())
        self._credentials = credentials
        self._journal = Journal(self.id, on_append=self._state.apply, store=store,
                                history=back.events if back is not None else ())
        if back is not None:  # what the stored run hid stays hidden (before anything appends)
            recall_hidden(self._journal, back.events, credentials)
        run = RunContext(self.id, self._journal, self._state, self._accountant)
        door = assemble(run, ToolDoor(
            policy, self.subject, {"framework": framework}, ToolExecutor(
                self.registry, max_result_chars), limits or Limits(), self._approvals,
            approval_ttl, policy_timeout, request=request, credentials=credentials))
        self._gate, self._calls = door.gate, door.calls
        self._lock = asyncio.Lock()  # one call at a time: the budget is checked, then charged
        self._ledger: dict[str, tuple[str, ToolResult]] = {}  # framework id -> resolved call
        self._waiting: dict[str, tuple[str, str]] = {}  # framework id -> (signature, approval)
        self._ids: dict[str, str] = {}  # framework id -> tether id, where they differ
        self._used: set[str] = set()  # tether call ids journaled so far
        self.stopped: RunStopped | None = None
        self._ended = False
        self._sightings: Sightings | None = None  # for ask_first's probes
        if back is None:
            self._open(framework, model)
        else:
            self._continue(back, framework, model)

    def _continue(self, back: Reopened, framework: str, model: str) -> None:
        """Go on with a stored run: what its door remembered, its time so far, and a
        ``session.resumed`` event (with the charge of a model call its process lost)."""
        self._ledger, self._waiting, self._ids, self._used = (back.ledger, back.waiting,
                                                             back.ids, back.used)
        self._state.tally.active_seconds = back.elapsed
        self._journal.append(EventType.SESSION_RESUMED, {
            "after": "pause", "agent": framework, "model": model,
            "budget": self.budget.to_dict(), "subject": subject_record(self.subject)})
        lost = self._state.in_flight
        if lost is not None:  # its process died waiting for the model: assume it was billed
            self._journal.append(EventType.MODEL_LOST, lost_call_charge(lost))
        self._journal.flush()
        self._accountant.start_clock()

    def _open(self, framework: str, model: str) -> None:
        resources = [resource_of(t) for t in self.registry]
        start: dict[str, Any] = {
            "task": self.request, "system_prompt": "", "agent": framework, "model": model,
            "tools": list(self.registry.names), "budget": self.budget.to_dict(),
            "context": {"framework": framework, **({
                "parent_session": self._lent.session_id, "parent_call": self._lent.call_id}
                if self._lent is not None else {})},
            "subject": subject_record(self.subject)}
        if self.request and any(r.side_effect and r.intents for r in resources):
            start["plan"] = read_request(self.request, resources).to_dict()
        write_start(self._journal, start)
        self._journal.flush()
        self._accountant.start_clock()

    def lend(self) -> ToolContext:
        """What a sub-run made in one of this run's tool calls draws on (``parent=``)."""
        return lent_by(self.id)

    @property
    def journal(self) -> Journal:
        return self._journal

    @property
    def approvals(self) -> ApprovalStore:
        return self._approvals

    def remaining_budget(self) -> dict[str, Any]:
        return self._accountant.remaining()

    # -- the tool door -------------------------------------------------------------------------

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

    def not_nested(self) -> None:
        """NestedRunError when this context runs inside one of this run's own tool calls."""
        not_nested(self.id)

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

    def _fresh(self, call_id: str) -> str:
        """A tether call id for ``call_id`` that no earlier call of the session has."""
        own, n = call_id, 1
        while own in self._used:
            n += 1
            own = f"{call_id}~{n}"
        self._used.add(own)
        self._ids[call_id] = own
        return own

    def _attach(self, call: ToolCall, approval_id: str) -> None:
        """Journal the earlier approval request as this call's, so the pipeline uses it (once,
        if a person approved it) instead of asking again."""
        record = self._approvals.get(approval_id)
        if record is not None:
            attach_approval(self._journal, call.id, record,
                            call_signature(call.name, call.arguments))

    # -- the model meter -----------------------------------------------------------------------

    async def reserve(self, input_estimate: int, *, new: Sequence[Message] = (),
                      ceiling: int | None = None) -> Metered:
        """Reserve one model call of ``input_estimate`` tokens (tether's estimate of all it
        sends) and journal its request; RunStopped when the budget does not allow it."""
        self.not_nested()
        async with self._lock:
            self._check_open()
            for call in self._state.unresolved():  # every call gets a result
                result = skipped(call, "the framework did not run this call")
                self._calls.record(result)
                self._ledger[framework_id(call.id, self._used)] = (
                    identity(self.registry.get(call.name), call.arguments, call.name), result)
            meter = self._meter()
            try:
                reservation = meter.reserve(input_estimate, True, ceiling=ceiling)
            except Stop as stop:
                self._stop(stop)
            metered = Metered(self._state.tally.steps + 1, reservation)
            _, durable = meter.open({
                "step": metered.step, "ref": len(self._state.conversation), "new": list(new),
                "tools": self.registry.names, "final": False,
                "max_output_tokens": reservation.max_output_tokens,
                "reserved_input": reservation.input_tokens,
                "reserved_cost_usd": reservation.cost_usd})
            await durable
            return metered

    def _meter(self) -> ModelCall:
        """The one governed model call (``tether.runtime.chokepoint.model_call``) of a framework's
        call, which the framework makes itself: tether opens it and settles it."""
        def unusable(step: int, reservation: Reservation, usage: Usage) -> Stop:
            self._unmetered(Metered(step, reservation), "the model reported unusable usage")
            return Stop(StopReason.MODEL_ERROR, "the model reported unusable usage "
                        f"({usage.input_tokens!r} input, {usage.output_tokens!r} output "
                        "tokens): charged at the reservation")

        return ModelCall(self._journal, self._accountant,
                         Door(EventType.MODEL_REQUEST, EventType.MODEL_RESPONSE, unusable))

    async def charge(self, metered: Metered, response: ModelResponse,
                     outside: Sequence[str] = ()) -> dict[str, str]:
        """Journal the model's answer and charge its reported usage; RunStopped at an overrun
        (journaled) or unusable usage. ``outside``: tools the model called that tether does not
        govern (the framework runs them itself), journaled by name. Returns the tether call id
        of each call whose framework id an earlier call already had."""
        self.not_nested()
        async with self._lock:
            reservation, step = metered.reservation, metered.step

            calls = []
            for c in response.tool_calls:
                self._ledger.pop(c.id, None)  # a new call, whatever an old one was called
                calls.append(ToolCall(self._fresh(c.id), c.name, c.arguments))
            try:  # (usage it cannot charge stops the run: the ids given above are never used)
                self._meter().settle(step, response, reservation, {
                    "step": step, "response": ModelResponse(
                        response.text, tuple(calls), response.usage, response.model,
                        response.finish_reason), "reserved_input": reservation.input_tokens,
                    **({"outside": sorted(set(outside))} if outside else {})})
            except Stop as stop:  # an overrun (journaled), or usage that cannot be charged
                self._stop(stop)
            await self._journal.aflush()
            return {k: v for k, v in self._ids.items() if k != v}

    async def failed(self, metered: Metered, error: BaseException) -> None:
        """Journal a model call that raised (the framework decides what follows); one that was
        cancelled is charged at its reservation, since the provider may well have billed it."""
        self.not_nested()
        async with self._lock:
            if isinstance(error, Exception):
                self._journal.append(EventType.MODEL_ERROR, {
                    "step": metered.step, "error": f"{type(error).__name__}: {error}"})
            else:
                self._unmetered(metered, f"the call was cancelled ({type(error).__name__})")
            await self._journal.aflush()

    def _unmetered(self, metered: Metered, error: str) -> None:
        r = metered.reservation
        self._journal.append(EventType.MODEL_UNMETERED, {
            "step": metered.step, "error": error, "input_tokens": r.input_tokens,
            "output_tokens": r.max_output_tokens or 0, "cost_usd": r.cost_usd})

    # -- ending --------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.stopped is not None:
            raise self.stopped
        if self._ended:
            raise RuntimeError(f"governed run {self.id} is closed; open a new one")

    def _stop(self, stop: Stop) -> NoReturn:
        """End the session with the stop's reason, and raise it (again on every later call)."""
        self._end(stop.reason.value, stop.detail, "")
        self.stopped = RunStopped(stop.reason, stop.detail)
        raise self.stopped from None

    def close(self, answer: str = "", detail: str = "the framework's run ended") -> None:
        """End the session (``finished``) with the framework's answer, if it has one. A run
        that waits for approvals can be closed too: its pending approvals expire with it."""
        self._end(StopReason.FINISHED.value, detail, answer)

    def _end(self, reason: str, detail: str, answer: str) -> None:
        if self._ended:
            return
        self._ended = True
        self._journal.append(EventType.SESSION_END, {
            "reason": reason, "detail": detail, "answer": answer,
            "spend": self._accountant.spend().to_dict()})
        self._journal.flush()
        charge_back(self._lent, self._accountant.spend())  # a sub-run's, to its parent call
        self._approvals.expire_pending(self.id, f"the run ended ({reason})")
        if self._credentials is not None:
            self._credentials.revoke_session(self.id)
