"""The status line ``tether audit show`` prints: what state a stored session is in, and what to
type next.

Why its own module: the line is where a person reading a session learns whether it can go on,
so it must agree with what ``tether resume`` will do — an erased session or an erasure record
is never offered for resume (``tether.journal.views.erased`` says which they are, once for every
view) — and its commands must work as printed: the recipe is the one ``tether run`` recorded
(``tether.cli.next_steps``), the store the one the session was read from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.cli.next_steps import uncertain
from tether.journal.views.erased import ERASED, ERASURE, erased_by, is_erasure_record
from tether.journal.views.resume_line import recorded_recipe
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.types import Event


def status_line(events: Sequence[Event], store: str = "") -> str:
    """The session's status and the commands that continue it; ``store``: the `` --store URL``
    hint for them, or ""."""
    last = events[-1]
    sid = last.session_id
    by = erased_by(events)
    if by is not None:
        return (f"{ERASED}: its content was removed by {by} (`tether audit show {by}{store}`); "
                "nothing can resume it")
    if is_erasure_record(events):
        return f"{ERASURE} record: not a session, nothing to resume"
    resume = f"tether resume {sid} --agent {recorded_recipe(events)}{store}"
    if last.type == EventType.SESSION_END:
        return f"ended ({last.data.get('reason')})"
    if last.type == EventType.SESSION_PAUSED:
        reason = last.data.get("reason")
        if reason == "needs_approval":
            return (f"paused (needs_approval): decide with `tether approvals list --session "
                    f"{sid}{store}`, then `{resume}`")
        if reason == "interrupted":  # nothing uncertain: it waits for nobody
            return f"paused (interrupted): nothing was left uncertain; `{resume}` continues it"
        calls = ", ".join(uncertain(events)) or "?"
        return (f"paused ({reason}): interrupted calls {calls}; decide each with `tether settle "
                f"{sid} CALL_ID retry|skip --operator NAME --agent {recorded_recipe(events)}"
                f"{store}`, then resume")
    return f"open: no end recorded (still running, or its process died: `{resume}` continues it)"
