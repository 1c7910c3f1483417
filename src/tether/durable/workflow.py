"""The DBOS workflow a fleet runs per session: its body is one tether activation.

Why: DBOS gives a fleet its queues, recovery of a dead worker's workflows, cancellation and
operations tooling; tether gives each session its governed, journaled run. Making every model
and tool call a DBOS step would write each call twice and let DBOS's retry (at least once)
bypass tether's gate, which stops on an uncertain side effect instead of repeating it. So the
grain is coarse: one workflow per activation of a session, no DBOS steps inside it; the body is
``tether.durable.activation.activate``, which is harmless to run again from the top (DBOS's
recovery does exactly that). The DBOS records hold the session id (the workflow id, and the
body's one input) and its status (the body's output), with the agent's factory name as the
instance's; the task waits for the first activation in tether's store
(``activation.queue_task``), and tether's journal stays the truth of what happened.

Decision: the workflow is a method of a DBOS *configured instance* named by the agent's factory
reference (``module:function``). Each worker builds its Agent once, from its own factory, with
its own store; DBOS finds the instance by name when it runs or recovers a workflow, so a worker
runs only the agents it was started with — a workflow row naming another factory fails with
DBOS's "instance not registered" instead of importing code a database row names. A running
activation is watched for DBOS's cancellation (one status read a second), which tether turns
into an interruption: the session pauses, resumable, as after a signal.

This module imports ``dbos`` at the top and is itself imported only by ``tether.durable.dbos`` when
a worker starts or a fleet client needs the names, so ``import tether`` does not load DBOS.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from dbos import DBOS, DBOSConfiguredInstance

from tether.durable.activation import activate, journal_store
from tether.runtime.lifecycle.agent import Agent
from tether.runtime.lifecycle.session import Session

CLASS_NAME = "tether.durable.Sessions"
WORKFLOW_NAME = "tether.durable.session"
CANCEL_POLL = 1.0  # seconds between two looks at a running session's workflow status


@DBOS.dbos_class(CLASS_NAME)
class Sessions(DBOSConfiguredInstance):
    """The sessions of one agent recipe, as DBOS workflows; ``ref`` names its factory."""

    def __init__(self, ref: str, agent: Agent) -> None:
        journal_store(agent)  # a fleet's agent needs a store every worker shares
        self.agent = agent
        super().__init__(config_name=ref)

    @DBOS.workflow(name=WORKFLOW_NAME)
    def run(self, session_id: str) -> str:
        """Start or bring forward one session; return its status (a stop reason)."""
        workflow_id = DBOS.workflow_id
        assert workflow_id is not None
        return activate(self.agent, session_id,
                        watch=lambda session: cancellable(session, workflow_id))


@contextlib.contextmanager
def cancellable(session: Session, workflow_id: str, every: float = CANCEL_POLL) -> Iterator[None]:
    """While held, look at the workflow's DBOS status every ``every`` seconds and interrupt the
    session (``Session.cancel``: it pauses, an effect in flight left uncertain) once someone has
    cancelled the workflow: DBOS cancels only between steps, and an activation is one body."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            status = DBOS.get_workflow_status(workflow_id)
            if status is not None and status.status == "CANCELLED":
                session.cancel(f"workflow {workflow_id} was cancelled (DBOS)")
                return

    watcher = threading.Thread(target=watch, name=f"tether-fleet-cancel-{workflow_id}",
                               daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()


def registered_name(fn: Any) -> str:
    """The name DBOS registered a workflow function under (for an enqueue by name)."""
    return str(fn.dbos_function_name)
