"""A fleet: tether sessions run by many worker processes through a DBOS queue.

Why: one machine runs sessions in one process; past it, a deployment wants a queue that many
workers drain with limits (concurrency per worker and per queue, rate limits, priorities,
deduplication), crashed workers' sessions taken up again, cancellation and an operator's view.
DBOS (a library on PostgreSQL or SQLite, no server of its own) gives exactly that, and tether
adds to it only what is tether's: each session is a DBOS workflow whose body is one tether
activation (``tether.durable.workflow``), harmless to run again because tether's journal, not
DBOS, is the truth of what ran.

Decisions:
- Workflow id = session id for a session's first activation. A session that pauses for a person
  ends its workflow (status ``needs_approval`` / ``uncertain_effect``), so a session waiting for
  a human holds no worker and no queue slot; approving (``approve``) or settling (``settle``)
  records the decision in tether's store, then enqueues the next activation under the id
  ``<session id>#<n>`` (n = the session's pauses so far), so two approvers racing wake it once.
  Waking reads the journal, never DBOS's state: an approver who decides before the pause is
  journaled finds nothing to wake, and the pausing activation then goes on by itself
  (``tether.durable.activation`` argues why one of the two always acts). An activation that
  raised is woken again under ``<session id>#<n>.<failures>``; a session whose journal does not
  verify is refused (``SessionRefused``), never woken or decided for.
  A DBOS ``recv`` would also wait durably, but a workflow blocked in it counts against its
  queue's concurrency and holds a thread (DBOS counts it among the worker's active workflows).
- Workers pin one application version (``APP_VERSION``): DBOS recovers a dead executor's
  workflows only into the same version, and the body is safe under any tether, so a rolling
  upgrade must not strand the sessions of the old one.
- A dead worker's sessions are recovered when a worker with its executor id starts again (DBOS
  without its Conductor service recovers by executor id): run each worker under a stable id
  (``--executor-id``, e.g. a pod's ordinal). For a worker gone for good, ``recover(id)`` hands
  its sessions back to the queue (DBOS's ``resume_workflow``), which the body makes safe even
  if that worker was alive after all.
- ``import dbos`` happens inside these functions: ``import tether`` stays fast and works without
  the ``dbos`` extra.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tether.durable.activation import TASK_KEY, journal_store, queue_task, status_of
from tether.durable.status import FAILED, LIVE, NEEDS_A_PERSON, Attempt, Report, describe
from tether.errors import InvalidArgument, NotFound, RunError, WrongType
from tether.runtime.approvals.deciding import Verdict, decide
from tether.runtime.approvals.identity import Identity
from tether.runtime.approvals.rules import ApprovalRules
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from dbos import DBOSClient, DBOSConfig

    from tether.runtime.lifecycle.agent import Agent

APP_NAME = "tether-fleet"
APP_VERSION = "tether-fleet/1"  # bump only when the workflow's name or inputs change
DEFAULT_QUEUE = "tether"
SEPARATOR = "#"  # between a session id and its activation number, in a workflow id
PRIORITIES = range(1, 2**31)  # DBOS's: lower runs first


def load_factory(ref: str) -> Agent | Callable[[], Agent]:
    """The agent recipe ``ref`` names, found as ``tether run`` finds one
    (``tether.runtime.lifecycle.recipe``: ``package.module:function`` with the current directory
    on the import path, or ``path/to/file.py:function``), checked to exist; not built."""
    from tether.runtime.lifecycle.recipe import RecipeError, find_recipe

    if ":" not in ref:
        raise InvalidArgument(f"agent factory {ref!r} is not 'package.module:function' (or "
                              "'path/to/file.py:function')")
    try:
        return find_recipe(ref)
    except RecipeError as exc:
        raise InvalidArgument(f"agent factory {ref!r} cannot be loaded: {exc}") from None


def build_agent(ref: str) -> Agent:
    from tether.runtime.lifecycle.recipe import RecipeError, build_recipe

    try:
        agent = build_recipe(ref, load_factory(ref))
    except RecipeError as exc:
        raise WrongType(f"agent factory {ref!r}: {exc}") from None
    journal_store(agent)
    return agent


def dbos_config(database: str, executor_id: str | None = None) -> DBOSConfig:
    """DBOS's configuration for a fleet on ``database`` (its system database URL)."""
    from dbos import DBOSConfig

    config = DBOSConfig(name=APP_NAME, system_database_url=database,
                        application_version=APP_VERSION, log_level="WARNING")
    if executor_id is not None:
        config["executor_id"] = executor_id
    return config


class SessionRefused(RunError):
    """The fleet will not run the session (its journal does not verify, or another recipe
    started it); the message says why and what to look at."""


class AlreadyQueued(RunError):
    """A session enqueued with the same deduplication key still waits or runs."""

    def __init__(self, dedup: str) -> None:
        super().__init__(f"a session enqueued with dedup={dedup!r} still waits or runs; wait "
                         "for it to end, or enqueue without that key")
        self.dedup = dedup


@dataclass(frozen=True)
class Activation:
    """One DBOS workflow of a session: its id, DBOS's status, the body's result if it ended."""

    session_id: str
    workflow_id: str
    state: str  # DBOS: ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED, ...
    status: str | None  # tether's: the stop reason the activation returned
    error: str | None = None  # what it raised ("Type: message"), if it did


@dataclass(frozen=True)
class Fleet:
    """The client side of a fleet: enqueue sessions, wake them, list and cancel them. Builds
    no worker; ``serve`` (or ``python -m tether.durable.worker``) runs one."""

    agent: str  # the agent factory, 'package.module:function'; workers run the same
    database: str = field(repr=False)  # DBOS's system database URL (postgresql://, sqlite:///)
    queue: str = DEFAULT_QUEUE

    def __post_init__(self) -> None:
        load_factory(self.agent)

    def __repr__(self) -> str:  # the URL may carry a password
        from tether.urls import redact_url

        return (f"Fleet(agent={self.agent!r}, database={redact_url(self.database)!r}, "
                f"queue={self.queue!r})")

    @functools.cached_property
    def client(self) -> DBOSClient:
        from dbos import DBOS, DBOSClient

        DBOS.migrate(self.database)  # the client never creates the system database itself
        return DBOSClient(system_database_url=self.database, application_name=APP_NAME)

    @functools.cached_property
    def recipe(self) -> Agent:
        """The fleet's Agent in this process: for its store (journals, approvals)."""
        return build_agent(self.agent)

    def close(self) -> None:
        """Let go of the database connections this process opened."""
        if "client" in self.__dict__:
            self.client.destroy()
        if "recipe" in self.__dict__ and self.recipe.journal_store is not None:
            self.recipe.journal_store.close()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def enqueue(self, task: str, *, session_id: str | None = None, priority: int | None = None,
                dedup: str | None = None) -> str:
        """Queue a new session on ``task`` and return its id. ``priority``: lower runs first
        (DBOS's, 1 to 2**31-1; none runs before any); ``dedup``: while a session enqueued with
        this key waits or runs, another with it is refused (``AlreadyQueued``, DBOS's
        deduplication). Enqueuing a session id again attaches to it instead of starting a
        second."""
        if not isinstance(task, str) or not task.strip():
            raise InvalidArgument("task must be a non-empty string")
        if priority is not None and (isinstance(priority, bool) or priority not in PRIORITIES):
            raise InvalidArgument(f"priority must be a whole number from 1 (first) to {2**31 - 1}, "
                                  f"got {priority!r}; leave it out to queue behind no one")
        if dedup is not None and (not isinstance(dedup, str) or not dedup.strip()):
            raise InvalidArgument("dedup must be a non-empty key (e.g. 'invoice-4411'), or None")
        session_id = session_id or os.urandom(16).hex()
        if SEPARATOR in session_id:
            raise InvalidArgument(f"a fleet's session id cannot contain {SEPARATOR!r}")
        store = journal_store(self.recipe)
        kept = store.get_private(session_id, TASK_KEY) is not None
        queue_task(store, session_id, task)
        try:
            self._enqueue(session_id, session_id, priority=priority, dedup=dedup)
        except AlreadyQueued:
            if not kept:  # refused: keep no task for a session that will never run
                store.drop_private(session_id)
            raise
        return session_id

    def _enqueue(self, workflow_id: str, session_id: str, *,
                 priority: int | None = None, dedup: str | None = None) -> None:
        from dbos import EnqueueOptions

        from tether.durable.workflow import CLASS_NAME, WORKFLOW_NAME

        options = EnqueueOptions(workflow_name=WORKFLOW_NAME, queue_name=self.queue,
                                 workflow_id=workflow_id, class_name=CLASS_NAME,
                                 instance_name=self.agent, app_version=APP_VERSION)
        if priority is not None:
            options["priority"] = priority
        if dedup is not None:
            options["deduplication_id"] = dedup
        from dbos import error

        try:
            self.client.enqueue(options, session_id)
        except error.DBOSQueueDeduplicatedError as exc:
            raise AlreadyQueued(str(dedup)) from exc

    def activations(self, session_id: str | None = None) -> list[Activation]:
        """The workflows of the fleet's agent (one session's, with ``session_id``), oldest
        first."""
        from tether.durable.workflow import WORKFLOW_NAME

        prefix = None if session_id is None else [session_id]
        # not by queue: DBOS takes a cancelled workflow off its queue; by the agent instead
        found = self.client.list_workflows(name=WORKFLOW_NAME, workflow_id_prefix=prefix,
                                           load_input=False)
        out = []
        for row in found:
            owner = row.workflow_id.partition(SEPARATOR)[0]
            if row.config_name == self.agent and session_id in (None, owner):
                output = row.output if row.status == "SUCCESS" else None
                error = None if row.error is None else \
                    f"{type(row.error).__name__}: {row.error}"
                out.append(Activation(owner, row.workflow_id, row.status, output, error))
        return out

    def waiting(self) -> dict[str, str]:
        """Sessions that need a person before they move, by id, with their status:
        ``needs_approval`` (``approve`` or ``deny``), ``uncertain_effect`` (a side effect that
        may have happened: ``settle``; the fleet never retries it), ``paused`` (nobody is asked
        for anything: ``wake``), ``failed`` (its activation raised: see ``describe``, then
        ``wake``) or ``refused`` (the fleet will not run it: see ``describe``). Read from each
        session's journal, after DBOS's records single the candidates out."""
        by_session: dict[str, list[Activation]] = {}
        for activation in self.activations():
            by_session.setdefault(activation.session_id, []).append(activation)
        out = {}
        for session_id, activations in sorted(by_session.items()):
            last = activations[-1]
            if last.state in LIVE or (last.state == "SUCCESS" and last.status not in
                                      NEEDS_A_PERSON) or last.state == "CANCELLED":
                continue  # runs, will run, or ended (an ended journal is not read again)
            status = self.describe(session_id, activations).status
            if status in NEEDS_A_PERSON:
                out[session_id] = status
        return out

    def status(self, session_id: str) -> str:
        """The session's status: its stop reason once it ended, else one of
        ``tether.durable.status.STATUSES`` (queued, running, needs_approval, uncertain_effect,
        paused, cancelled, refused, failed, erased, unknown); ``describe`` says why."""
        return self.describe(session_id).status

    def describe(self, session_id: str,
                 activations: list[Activation] | None = None) -> Report:
        """The session's status and, where it helps, why (a refusal's or a failure's cause,
        what to do next): from its journal, which must verify, then from DBOS for what the
        journal cannot know (whether a queue or a worker holds it)."""
        agent = self.recipe
        events = journal_store(agent).read(session_id)
        found = self.activations(session_id) if activations is None else activations
        return describe(session_id, events, len(agent.approval_store.pending(session_id)),
                        [Attempt(a.state, a.error) for a in found])

    def approve(self, session_id: str, approval_id: str, *, approver: str | Identity,
                note: str = "", rules: ApprovalRules | None = None,
                break_glass: bool = False) -> str | None:
        """Approve a request of the session in tether's store, then wake the session.
        ``approver``: an ``Identity`` (decided through ``deciding.decide``: every check and the
        ``rules``), or a name this program vouches for."""
        self._decide(session_id, approval_id, "approve", approver, note, rules, break_glass)
        return self.wake(session_id)

    def deny(self, session_id: str, approval_id: str, *, approver: str | Identity,
             note: str = "", rules: ApprovalRules | None = None,
             break_glass: bool = False) -> str | None:
        """Deny a request of the session in tether's store, then wake the session (the model
        is told the call was refused). ``approver`` as for ``approve``."""
        self._decide(session_id, approval_id, "deny", approver, note, rules, break_glass)
        return self.wake(session_id)

    def _decide(self, session_id: str, approval_id: str, verdict: Verdict,
                approver: str | Identity, note: str, rules: ApprovalRules | None,
                break_glass: bool) -> None:
        self._decision(session_id, approval_id)
        if isinstance(approver, Identity):
            decide(journal_store(self.recipe), approval_id, verdict, identity=approver,
                   note=note, rules=rules, break_glass=break_glass)
        elif verdict == "approve":
            self.recipe.approval_store.approve(approval_id, approver=approver, note=note)
        else:
            self.recipe.approval_store.deny(approval_id, approver=approver, note=note)

    def settle(self, session_id: str, call_id: str, action: str, *, operator: str,
               note: str = "") -> str | None:
        """Settle an uncertain call (``retry`` or ``skip``, see ``Session.settle``), then wake
        the session."""
        self.recipe.load(session_id).settle(call_id, action, operator=operator, note=note)
        return self.wake(session_id)

    def wake(self, session_id: str) -> str | None:
        """Enqueue the session's next activation if it is paused and waits for nobody (e.g.
        after a decision made with ``tether approvals``, or a cancellation), or if its last
        activation failed; returns its workflow id, or None when there is nothing to wake.
        Idempotent: one activation per pause (and per failure). Raises ``SessionRefused`` for a
        session the fleet will not run (``describe`` says why)."""
        activations = self.activations(session_id)
        report = self.describe(session_id, activations)
        if report.status == "refused":
            raise SessionRefused(f"session {session_id} is refused: {report.detail}")
        agent = self.recipe
        events = journal_store(agent).read(session_id)
        pauses = sum(1 for e in events if e.type == EventType.SESSION_PAUSED)
        if report.status == "failed":  # the body is safe to run again from the top
            failures = sum(1 for a in activations if a.state in FAILED)
            workflow_id = f"{session_id}{SEPARATOR}{pauses}.{failures}"
        elif events and events[-1].type in (EventType.SESSION_PAUSED,
                                            EventType.EFFECT_SETTLED) and \
                status_of(events, len(agent.approval_store.pending(session_id))) is None:
            # whatever DBOS says of the activation that paused it: it may have looked for a
            # decision before this one and be returning (see tether.durable.activation)
            workflow_id = f"{session_id}{SEPARATOR}{pauses}"
            halted = sum(1 for a in activations if a.status == "halted")
            if halted:  # an activation a halt refused wrote no pause: the next is another
                workflow_id += f".h{halted}"
        else:
            return None
        self._enqueue(workflow_id, session_id)
        return workflow_id

    def cancel(self, session_id: str) -> int:
        """Cancel the session's queued or running workflows in DBOS; returns how many. A queued
        session never starts; a running one is interrupted within a second (its worker watches
        the workflow's status): it pauses, resumable with ``wake``, a side effect in flight
        left ``uncertain_effect`` for an operator, as after a signal."""
        live = [a.workflow_id for a in self.activations(session_id)
                if a.state in ("ENQUEUED", "PENDING", "DELAYED")]
        for workflow_id in live:
            self.client.cancel_workflow(workflow_id)
        return len(live)

    def recover(self, executor_id: str) -> list[str]:
        """Hand the unfinished sessions of a worker that is gone for good (it will not start
        again under ``executor_id``) back to the queue, for any worker; returns their workflow
        ids. Safe even if that worker is alive after all: a second activation waits for the
        session's lease and then runs nothing the journal already has."""
        from tether.durable.workflow import WORKFLOW_NAME

        pending = self.client.list_workflows(name=WORKFLOW_NAME, queue_name=self.queue,
                                             status="PENDING", executor_id=executor_id,
                                             load_input=False, load_output=False)
        for row in pending:
            self.client.resume_workflow(row.workflow_id, queue_name=self.queue)
        return [row.workflow_id for row in pending]

    def _decision(self, session_id: str, approval_id: str) -> None:
        request = self.recipe.approval_store.get(approval_id)
        if request is None or request.session_id != session_id:
            raise NotFound(f"no approval request {approval_id!r} of session {session_id!r}; "
                           "list them with `tether approvals list`")
        report = self.describe(session_id)
        if report.status == "refused":  # a decision it would never act on: record none
            raise SessionRefused(f"session {session_id} is refused: {report.detail}")


def serve(agent: str, database: str, *, executor_id: str, queue: str = DEFAULT_QUEUE,
          concurrency: int = 8, stop: threading.Event, grace: int = 0,
          poll: float = 1.0, ready: Callable[[], object] = lambda: None) -> None:
    """Run one worker until ``stop`` is set: DBOS launched with ``executor_id`` (which recovers
    that executor's unfinished sessions first), serving ``queue`` with at most ``concurrency``
    sessions at a time. On stop, running sessions get ``grace`` seconds; any still running is
    left to DBOS's recovery when a worker with this executor id starts again."""
    from dbos import DBOS

    from tether.durable.workflow import Sessions

    if concurrency < 1:
        raise InvalidArgument("concurrency must be >= 1 (sessions one worker runs at once)")
    Sessions(agent, build_agent(agent))  # registered with DBOS under its factory's name
    DBOS(config=dbos_config(database, executor_id))
    try:
        DBOS.launch()
        DBOS.register_queue(queue, worker_concurrency=concurrency, polling_interval_sec=poll,
                            on_conflict="always_update")
        ready()
        stop.wait()
    finally:
        DBOS.destroy(workflow_completion_timeout_sec=grace)
