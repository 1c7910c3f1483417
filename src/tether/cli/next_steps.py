"""The exact commands that continue a paused session, for a person at a shell.

Why: a session's own notice speaks to whoever holds the Session object ("approve or deny them,
then resume the session"); someone who started the run with ``tether run`` needs the commands
to type, with the ids, the recipe and the store filled in. ``tether run`` and ``tether resume``
say the same thing about the same pause, so it is worked out once here.

Decision: every command printed names the recipe and the store explicitly, so it works pasted
into a new shell (no ``TETHER_STORE``, another terminal). ``tether run`` records the recipe it
was given (``--agent`` as typed, e.g. ``examples/billing_desk.py:agent``) in the session's
metadata under ``RECIPE_KEY``: the session's start is journaled and read by every process that
later decides for it, so ``tether approvals approve`` — which has only the store — can name the
recipe too. That is the smallest honest carrier: no state file of the CLI's own to go stale or
be missing on another machine, and the journal already says who ran what. A session started
from Python records none, and the commands then say ``--agent MODULE:ATTR`` for the operator to
fill in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.cli.common import store_hint
from tether.journal.views.resume_line import RECIPE_KEY
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.lifecycle.session import Session
    from tether.types import Event




def run_metadata(agent: str) -> dict[str, str]:
    """The metadata ``tether run`` gives a session: the recipe reference it was started with."""
    return {RECIPE_KEY: agent}


def session_store(session: Session, given: str | None) -> str:
    """The `` --store URL`` hint for the store ``session`` is journaled in: the recipe's own
    store when it names one (its approvals wait there), else the one the command was given."""
    own = session.agent.journal_store
    return store_hint(own.url if own is not None else given)


def uncertain(events: Sequence[Event]) -> list[str]:
    """The calls a paused journal waits on an operator for: those its pause lists or, in a
    journal written before pauses listed them, the calls that started and left no result."""
    from tether.runtime.record.state import fold

    if events and events[-1].type == EventType.SESSION_PAUSED and "uncertain" in events[-1].data:
        return list(events[-1].data["uncertain"])
    try:
        state = fold(events)
    except Exception:  # a journal that does not fold (tampered) has no reliable answer
        return []
    return sorted(state.started - set(state.results) - set(state.settled))


def continue_commands(session: Session, agent: str, store: str) -> list[str]:
    """The commands, in the order to type them, that decide what ``session`` paused for and
    continue it; ``agent`` is the recipe reference, ``store`` the `` --store URL`` hint or ""."""
    events = session.replay()
    paused = bool(events) and events[-1].type == EventType.SESSION_PAUSED
    reason = events[-1].data.get("reason") if paused else None
    steps: list[str] = []
    if reason == "needs_approval":
        for request in session.pending_approvals():
            steps += [f"tether approvals {verb} {request.id}{store}"
                      for verb in ("approve", "deny")]
    elif reason == "uncertain_effect":
        steps += [f"tether settle {session.id} {call_id} retry|skip --operator NAME "
                  f"--agent {agent}{store}" for call_id in uncertain(events)]
    if reason is not None:
        steps.append(f"tether resume {session.id} --agent {agent}{store}")
    return steps
