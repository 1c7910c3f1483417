"""Who is asking: every request gets an Identity before any page runs, or no page at all.

Why: the inbox decides approvals as the viewer, so the viewer must be established by something
other than the viewer's word: a one-time login link printed to the person who started the console
(then a session cookie), or a header a trusted reverse proxy set after authenticating them — only
when the request comes from that proxy's address. ``none`` (everyone an unauthenticated
operator) exists for a laptop demo and must be asked for explicitly; its decisions are journaled
as unauthenticated.

Decision: a pure ASGI middleware that sets ``request.state.identity``; a request it cannot
identify gets 401 (or 403: a listed proxy's user that the approval rules do not know), never a
page with a default identity.
"""

from __future__ import annotations

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from tether.runtime.approvals.identity import UNAUTHENTICATED, header_method
from tether.web.console import Console


class Authenticate(BaseHTTPMiddleware):
    """Sets ``request.state.identity`` from the console's ``auth`` setting."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path.startswith("/static/"):
            return await call_next(request)
        console: Console = request.app.state.console
        if console.auth == "none":
            found = console.rules.identity(console.operator, UNAUTHENTICATED)
        elif console.auth.startswith("header:"):
            header = console.auth.removeprefix("header:")
            peer = request.client.host if request.client else ""
            name = request.headers.get(header, "").strip()
            if peer not in console.proxies or not name:
                return PlainTextResponse("not authenticated: this console trusts the "
                                         f"{header} header only from its proxy", 401)
            found = console.rules.identity(name, header_method(header))
        else:
            return PlainTextResponse("not authenticated", 401)
        if found is None:
            return PlainTextResponse("you are not listed in this console's approval rules "
                                     "(people:); ask its operator", 403)
        request.state.identity = found
        return await call_next(request)
