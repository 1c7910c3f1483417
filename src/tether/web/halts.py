"""Halting from the console: the standing halts, a halt issued from a page, and its unhalt.

Why: a person watching a fleet in the console should not have to open a shell to stop it. A
session's page halts that session; the sessions list halts what its filter shows (an agent, a
tenant, or — for an operator of every tenant only — everything); the halts page lists the
standing halts with who, why and when, each with an "Unhalt" button.

Decision: the page checks no rule of its own. Every halt and unhalt goes to
``tether.runtime.chokepoint.halts`` (``halt``, ``unhalt``, ``standing_halts``) with the identity
the authentication middleware established (never a form field), so a person scoped to one
tenant halts, sees and lifts only that tenant's halts there. The CSRF token and the ``Origin``
were checked by ``tether.web.security.Guard`` before any page runs. The page's own duties: a
reason is required; a session halted from its page must be one the viewer may see (another
tenant's is "not found", as on its page); a halt naming no session, agent or tenant must say
so (``everything``); and another tenant's halt id is "not found" in the same words as an id
that never was. A refusal changes nothing and answers the halts page with why.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tether.errors import InvalidArgument, NotFound
from tether.journal.views.text import when
from tether.runtime.chokepoint.halts import halt, standing_halts, unhalt
from tether.store.halts import HaltScope
from tether.web._access import open_session
from tether.web.pages import console, identity, render

FIELDS = frozenset({"csrf", "reason", "session", "agent", "tenant", "everything"})


def halts_page(request: Request, *, status: int = 200, error: str | None = None) -> Response:
    """GET /halts: the halts standing that the viewer may see (and lift), oldest first."""
    rows: list[dict[str, Any]] = [
        {"id": h.id, "scope": str(h.scope), "reason": h.reason, "by": h.by,
         "method": h.by_method, "at": when(h.at)}
        for h in standing_halts(console(request).store, identity(request))]
    return render(request, "halts.html", status_code=status, rows=rows, error=error,
                  halted=request.query_params.get("halted"),
                  lifted=request.query_params.get("lifted"))


async def issue(request: Request) -> Response:
    """POST /halts: a halt of the scope the form names, with its reason, by the viewer."""
    form = await request.form()
    return await run_in_threadpool(issued, request, form)


def issued(request: Request, form: FormData) -> Response:
    viewer, store = identity(request), console(request).store
    try:
        scope = scope_of(request, form)
        made = halt(store, scope, reason=str(form.get("reason", "")).strip(), by=viewer)
    except InvalidArgument as bad:
        return halts_page(request, status=400, error=str(bad))
    except (NotFound, HTTPException) as unseen:
        why = unseen.detail if isinstance(unseen, HTTPException) else str(unseen)
        return halts_page(request, status=404, error=why)
    return RedirectResponse(f"/halts?halted={made.id}", status_code=303)


def scope_of(request: Request, form: FormData) -> HaltScope:
    """The scope a halt form names, after its fields were checked (InvalidArgument: why not;
    HTTP 404: a session the viewer may not see)."""
    keys = [key for key, _ in form.multi_items()]
    if set(keys) - FIELDS or len(keys) != len(set(keys)):
        raise InvalidArgument("the form has fields the console never sends, or one twice; "
                              "halt from the session's page, the sessions list or this page")
    if not all(isinstance(value, str) for _, value in form.multi_items()):
        raise InvalidArgument("a field is a file; a halt's fields are text")
    if not str(form.get("reason", "")).strip():
        raise InvalidArgument("say why you halt (the reason is recorded with the halt and "
                              "shown to whoever lifts it)")
    named = {key: str(form.get(key, "")).strip() or None for key in ("session", "agent",
                                                                     "tenant")}
    if named["session"] is not None:  # a session the viewer may not see is not found
        open_session(console(request).store, identity(request), named["session"],
                     verify=False)
    if not any(named.values()) and form.get("everything") != "yes":
        raise InvalidArgument("this halt names no session, agent or tenant: it would stop "
                              "every session you may see; tick 'everything' to mean that")
    return HaltScope(named["session"], named["agent"], named["tenant"])


async def lift(request: Request) -> Response:
    """POST /halts/{halt_id}/unhalt: lift one standing halt the viewer may see."""
    await request.form()  # (its only field, csrf, was checked by the guard)
    return await run_in_threadpool(lifted, request)


def lifted(request: Request) -> Response:
    halt_id = request.path_params["halt_id"]
    try:
        unhalt(console(request).store, halt_id, by=identity(request))
    except NotFound as unknown:  # never was, already lifted, or another tenant's
        return halts_page(request, status=404, error=str(unknown))
    return RedirectResponse(f"/halts?lifted={halt_id}", status_code=303)


ROUTES = [Route("/halts", halts_page, methods=["GET"]),
          Route("/halts", issue, methods=["POST"]),
          Route("/halts/{halt_id}/unhalt", lift, methods=["POST"])]
