"""What a stopped activation records: the wrap-up turn (or why it was skipped), or the pause.

Why its own module: when the chokepoint stops a run, the session decides between two records —
the end, after a last model turn without tools held inside the budget, or a pause that names
what waits (approvals, an operator's settlement, nothing for an interruption) — and what each
says to the person who reads it. Those records are the session's words, not its course, and
they made the session's file the longest of the runtime.

Decision: plain functions of what they record from (the journal, the state, the accountant),
loaded only by a run that stops or pauses (a run that finishes pays nothing for them), so
the session's ``_drive`` reads as the run's course; each appends and returns, and the caller
writes it (awaited in a run, at once when interrupted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.lifecycle.interrupt import uncertain_calls
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.runtime.accounting.accountant import Accountant
    from tether.runtime.accounting.budget import Spend
    from tether.runtime.approvals.requests import ApprovalRequest
    from tether.runtime.chokepoint.environment import Environment
    from tether.runtime.record.state import SessionState
    from tether.tools.registry import ToolRegistry

WRAP_UP = ("[tether] The run is stopping: {why}. Tools are no longer available. Give your best "
           "final answer now from what you already have, and say plainly what is missing or "
           "unfinished because of this.")


async def wrap_up(env: Environment, journal: Journal, stop: Stop) -> str:
    """The model's wrap-up answer after ``stop`` ("" when the stop gets none, or when the
    budget left has no room for it: journaled as skipped, with why)."""
    why = f"{stop.reason.value} ({stop.detail})"
    if stop.reason.gets_final_turn and not stop.wrap_up:
        journal.append(EventType.SESSION_WRAP_UP_SKIPPED, {
            "reason": stop.reason.value, "detail": "the model went past the output cap it "
            "was sent; a wrap-up call could do so again"})
    elif stop.reason.gets_final_turn:
        try:
            response = await env.wrap_up(WRAP_UP.format(why=why))
            return response.text
        except Stop as no_room:
            journal.append(EventType.SESSION_WRAP_UP_SKIPPED, {"reason": no_room.reason.value,
                                                       "detail": no_room.detail})
    return ""


def record_pause(journal: Journal, state: SessionState, registry: ToolRegistry,
                 accountant: Accountant, waiting: Sequence[ApprovalRequest], stop: Stop) -> Spend:
    """Append the pause after ``stop``: what waits (``waiting``: the approvals no one has
    decided; the calls an operator must settle) and what to do; the spend so far."""
    if stop.reason is StopReason.NEEDS_APPROVAL:
        notice = (f"[tether] Paused: {len(waiting)} call(s) wait for approval "
                  f"({', '.join(f'{r.tool} [{r.id}]' for r in waiting)}). Approve or deny "
                  "them, then resume the session.")
    elif stop.reason is StopReason.UNCERTAIN_EFFECT:
        notice = (f"[tether] Paused: {stop.detail}. Settle each with session.settle(call_id, "
                  "'retry' or 'skip', operator=...), then resume the session.")
    elif stop.reason is StopReason.HALTED:
        notice = (f"[tether] Halted: {stop.detail}. Nothing more runs while the halt stands: "
                  "lift it (tether unhalt), then resume the session.")
    else:
        notice = f"[tether] Paused: {stop.detail}. Resume the session to continue."
    spend = accountant.spend()
    journal.append(EventType.SESSION_PAUSED, {
        "reason": stop.reason.value, "detail": stop.detail, "answer": "", "notice": notice,
        "pending": [r.id for r in waiting],
        "uncertain": uncertain_calls(state, registry),
        "active_seconds": accountant.activation_seconds(), "spend": spend.to_dict(),
    })
    return spend
