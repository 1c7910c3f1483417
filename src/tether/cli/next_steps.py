"""The exact commands that continue a paused session, for a person at a shell.

Why: a session's own notice speaks to whoever holds the Session object ("approve or deny them,
then resume the session"); someone who started the run with ``tether run`` needs the commands
to type, with the ids, the recipe and the store filled in. ``tether run`` and ``tether resume``
say the same thing about the same pause, so it is worked out once here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.runtime.session import Session


def continue_commands(session: Session, agent: str, store: str) -> list[str]:
    """The commands, in the order to type them, that decide what ``session`` paused for and
    continue it; ``agent`` is the recipe reference, ``store`` the `` --store URL`` hint or ""."""
    from tether.runtime.state import fold

    events = session.replay()
    reason = events[-1].data.get("reason") if events and events[-1].type == "session.paused" \
        else None
    steps: list[str] = []
    if reason == "needs_approval":
        for request in session.pending_approvals():
            steps += [f"tether approvals {verb} {request.id} --approver NAME{store}"
                      for verb in ("approve", "deny")]
    elif reason == "uncertain_effect":
        state = fold(events)
        uncertain = sorted(state.started - set(state.results))
        steps += [f"tether settle {session.id} {call_id} retry|skip --operator NAME "
                  f"--agent {agent}{store}" for call_id in uncertain]
    if reason is not None:
        steps.append(f"tether resume {session.id} --agent {agent}{store}")
    return steps
