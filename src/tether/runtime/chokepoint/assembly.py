"""One assembly of the chokepoint's tool side, from one run context; one writer of its start.

Why: three callers govern tool calls — a session's run (``Session._drive``), a gateway's
segment (``Gateway._open``) and a foreign framework's run (``GovernedRun.__init__``). Each used
to build the policy gate (8-10 arguments) and the ``ToolCalls`` pipeline (up to 16 keyword
arguments) by hand, passing the same five things to both, and to write its own
``session.start``. A new part of the pipeline meant three edits, and one forgotten was a door
that governed less.

Decision (the plan, as pydantic-ai's ``RunContext`` is):

- ``RunContext``: the five things every part of a run needs — session id, journal, state,
  accountant, trace — built once by the caller and passed once.
- ``ToolDoor``: what differs between callers — the policy and whom it judges, the executor,
  limits, approvals (and whose they are), credentials, where hidden arguments are kept,
  telemetry, the model a sampling ask uses. Every field a caller does not need has the
  default that means "none".
- ``assemble(run, door)``: the one constructor of gate and pipeline; returns both
  (``Chokepoint``), since a session's tool selection and a framework's ``ask_first`` consult
  the gate directly.
- ``write_start(journal, start)``: the one place that appends ``session.start`` (its record is the
  caller's: a session's names its recipe, a gateway's its client, a framework's run its
  framework; the stored JSON is exactly what each wrote before). ``subject_record`` is the
  subject as every start and resumption records it.

Moved one caller at a time (gateway, foreign framework, session), each kept green by its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.journal.chain import Journal
from tether.policy.base import Policy, Subject
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.limits import Limits
from tether.runtime.approvals.approver import Approver
from tether.runtime.approvals.requests import ApprovalStore
from tether.runtime.chokepoint.executor import ToolExecutor
from tether.runtime.chokepoint.gate import Keep, PolicyGate
from tether.runtime.chokepoint.halts import starting
from tether.runtime.chokepoint.turn import ToolCalls
from tether.runtime.record.state import SessionState
from tether.tracing import Segment
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker
    from tether.models.base import Model


@dataclass(frozen=True, slots=True)
class RunContext:
    """The five things every part of one run needs, passed once."""

    session_id: str
    journal: Journal
    state: SessionState
    accountant: Accountant
    trace: Segment | None = None  # the run's trace segment, when it has telemetry


@dataclass(frozen=True, slots=True)
class ToolDoor:
    """What one caller governs its tool calls by: all that differs between the callers."""

    policy: Policy
    subject: Subject
    context: Mapping[str, Any]  # what the policy is told of the run (Context.extra)
    executor: ToolExecutor
    limits: Limits
    approvals: ApprovalStore
    approval_ttl: float
    policy_timeout: float | None
    request: str = ""  # the user's request, as the policy sees it
    credentials: CredentialBroker | None = None
    keep: Keep | None = None  # where arguments the journal hides are kept ...
    kept: Callable[[str], Mapping[str, Any] | None] | None = None  # ... and read back
    bound_to: str | None = None  # whose approvals these are (None: the session's)
    approver: Approver | None = None
    telemetry: tuple[Callable[[Any], object], ...] = ()
    model: Model | None = None  # the model a tool's sampling request asks


@dataclass(frozen=True, slots=True)
class Chokepoint:
    """The tool side of one run, assembled: its policy gate and its pipeline."""

    gate: PolicyGate
    calls: ToolCalls


def assemble(run: RunContext, door: ToolDoor) -> Chokepoint:
    """The policy gate and the tool-call pipeline of ``run``, governed by ``door``."""
    gate = PolicyGate(door.policy, door.subject, run.session_id, run.journal, run.state,
                      run.accountant, door.context, keep=door.keep,
                      timeout=door.policy_timeout, request=door.request)
    calls = ToolCalls(session_id=run.session_id, executor=door.executor, gate=gate,
                      accountant=run.accountant, journal=run.journal, state=run.state,
                      limits=door.limits, approvals=door.approvals,
                      approval_ttl=door.approval_ttl, credentials=door.credentials,
                      kept=door.kept, bound_to=door.bound_to, approver=door.approver,
                      trace=run.trace, telemetry=door.telemetry, model=door.model)
    return Chokepoint(gate, calls)


def subject_record(subject: Subject) -> dict[str, Any]:
    """The subject as a run's start (or resumption) records it."""
    return {"user_id": subject.user_id, "tenant_id": subject.tenant_id,
            "roles": sorted(subject.roles)}


def write_start(journal: Journal, start: dict[str, Any]) -> int:
    """Append a run's ``session.start`` (the one place it is written); returns its seq."""
    starting(journal, start)  # a halt covers it from its first call (chokepoint.halts)
    return journal.append(EventType.SESSION_START, start)
