"""Timeline lines for a session's own life: its start, pauses and resumptions, its end, and the
grade an evaluation gave it.

Why a module per event family: the timeline (``journal.views.timeline``) assembles lines from
every part of the runtime; each family's renderers sit together so that one who adds an event
to a family finds the lines of its neighbours, and the assembly stays short.

Decision: as the rest of the timeline, each renderer is a pure function of the event's stored
data (no store, no runtime), and its family's table (``SESSION_RENDER``) maps event types to it.
"""

from __future__ import annotations

from tether.journal.payloads import (
    EvalGradedData,
    SessionEndData,
    SessionErrorData,
    SessionPausedData,
    SessionResumedData,
    SessionStartData,
    WrapUpSkippedData,
)
from tether.journal.views.plan_lines import plan_lines
from tether.journal.views.text import Renderer, excerpt
from tether.vocabulary import EventType


def _start(d: SessionStartData) -> list[str]:
    lines = [f"start: {excerpt(d.get('task', ''), 80)}"]
    plan = d.get("plan")
    if plan is not None:  # what the request asks for, read before anything untrusted
        lines += plan_lines(plan)
    return lines


def _paused(d: SessionPausedData) -> list[str]:
    pending = d.get("pending") or []
    waiting = f"; waiting: {', '.join(pending)}" if pending else ""
    uncertain = d.get("uncertain") or []
    if uncertain:
        waiting += f"; uncertain, to settle: {', '.join(uncertain)}"
    return [f"paused: {d.get('reason')}: {excerpt(d.get('detail', ''), 80)}{waiting}"]


def _resumed(d: SessionResumedData) -> list[str]:
    return [f"resumed after a {d.get('after')}"]


def _end(d: SessionEndData) -> list[str]:
    detail = f" ({excerpt(d['detail'], 60)})" if d.get("detail") else ""
    lines = [f"ended: {d.get('reason')}{detail}", f"answer: \"{excerpt(d.get('answer', ''))}\""]
    if d.get("notice"):
        lines.append(f"notice: {excerpt(d['notice'])}")
    return lines


def _error(d: SessionErrorData) -> list[str]:
    return [f"error: {excerpt(d.get('error', ''))}"]


def _wrap_up_skipped(d: WrapUpSkippedData) -> list[str]:
    return [f"wrap-up turn skipped: {d.get('reason')} ({excerpt(d.get('detail', ''), 60)})"]


def _graded(d: EvalGradedData) -> list[str]:
    verdict = "pass" if d.get("passed") else "fail"
    why = f": {excerpt(d.get('why', ''), 80)}" if d.get("why") else ""
    return [f"graded {d.get('session_id')} ({d.get('task')} [{d.get('perturbation')} "
            f"#{d.get('repetition')}]) by {d.get('grader')}: {verdict}{why}"]


SESSION_RENDER: dict[str, Renderer] = {
    EventType.SESSION_START: _start,
    EventType.SESSION_PAUSED: _paused,
    EventType.SESSION_RESUMED: _resumed,
    EventType.SESSION_END: _end,
    EventType.SESSION_ERROR: _error,
    EventType.SESSION_WRAP_UP_SKIPPED: _wrap_up_skipped,
    EventType.EVAL_GRADED: _graded,
}
