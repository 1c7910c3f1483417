"""The approvals inbox: what waits for the viewer, bound to the exact call, decided as the viewer.

Why: an approver decides on what the page shows, so the page shows what the journal holds — the
tool, the arguments exactly as the record keeps them (a field the policy hid stays hidden: the
value is rendered, never looked up), the policy's reason, where each argument came from
(untrusted text marked), the session's spend against its budget, who it runs for, and how long
the request has left. A stored row that contradicts its session's journal is shown as forged,
with nothing to press.

Decision: the page checks no rule. Every decision goes to ``deciding.decide`` with the identity
the authentication middleware established (never a form field) and the ``version`` of what the
page showed, so a stale page, a replay, another tenant's id, self-approval, a missing role or an
unentitled break-glass is refused there and recorded there. The page's own duty is the form:
exactly the fields it sends (verdict, note, seen, csrf, break_glass), each once; anything else is
someone editing the request from the browser, refused 400 and recorded with
``deciding.record_attempt``. A request the viewer's tenant cannot see answers 404 whatever was
tried, so an id guessed across tenants reveals nothing (the attempt is still recorded on it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tether.journal.views.resume_line import resume_command as resume_line
from tether.journal.views.text import when
from tether.runtime.approvals.deciding import (
    ApprovalNotFound,
    ApprovalRefused,
    Pending,
    Verdict,
    decide,
    not_found,
    pending,
    record_attempt,
)
from tether.runtime.approvals.requests import (
    ALL_TENANTS,
    ApprovalRequest,
    StoredApprovals,
)
from tether.store.base import Store
from tether.web.pages import console, identity, render

#: The fields the inbox's form sends; any other is an edit the page never offered.
FIELDS = frozenset({"verdict", "note", "seen", "csrf", "break_glass"})
VERDICTS = ("approve", "deny")
LIMITS = (("cost_usd", "max_cost_usd", "$"), ("tokens", "max_tokens", "tokens"),
          ("steps", "max_steps", "steps"), ("tool_calls", "max_tool_calls", "tool calls"),
          ("seconds", "max_seconds", "s"))


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument as the record shows it, and where its value came from."""

    name: str
    value: str  # as the journal kept it (JSON), hidden fields as hidden
    origins: tuple[str, ...]
    labels: tuple[str, ...]

    @property
    def untrusted(self) -> bool:
        return "untrusted" in self.origins or "nowhere" in self.origins


@dataclass(frozen=True, slots=True)
class Row:
    """One pending request as the inbox shows it."""

    pending: Pending
    arguments: tuple[Argument, ...]
    spend: tuple[str, ...]
    expires_iso: str
    expires_in: str  # "expires in 2 h 5 min", rewritten each second by static/inbox.js
    expires_at: str

    @property
    def request(self) -> ApprovalRequest:
        return self.pending.request


def row(item: Pending, now: float) -> Row:
    """``item`` ready to render at ``now``."""
    request = item.request
    arguments = tuple(
        Argument(name, json.dumps(value, ensure_ascii=False, sort_keys=True, default=str),
                 tuple(sorted(item.provenance.get(name) or ())),
                 tuple(sorted(item.labels.get(name) or ())))
        for name, value in request.arguments.items())
    return Row(item, arguments, spend_against(item.spend, item.budget),
               time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(request.expires_at)),
               f"expires in {left(request.expires_at - now)}", when(request.expires_at))


def spend_against(spend: Mapping[str, Any], budget: Mapping[str, Any]) -> tuple[str, ...]:
    """Each spent quantity against its limit, as the session's last pause recorded it."""
    shown = []
    for used, limit, unit in LIMITS:
        if used not in spend:
            continue
        cap = budget.get(limit)
        amount = spend[used]
        if used == "seconds" and isinstance(amount, int | float):
            amount = round(amount, 1)
        text = f"${amount}" if unit == "$" else f"{amount} {unit}"
        cap_text = f"${cap}" if unit == "$" else f"{cap}"
        shown.append(text + (f" of {cap_text}" if cap is not None else " (no limit)"))
    return tuple(shown)


def left(seconds: float) -> str:
    """A duration as a person reads it (the same text static/inbox.js writes each second)."""
    if seconds <= 0:
        return "0 s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def resume_command(store: Store, request: ApprovalRequest) -> str:
    """How to run (or refuse) the decided call: ``tether resume`` as ``tether approvals`` says it
    (``tether.journal.views.resume_line``: the one wording both faces use)."""
    return resume_line(request.session_id, store.read(request.session_id)[:1],
                       getattr(store, "url", None))


def inbox(request: Request) -> Response:
    """GET /inbox: the viewer's pending requests (``?fragment=1``: just the rows). A plain
    function: Starlette runs it in its thread pool, so the store's blocking reads never hold up
    the event loop (and the live streams on it)."""
    viewer = identity(request)
    settings = console(request)
    now = time.time()
    rows = [row(item, now) for item in pending(settings.store, viewer)]
    context: dict[str, Any] = {"rows": rows, "break_glass": settings.rules.may_break_glass(viewer)}
    if request.query_params.get("fragment"):
        return render(request, "inbox_rows.html", **context)
    decided_id = request.query_params.get("decided")
    if decided_id:
        decided = StoredApprovals(settings.store, viewer.tenant_id).get(decided_id)
        if decided is not None and decided.status != "pending":
            context["decided"] = decided
            context["resume"] = resume_command(settings.store, decided)
    return render(request, "inbox.html", **context)


async def decide_page(request: Request) -> Response:
    """POST /inbox/{id}/decide: one decision, through ``deciding.decide`` (in the thread pool:
    the store blocks)."""
    form = await request.form()
    return await run_in_threadpool(decided_page, request, form)


def decided_page(request: Request, form: FormData) -> Response:
    """The answer to a decision's ``form``: 303 to what was decided, or why not."""
    approval_id = request.path_params["approval_id"]
    viewer = identity(request)
    store = console(request).store
    actual = StoredApprovals(store, ALL_TENANTS).get(approval_id)
    visible = StoredApprovals(store, viewer.tenant_id).get(approval_id) is not None
    if actual is None:
        return _refused(request, 404, not_found(approval_id))
    wrong = form_problem(form)
    if wrong is not None:
        record_attempt(store, actual, viewer, str(form.get("verdict", "?")),
                       f"the console refused the form: {wrong}")
        if not visible:
            return _refused(request, 404, not_found(approval_id))
        return _refused(request, 400, f"{wrong}; reload the inbox and decide from its form")
    verdict: Verdict = "approve" if form["verdict"] == "approve" else "deny"
    try:
        decided = decide(store, approval_id, verdict, identity=viewer,
                         note=str(form.get("note", "")), rules=console(request).rules,
                         seen=str(form["seen"]), break_glass=bool(form.get("break_glass")))
    except ApprovalNotFound as unknown:  # gone meanwhile, or another tenant's
        return _refused(request, 404, str(unknown))
    except ApprovalRefused as refused:  # a check, or another decision that won the race
        return _refused(request, 409, refused.why)
    return RedirectResponse(f"/inbox?decided={decided.id}", status_code=303)


def form_problem(form: FormData) -> str | None:
    """What is wrong with a decision's form, or None: exactly the inbox's fields, each once,
    a verdict and the version the page showed (its CSRF token was checked before any page ran:
    ``tether.web.security``)."""
    items = form.multi_items()
    keys = [key for key, _ in items]
    extra = sorted(set(keys) - FIELDS)
    if extra:
        return f"fields the inbox never sends: {', '.join(extra)} (arguments cannot be edited)"
    if any(not isinstance(value, str) for _, value in items):
        return "a field is a file; the inbox's fields are text"
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        return f"fields sent more than once: {', '.join(repeated)}"
    if form.get("verdict") not in VERDICTS:
        return "the verdict must be approve or deny"
    if not form.get("seen"):
        return "the form does not say which version of the request it shows (seen)"
    return None


def _refused(request: Request, status: int, why: str) -> Response:
    return render(request, "inbox_refused.html", status_code=status, why=why, status=status)


ROUTES = [Route("/inbox", inbox, methods=["GET"]),
          Route("/inbox/{approval_id}/decide", decide_page, methods=["POST"])]
