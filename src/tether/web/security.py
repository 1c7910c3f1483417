"""What every response carries and what every state change must prove: headers and CSRF.

Why: the console decides approvals; a page of another site must not be able to make a signed-in
browser post a decision (cross-site request forgery), frame the inbox to trick a click, or run
a script the console did not serve. So every state change (POST, PUT, PATCH, DELETE) carries a
token only the console's own pages know, and is refused when its ``Origin`` names another site;
every response carries a strict content-security policy, so even text that slipped past
autoescaping could run no script and load nothing from elsewhere.

Decision: two pure ASGI middlewares. ``Secure`` (outermost) adds the headers to every response,
refusals included. ``Guard`` (after authentication) sets ``request.state.csrf``: a login
session's own random token, or, for an identity a proxy's header (or ``none``) established, an
HMAC of its name under a per-process secret — stable for that person, unguessable for a page of
another origin, void when the console restarts. It reads the token from the ``X-CSRF-Token``
header or the ``csrf`` form field (replaying the body it read to the page).

``Referrer-Policy: same-origin``, not ``no-referrer``: under ``no-referrer`` a browser sends
``Origin: null`` on the console's own form posts, which the origin check must refuse (a
sandboxed frame of another site sends ``null`` too); ``same-origin`` still tells other sites
nothing (no session id or filter leaves in a ``Referer``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.runtime.approvals.identity import Identity

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
HEADERS = ((b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY"))
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_FORM = 1 << 20  # a decision's form is a few hundred bytes


def new_secret() -> bytes:
    """A per-process key for the CSRF tokens of header-authenticated identities."""
    return secrets.token_bytes(32)


def identity_token(secret: bytes, identity: Identity) -> str:
    """The CSRF token of an identity without a login session: HMAC(secret, method + name)."""
    message = f"{identity.method}\0{identity.name}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


class Secure:
    """Adds the content-security policy and its companions to every response, and
    ``Cache-Control: no-store`` to every one but the package's static files."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {key.lower() for key, _ in message.get("headers", [])}
                added = [(k, v) for k, v in HEADERS if k not in present]
                if not static and b"cache-control" not in present:
                    added.append((b"cache-control", b"no-store"))
                message["headers"] = [*message.get("headers", []), *added]
            await send(message)

        await self.app(scope, receive, with_headers)


class Guard:
    """Sets ``request.state.csrf`` and refuses a state change without it (403), or from another
    origin (403)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state: dict[str, Any] = scope.get("state", {})
        if scope["type"] != "http" or "identity" not in state:
            await self.app(scope, receive, send)
            return
        login = state.get("login")
        expected = login.csrf if login is not None else identity_token(
            scope["app"].state.csrf_secret, state["identity"])
        state["csrf"] = expected
        if scope["method"] not in UNSAFE:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not own_origin(scope, headers):
            await _forbidden("This change came from another site's page (its Origin is not "
                             "this console's); make it from the console itself.")(
                                 scope, receive, send)
            return
        given = headers.get("x-csrf-token", "")
        replay = receive
        if not given:
            body, replay = await _read_body(receive)
            if body is None:
                await PlainTextResponse("form too large", 413)(scope, receive, send)
                return
            given = await _form_token(scope, body)
        if not hmac.compare_digest(given.encode(), expected.encode()):
            await _forbidden("This form's CSRF token is missing or wrong (an old page, or "
                             "another site's); reload the page and try again.")(
                                 scope, receive, send)
            return
        await self.app(scope, replay, send)


def own_origin(scope: Scope, headers: Headers) -> bool:
    """Whether the request's ``Origin`` (when it sends one) is the console's own: the scheme
    and the ``Host`` the browser addressed — or, on a request from a trusted proxy (``header:``
    auth), the ``X-Forwarded-Proto`` and ``X-Forwarded-Host`` that proxy says it addressed."""
    origin = headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    own = {(scope.get("scheme", "http"), headers.get("host", ""))}
    console = scope["app"].state.console
    peer = scope["client"][0] if scope.get("client") else ""
    if console.header is not None and peer in console.proxies and "x-forwarded-host" in headers:
        own.add((headers.get("x-forwarded-proto", scope.get("scheme", "http")),
                 headers["x-forwarded-host"]))
    return bool(parts.netloc) and (parts.scheme, parts.netloc) in own


def _forbidden(why: str) -> PlainTextResponse:
    return PlainTextResponse(why, 403)


async def _read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None past ``MAX_FORM``) and a ``receive`` that replays it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_FORM:
            return None, receive
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _form_token(scope: Scope, body: bytes) -> str:
    """The ``csrf`` field of a form body (url-encoded or multipart), or ""."""
    async def once() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(scope, once).form()
    except Exception:
        return ""
    value = form.get("csrf")
    return value if isinstance(value, str) else ""
