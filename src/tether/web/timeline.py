"""A session's timeline page: what ran, who let it, what it spent, and whether the record holds.

Why: an auditor or operator opening a session asks the questions ``tether audit show``
answers — each model turn, each tool call with its decision and why, each approval and who gave
it (and how they were authenticated), pauses and resumes, compactions and erasures, the spend
against each limit — plus whether the hash chain still verifies. This page answers them in a
browser, and grows while the session runs (its rows container names the live stream).

Decision: every word comes from the journal views (``journal.views.timeline.header`` and
``spend_line``; ``journal.views.rows`` for the rows, which keeps the timeline's own lines), the
approval records (``approver_auth``, ``break_glass``) and ``journal.tamper.diagnose`` — the page
derives nothing of its own. Filters live in the URL (``?types=tool,approval``) so a filtered
view can be shared; consecutive noisy rows fold into one ``<details>``. ``/sessions/{id}/timeline
?after=SEQ&fragment=1`` returns just the rows after SEQ, which the live script appends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tether.journal.views.rows import GROUPS, Row, parent_of, rows
from tether.journal.views.timeline import header, spend_line
from tether.runtime.approvals.requests import ApprovalRequest, StoredApprovals
from tether.types import Event
from tether.vocabulary import EventType
from tether.web import _spend
from tether.web._access import open_session
from tether.web.pages import console, identity, render

Item = tuple[str, Any]  # ("row", Row) or ("fold", [Row, ...])


def chosen_types(request: Request) -> tuple[str, ...]:
    """The groups ``?types=`` asks for (all when absent); unknown names are ignored."""
    asked = {t.strip() for value in request.query_params.getlist("types")
             for t in value.split(",")}
    picked = tuple(g for g in GROUPS if g in asked)
    return picked or GROUPS


def items(drawn: Sequence[Row], types: Sequence[str]) -> list[Item]:
    """The rows of the chosen groups, consecutive noisy ones folded together."""
    out: list[Item] = []
    for row in drawn:
        if row.group not in types:
            continue
        if row.noisy and out and out[-1][0] == "fold":
            out[-1][1].append(row)
        elif row.noisy:
            out.append(("fold", [row]))
        else:
            out.append(("row", row))
    return [("row", item[1][0]) if item[0] == "fold" and len(item[1]) == 1 else item
            for item in out]


def approvals(request: Request, session_id: str) -> Mapping[str, ApprovalRequest]:
    """The session's approval records by id: who decided, how authenticated, break-glass."""
    viewer = identity(request)
    found = StoredApprovals(console(request).store, viewer.tenant_id).every(session_id)
    return {a.id: a for a in found}


def stop_reason(events: Sequence[Event]) -> str:
    """How the session stopped (its last end or pause), or that it has not."""
    for event in reversed(events):
        if event.type in (EventType.SESSION_END, EventType.SESSION_PAUSED):
            word = "ended" if event.type == EventType.SESSION_END else "paused"
            return f"{word}: {event.data.get('reason')}"
    return "running, or stopped without an end (a crash: `tether resume` continues it)"


def _after(request: Request) -> int:
    try:
        return max(int(request.query_params.get("after", "0")), 0)
    except ValueError:
        return 0


async def session_page(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    opened = open_session(console(request).store, identity(request), session_id)
    types = chosen_types(request)
    drawn = rows(opened.events)
    last = opened.events[-1].seq if opened.events else 0
    return render(request, "timeline.html", session_id=session_id, head=header(opened.events),
                  spend=spend_line(opened.events),
                  stop=stop_reason(opened.events), broken=opened.broken,
                  chart=_spend.lines(opened.events), chart_size=(_spend.WIDTH, _spend.HEIGHT),
                  items=items(drawn, types), types=types, groups=GROUPS,
                  approvals=approvals(request, session_id), parent=parent_of(opened.events),
                  last_seq=last, filtered=",".join(types) if types != GROUPS else "")


async def timeline_rows(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    opened = open_session(console(request).store, identity(request), session_id, verify=False)
    after = _after(request)
    types = chosen_types(request)
    drawn = [r for r in rows(opened.events) if r.seq > after]
    last = opened.events[-1].seq if opened.events else after
    page = render(request, "timeline_rows.html", session_id=session_id,
                  items=items(drawn, types), approvals=approvals(request, session_id))
    page.headers["X-Tether-Last-Seq"] = str(max(last, after))
    return page


ROUTES = [
    Route("/sessions/{session_id}", session_page),
    Route("/sessions/{session_id}/timeline", timeline_rows),
]
