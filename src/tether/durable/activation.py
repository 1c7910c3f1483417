"""One activation of a fleet's session: start it, or bring it forward from its journal.

Why: a fleet runs each session as one durable workflow whose body may be run again — DBOS
recovers a workflow whose worker died by running its body from the top, and a session that a
person unblocks (an approval, a settled call) is brought forward by the same body. The body must
therefore be harmless to run any number of times. It is, by construction, because it decides
from tether's journal alone, which stays the truth: no journal, start the session; an ended
session, report how it ended; a session paused on a person (an approval nobody has decided, a
side effect that may or may not have happened), report the pause and run nothing; otherwise
resume it, and the journal's effect ledger skips every completed call and stops on an uncertain
one instead of repeating it. A session under a standing halt reports ``halted`` (its run pauses
``halted``, or its resume is refused): a halt is an operator's word, not a failure for DBOS to
retry; once it is lifted, waking the session goes on.

A pause never strands a session, whatever the interleaving with a person's decision. The
session stores its approval request (a row of the approval store), then journals its pause;
an approver decides the request (a compare-and-set on that row), then looks at the journal and
wakes the session only if it finds the pause. An approver quick enough to decide between the
row and the pause finds no pause and wakes nothing, so the activation, once its pause is
durable, looks again (the loop below: journal, then undecided requests) and goes on by itself
when nothing is left undecided. Each side writes, then reads what the other writes, on the same
database: whichever order their commits take, at least one sees the other's write (the approver
the pause, or the activation the decision), so the session is continued by its own activation,
or by the one the approver enqueues, or by both (harmless: the second waits for the lease, then
runs nothing the journal has). The same holds for an operator's settlement of an uncertain call.

Decision: this module knows nothing of DBOS (``tether.durable.dbos`` wraps it), so it is tested
and reasoned about as plain tether. A worker that meets the session's lease held by another
process waits for it (the holder is finishing the same session, or was a process on another
host whose lease lapses within its ttl) rather than failing the workflow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from tether.errors import InvalidArgument, NotFound
from tether.runtime.lifecycle.agent import Agent
from tether.runtime.lifecycle.session import Session, SessionEnded
from tether.store.anchor_chain import ERASED_TYPE
from tether.store.base import SessionBusy, Store
from tether.store.halts import Halted
from tether.types import Event
from tether.vocabulary import EventType

# what an activation reports when the session is waiting for a person, not for a worker
WAITING = frozenset({"needs_approval", "uncertain_effect"})
# where a queued session's task waits for its first activation: tether's store, in the table
# kept apart from the journal (never chained, shown or exported), so DBOS's records hold no
# more than the session id and its status
TASK_KEY = "fleet:task"


def queue_task(store: Store, session_id: str, task: str) -> None:
    """Keep ``task`` for the first activation of ``session_id`` (a session id queued again
    keeps the task it was first queued with)."""
    if store.get_private(session_id, TASK_KEY) is None:
        store.put_private(session_id, TASK_KEY, {"task": task})


def queued_task(store: Store, session_id: str) -> str:
    record = store.get_private(session_id, TASK_KEY)
    if record is None or not isinstance(record.get("task"), str):
        raise NotFound(f"session {session_id} was never started and no task is queued for "
                       "it in the agent's store: queue it with Fleet.enqueue")
    return str(record["task"])


def status_of(events: Sequence[Event], pending_approvals: int) -> str | None:
    """The session's status if an activation must run nothing (it ended, or waits for a
    person), else None (start or resume it). ``pending_approvals``: its undecided requests."""
    if not events:
        return None
    if events[0].type == ERASED_TYPE:
        return "erased"
    last = events[-1]
    if last.type == EventType.SESSION_END:
        return str(last.data["reason"])
    if last.type == EventType.SESSION_PAUSED:
        reason = str(last.data["reason"])
        if reason == "uncertain_effect" or (reason == "needs_approval" and pending_approvals):
            return reason  # an operator settles, an approver decides; then it is woken again
    return None


def activate(agent: Agent, session_id: str, task: str | None = None, *,
             wait: Callable[[float], None] = time.sleep,
             watch: Callable[[Session], AbstractContextManager[object]] = lambda _: nullcontext()
             ) -> str:
    """Start or bring forward ``session_id`` and return its status: a stop reason
    (``finished``, ``needs_approval``, ``uncertain_effect``, ...). ``task`` is used only if it
    never started (None: the task the fleet queued for it in the agent's store). Safe to call
    again at any point, from any worker. ``watch(session)`` is held while the session runs
    (the fleet's: whoever may cancel it)."""
    store = journal_store(agent)
    while True:
        events = store.read(session_id)
        settled = status_of(events, len(agent.approval_store.pending(session_id)))
        if settled is not None:
            return settled
        try:
            if not events:
                first = task if task is not None else queued_task(store, session_id)
                session = agent.session(first, session_id=session_id)
                with watch(session):
                    result = session.run()
            else:
                session = agent.load(session_id)
                with watch(session):
                    result = session.resume()
        except SessionBusy as busy:  # another activation holds it: let it finish, then look
            wait(min(1.0, max(0.05, busy.expires_at - time.time())))
            continue
        except SessionEnded:  # it ended between the read and the resume: look again
            continue
        except Halted:  # a halt stands over it (tether.store.halts): the activation is done,
            return "halted"  # not failed; `tether unhalt`, then `tether fleet wake` goes on
        if result.stop_reason.value in WAITING:  # its pause is durable: was it decided (or
            continue  # settled) meanwhile? then nobody will wake it: look again and go on
        return result.stop_reason.value


def journal_store(agent: Agent) -> Store:
    """The agent's store, which a fleet's agent must have (its workers share the journals)."""
    store = agent.journal_store
    if store is None:
        raise InvalidArgument(f"agent {agent.name!r} has no store, so no other worker could see "
                              "its sessions: build it with Agent(..., store='postgresql://...' or "
                              "'sqlite:///shared.db')")
    return store
