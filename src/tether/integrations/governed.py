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

The run is this module (making, opening and continuing the session, and ending it); its two
doors are mixed in from a module each: the tool door (``integrations.governed_tools``) and the
model meter (``integrations.governed_model``), over the state they share
(``integrations.governed_part``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from tether.errors import RunError, WrongState
from tether.integrations.decided import FOREIGN_META as FOREIGN_META  # their former home
from tether.integrations.decided import ForeignTool as ForeignTool
from tether.integrations.governed_model import GovernedModel
from tether.integrations.governed_tools import GovernedTools
from tether.integrations.nesting import (
    Lender,
    charge_back,
    lent_by,
    sub_run,
)
from tether.integrations.nesting import NestedRunError as NestedRunError  # raised from here
from tether.integrations.reopen import Reopened, reopen
from tether.journal.chain import Journal
from tether.policy.base import Policy, Subject
from tether.policy.deadline import DEFAULT_POLICY_TIMEOUT
from tether.policy.names import check_names
from tether.policy.plan import read_request
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.budget import Budget
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
from tether.runtime.chokepoint.executor import ToolExecutor
from tether.runtime.chokepoint.gate import resource_of
from tether.runtime.lifecycle.interrupt import lost_call_charge
from tether.runtime.provenance.recalled import recall_hidden
from tether.runtime.provenance.values import Sightings
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.tools.base import Tool, ToolContext
from tether.tools.registry import ToolRegistry
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


class GovernedRun(GovernedTools, GovernedModel):
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

    # -- ending --------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.stopped is not None:
            raise self.stopped
        if self._ended:
            raise WrongState(f"governed run {self.id} is closed; open a new one")

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
