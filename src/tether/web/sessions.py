"""The session list: every session the viewer may see, newest first, filtered, a page at a time.

Why: an operator's first questions are what is running, what stopped and why, and what it cost;
with 100,000 sessions in a store the answer has to be a filter and a page, not a listing of all.
The filters and the cursor live in the URL, so a filtered page can be bookmarked, shared and
reloaded, and "next" keeps the filters.

Decision: the viewer's tenant is not a filter but a scope: a tenant's viewer lists only that
tenant's sessions whatever the URL says (the tenant filter is offered only to viewers of every
tenant). Paging is ``tether.store.paging.page_sessions`` (keyset, 50 a page); a filter value
that does not parse is a 400 that says what it expected, never a silently wider list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tether.errors import InvalidArgument
from tether.runtime.approvals.identity import Identity
from tether.store.base import SessionInfo
from tether.store.paging import ANY_TENANT, SessionFilter, SessionPage, page_sessions
from tether.web.pages import console, identity, render

PAGE = 50
TEXT_FILTERS = ("status", "stop_reason", "agent", "user", "thread")
STATUSES = ("open", "paused", "ended", "erasure")
FILTERS = (*TEXT_FILTERS, "tenant", "since", "until", "min_cost", "max_cost")


@dataclass(frozen=True, slots=True)
class Listing:
    """What one request asks of the list: the filter (scoped), the query it came from (only the
    filters given, for links), and the cursor."""

    where: SessionFilter
    query: dict[str, str]
    after: str | None


def scope_of(viewer: Identity) -> Any:
    """The tenant a viewer's listing is confined to (``ANY_TENANT`` for every tenant's)."""
    return ANY_TENANT if viewer.all_tenants else viewer.tenant_id


def listing(params: Mapping[str, str], viewer: Identity) -> Listing:
    """The listing the query string ``params`` asks for, as ``viewer`` may see it.

    Raises:
        InvalidArgument: a time or cost that does not parse, or an unknown status."""
    query = {k: params[k].strip() for k in FILTERS if params.get(k, "").strip()}
    if not viewer.all_tenants:
        query.pop("tenant", None)  # not theirs to choose: the scope below decides
    status = query.get("status")
    if status is not None and status not in STATUSES:
        raise InvalidArgument(f"status {status!r} is not one of {', '.join(STATUSES)}")
    where = SessionFilter(
        status=status, stop_reason=query.get("stop_reason"), agent=query.get("agent"),
        tenant_id=query["tenant"] if "tenant" in query else scope_of(viewer),
        user_id=query.get("user"), thread_id=query.get("thread"),
        since=_time(query, "since"), until=_time(query, "until"),
        min_cost=_cost(query, "min_cost"), max_cost=_cost(query, "max_cost"))
    return Listing(where, query, params.get("after") or None)


def _time(query: Mapping[str, str], key: str) -> float | None:
    text = query.get(key)
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"{key} {text!r} is not a date or time; give one like 2026-01-31 "
                              "or 2026-01-31T12:00 (UTC unless it names a zone)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _cost(query: Mapping[str, str], key: str) -> float | None:
    text = query.get(key)
    if text is None:
        return None
    try:
        value = float(text.removeprefix("$"))
    except ValueError:
        raise InvalidArgument(f"{key} {text!r} is not an amount of US dollars; give one like "
                              "0.25") from None
    if value < 0 or value != value:
        raise InvalidArgument(f"{key} must be a non-negative amount, got {text!r}")
    return value


def read_page(request: Request) -> tuple[Listing, SessionPage]:
    """The listing a request asks for and its page (blocking: call it in a thread)."""
    chosen = listing(request.query_params, identity(request))
    return chosen, page_sessions(console(request).store, chosen.where, limit=PAGE,
                                 after=chosen.after)


async def sessions(request: Request) -> Response:
    try:
        chosen, page = await run_in_threadpool(read_page, request)
    except InvalidArgument as exc:
        return render(request, "sessions.html", status_code=400, error=str(exc),
                      query=listing_query(request), rows=[], next_url=None, live_query="",
                      statuses=STATUSES)
    fragment = request.query_params.get("fragment") == "1"
    live_query = urlencode({**chosen.query, **({"after": chosen.after} if chosen.after else {})})
    next_url = (f"/sessions?{urlencode({**chosen.query, 'after': page.next})}"
                if page.next else None)
    return render(request, "sessions_rows.html" if fragment else "sessions.html",
                  query=chosen.query, rows=[row(info) for info in page.sessions],
                  next_url=next_url, live_query=live_query, error=None, statuses=STATUSES,
                  first_page=chosen.after is None)


def listing_query(request: Request) -> dict[str, str]:
    """The filters a request gave, as they were typed (to refill the form after an error)."""
    return {k: v for k in FILTERS if (v := request.query_params.get(k, "").strip())}


def row(info: SessionInfo) -> dict[str, Any]:
    """What the list shows of one session."""
    return {"id": info.session_id, "agent": info.agent or "", "tenant": info.tenant_id or "",
            "status": info.status, "events": info.events, "last": info.last_type,
            "created": _when(info.created_at), "updated": _when(info.updated_at)}


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


async def home(request: Request) -> Response:
    return RedirectResponse("/inbox", status_code=303)


ROUTES = [Route("/", home), Route("/sessions", sessions)]
