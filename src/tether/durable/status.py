"""What state a fleet's session is in: one closed list of names, each saying who acts next.

Why: an operator reads ``tether fleet status`` to know whether to wait, decide, settle, wake or
investigate. A status read from DBOS alone cannot say that (a workflow that ended may have left
its session paused for a person, finished, or refused), and one read from the journal alone
cannot say whether a worker holds the session or a queue does. So the journal is read first,
as the truth, and DBOS only for what the journal cannot know; and every state a session can
reach has a name here (``STATUSES``), so none is reported under another's name — before this,
any workflow that raised, a tampered journal among them, was reported ``paused``.

Decision: a journal that does not verify is ``refused`` before anything it says is believed
(its last event could be forged to read ``finished``); an activation that raised is ``refused``
when it refused the session by rule (a broken chain, another recipe) and ``failed`` otherwise
(its error is the detail, and ``Fleet.wake`` tries again). This module knows nothing of DBOS:
it is given each activation's DBOS state as a string.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tether.durable.activation import status_of
from tether.journal.chain import verify_chain
from tether.store.anchor_chain import ERASED_TYPE
from tether.types import Event

STATUSES = {
    "queued": "an activation waits in the queue for a worker",
    "running": "a worker runs it",
    "needs_approval": "a call waits for a person: approve or deny it (the session is woken)",
    "uncertain_effect": "a side effect may or may not have happened: an operator settles it",
    "paused": "it paused and nobody is asked for anything (a decision made outside the fleet, "
              "an interruption): wake it",
    "cancelled": "its workflow was cancelled in DBOS: wake it to go on, if it had started",
    "refused": "the fleet will not run it (its journal does not verify, or another recipe "
               "started it): see why, e.g. with `tether audit verify --session ID`",
    "failed": "its last activation raised an error (see it): wake it to try again",
    "erased": "its content was erased",
    "unknown": "neither the journal nor DBOS has it",
}
"""Every status a session of a fleet can have besides its stop reason once it ended
(``finished``, ``step_budget``, ``denied``, ...), and what it means (docs/guide/fleet.md lists
the same)."""
# the statuses that need a person before the session moves (``tether fleet waiting``)
NEEDS_A_PERSON = frozenset({"needs_approval", "uncertain_effect", "paused", "refused",
                            "failed"})
LIVE = frozenset({"ENQUEUED", "DELAYED", "PENDING"})  # DBOS states of an unfinished activation
FAILED = frozenset({"ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
REFUSALS = frozenset({"JournalTampered", "RecipeChanged"})  # raised by Session.restore


@dataclass(frozen=True)
class Report:
    """One session's status (a ``STATUSES`` name or a stop reason) and why, where it helps."""

    status: str
    detail: str = ""


@dataclass(frozen=True)
class Attempt:
    """What status needs of one DBOS activation of the session."""

    state: str  # DBOS's: ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED, ...
    error: str | None = None  # its error's type and message, when it raised


def describe(session_id: str, events: Sequence[Event], pending_approvals: int,
             attempts: Sequence[Attempt]) -> Report:
    """The status of ``session_id`` from its journal (``events``), its undecided approval
    requests and its activations (``attempts``, oldest first)."""
    if events and events[0].type != ERASED_TYPE:
        broken = verify_chain(events)
        if broken is not None:
            return Report("refused", f"its journal does not verify (the hash chain breaks at "
                          f"event {broken}); it will not be run: run `tether audit verify "
                          f"--session {session_id}`")
    settled = status_of(events, pending_approvals)
    if settled is not None:
        return Report(settled)
    states = {a.state for a in attempts}
    if "PENDING" in states:
        return Report("running")
    if states & LIVE:
        return Report("queued")
    if not attempts:
        return Report("unknown")
    last = attempts[-1]
    if last.state in FAILED:
        error = last.error or f"DBOS state {last.state}"
        if error.partition(":")[0] in REFUSALS:
            return Report("refused", error)
        return Report("failed", f"{error}; wake it to try again")
    if last.state == "CANCELLED":
        return Report("cancelled")
    if not events:
        return Report("unknown", "DBOS ran it but its journal is empty: do the workers use the "
                      "store this fleet's agent names?")
    return Report("paused", "nobody is asked for anything: wake it (tether fleet wake)")
