"""Who is asking: every request gets an Identity before any page runs, or no page at all.

Why: the inbox decides approvals as the viewer, so the viewer must be established by something
other than the viewer's word: a one-time login link printed to the person who started the console
(then a session cookie), or a header a trusted reverse proxy set after authenticating them — only
when the request comes from that proxy's address. ``none`` (everyone an unauthenticated
operator) exists for a laptop demo and must be asked for explicitly; its decisions are journaled
as unauthenticated, and ``Console`` refuses it off loopback.

Decision: a pure ASGI middleware (it must not buffer the live streams) that sets
``request.state.identity``; a request it cannot identify gets 401 (or 403: a name the approval
rules do not know), never a page with a default identity. The login token and the login
sessions (cookie id -> identity, expiry) live in this process's memory, in ``Logins``: that is
authentication, not data — the console still keeps nothing the store does not, and a restart
signs everyone out and prints a new link. Neither the token nor a cookie id is ever logged,
shown on a page or put in a repr.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.errors import WrongState
from tether.runtime.approvals.identity import LOGIN_LINK, UNAUTHENTICATED, Identity, header_method
from tether.web.console import Console

COOKIE = "tether_console"
LOGIN = "/login"
AFTER_LOGIN = "/inbox"


@dataclass(frozen=True, slots=True)
class Login:
    """One signed-in browser: who, its CSRF token, and until when (epoch seconds)."""

    identity: Identity
    csrf: str = field(repr=False)
    expires: float


class Logins:
    """The one-time login token and the login sessions of one running console.

    Args:
        ttl: Seconds a login session lasts.
        clock: The time (``time.time``; tests pass their own)."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.time) -> None:
        self._token: str | None = secrets.token_urlsafe(32)
        self._sessions: dict[str, Login] = {}
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Logins(sessions={len(self._sessions)}, link={'unused' if self._token else 'used'})"

    def link_path(self) -> str:
        """``/login?token=...``: the path of the one-time link (the command prints it once)."""
        if self._token is None:
            raise WrongState("the login link was used; restart the console for a new one")
        return f"{LOGIN}?token={self._token}"

    def redeem(self, token: str) -> bool:
        """Whether ``token`` is the login token, unused; it is used up when it is."""
        with self._lock:
            if self._token is None or not secrets.compare_digest(token.encode(),
                                                                 self._token.encode()):
                return False
            self._token = None
            return True

    def open(self, identity: Identity) -> str:
        """A new login session for ``identity``; returns its cookie id."""
        cookie = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[cookie] = Login(identity, secrets.token_urlsafe(32),
                                           self._clock() + self._ttl)
        return cookie

    def close(self, cookie: str) -> bool:
        """Ends a login session (signing out); whether there was one."""
        with self._lock:
            return self._sessions.pop(cookie, None) is not None

    def find(self, cookie: str) -> Login | None:
        """The live login session of a cookie id, or None (unknown or expired: forgotten)."""
        with self._lock:
            found = self._sessions.get(cookie)
            if found is not None and found.expires <= self._clock():
                del self._sessions[cookie]
                return None
            return found


def logins(scope: Scope) -> Logins:
    value: Logins = scope["app"].state.logins
    return value


class Authenticate:
    """Sets ``request.state.identity`` (and, for a login session, ``login``) from the console's
    ``auth`` setting; answers ``/login`` itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/static/"):
            await self.app(scope, receive, send)
            return
        console: Console = scope["app"].state.console
        state: dict[str, Any] = scope.setdefault("state", {})
        refused: Response | None = None
        if console.auth == "link":
            if scope["path"] == LOGIN:
                await _login(scope, console)(scope, receive, send)
                return
            login = logins(scope).find(_cookie(scope))
            if login is None:
                refused = _page(401, "Sign in with the login link the console printed when "
                                   "it started (restart it for a new one).")
            else:
                state["identity"], state["login"] = login.identity, login
        else:
            found, refused = _other(scope, console)
            if found is not None:
                state["identity"] = found
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _other(scope: Scope, console: Console) -> tuple[Identity | None, Response | None]:
    """The identity of ``none`` and ``header:NAME`` consoles, or the refusal."""
    if console.header is None:
        found = console.rules.identity(console.operator, UNAUTHENTICATED)
    else:
        peer = scope["client"][0] if scope.get("client") else ""
        name = _header(scope, console.header).strip()
        if peer not in console.proxies or not name:
            return None, _page(401, f"Not authenticated: this console trusts the "
                                  f"{console.header} header only from its proxy.")
        found = console.rules.identity(name, header_method(console.header))
    if found is None:
        return None, _unknown()
    return found, None


def _login(scope: Scope, console: Console) -> Response:
    """``GET /login?token=...``: the one-time link, once; then a cookie and the inbox."""
    token = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
    if scope["method"] != "GET" or not logins(scope).redeem(token):
        return _page(401, "This login link is wrong or was used already: a link signs in "
                        "once. Restart the console for a new one.")
    found = console.rules.identity(console.operator, LOGIN_LINK)
    if found is None:
        return _unknown()
    response = RedirectResponse(AFTER_LOGIN, status_code=303)
    response.set_cookie(COOKIE, logins(scope).open(found), max_age=int(console.login_ttl),
                        path="/", httponly=True, samesite="strict",
                        secure=scope.get("scheme") == "https")
    return response


def _unknown() -> Response:
    return _page(403, "You are not listed in this console's approval rules (people:); "
                    "ask its operator to add you.")


def _page(status: int, why: str) -> Response:
    from tether.web.pages import environment

    page = environment().get_template("login.html").render(status=status, why=why)
    return HTMLResponse(page, status_code=status)


def _header(scope: Scope, name: str) -> str:
    wanted = name.lower().encode("latin-1")
    for key, value in scope["headers"]:
        if key == wanted:
            return bytes(value).decode("latin-1")
    return ""


def _cookie(scope: Scope) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(_header(scope, "cookie"))
    except Exception:
        return ""
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else ""


async def logout(request: Request) -> Response:
    """``POST /logout`` (a state change: CSRF-checked like any): ends this browser's login
    session; its cookie no longer signs anyone in."""
    logins(request.scope).close(request.cookies.get(COOKIE, ""))
    response = _page(200, "Signed out. Open a new login link to sign in again.")
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


ROUTES = [Route("/logout", logout, methods=["POST"])]
