"""What-if in the console: paste a policy, pick sessions, see which recorded decisions change.

Why: before a policy change ships, its owner wants its effect on real traffic — which stored
calls would now be refused, held for approval or let through — without a terminal and without
writing the draft to a file on the server. ``tether what-if`` answers it on the command line;
this page is the same question in a form.

Decision: the policy is the pasted YAML loaded by the policy engine's own loader
(``YamlPolicy.from_string``: what ``load_policy`` does with a file's text, so the errors are the
ones ``tether what-if`` prints); the replay is ``journal.views.whatif.replay_decisions``, as the
command runs it, and like the command a session whose chain is broken is skipped and reported,
never replayed. Sessions are the ids typed, or the session list's filter (status, agent) within
the viewer's tenant, at most ``LIMIT``. Nothing is stored: the page reads the store and renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tether.journal.views.whatif import Change, describe, replay_decisions
from tether.policy.yaml_policy import YamlPolicy
from tether.policy.yaml_source import PolicyLoadError
from tether.runtime.approvals.identity import Identity
from tether.store.base import Store
from tether.store.paging import ANY_TENANT, SessionFilter, page_sessions
from tether.web._access import open_session
from tether.web.pages import console, identity, render

LIMIT = 200  # sessions one what-if replays from a filter
SOURCE = "the pasted policy"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One session's replay: its decisions asked, those that change, or why it was skipped."""

    session_id: str
    decisions: int = 0
    changes: tuple[Change, ...] = ()
    skipped: str = ""


def _ids(text: str) -> list[str]:
    return list(dict.fromkeys(text.replace(",", " ").split()))


def chosen(store: Store, viewer: Identity, ids: list[str], status: str,
           agent: str) -> list[str]:
    """The sessions to replay: the ids given, else the list filter's newest ``LIMIT``."""
    if ids:
        return ids
    tenant = ANY_TENANT if viewer.all_tenants else viewer.tenant_id
    where = SessionFilter(status=status or None, agent=agent or None, tenant_id=tenant)
    return [i.session_id for i in page_sessions(store, where, limit=LIMIT).sessions]


def replay(store: Store, viewer: Identity, session_id: str, policy: YamlPolicy) -> Outcome:
    try:
        opened = open_session(store, viewer, session_id)
    except HTTPException as exc:
        return Outcome(session_id, skipped=str(exc.detail))
    if opened.broken is not None:
        return Outcome(session_id, skipped=f"not replayed: {opened.broken}; run `tether audit "
                       "verify`")
    found = replay_decisions(opened.events, policy)
    return Outcome(session_id, found.decisions, found.changes)


async def form_page(request: Request) -> Response:
    q = request.query_params
    return render(request, "whatif.html", policy="", sessions=q.get("sessions", ""),
                  status=q.get("status", ""), agent=q.get("agent", ""), error="",
                  outcomes=None, describe=describe)


async def run_page(request: Request) -> Response:
    form = await request.form()
    text, sessions = str(form.get("policy", "")), str(form.get("sessions", ""))
    status, agent = str(form.get("status", "")), str(form.get("agent", ""))
    page: dict[str, Any] = {"policy": text, "sessions": sessions, "status": status, "agent": agent,
            "describe": describe}
    try:
        policy = YamlPolicy.from_string(text, SOURCE)
    except PolicyLoadError as exc:
        return render(request, "whatif.html", 400, error=str(exc), outcomes=None, **page)
    store, viewer = console(request).store, identity(request)
    outcomes = [replay(store, viewer, sid, policy)
                for sid in chosen(store, viewer, _ids(sessions), status, agent)]
    return render(request, "whatif.html", error="", outcomes=outcomes,
                  changed=sum(len(o.changes) for o in outcomes),
                  asked=sum(o.decisions for o in outcomes), **page)


ROUTES = [Route("/whatif", form_page, methods=["GET"]),
          Route("/whatif", run_page, methods=["POST"])]
