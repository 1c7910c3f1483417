"""Assembling the console: its pages' routes, its static files, its middleware, in one place.

Why: each page is a module that exports ``ROUTES`` (one concern per module); the app is the one
place that lists them, so a page is added by adding it here and nowhere else. The middleware
order is the security model: headers on every response (``Secure``, outermost, so refusals
carry them too), then who is asking (``Authenticate``), then CSRF and origin (``Guard``).
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from tether.web import auth, compare, evals, halts, inbox, live, sessions, timeline, whatif
from tether.web.auth import Authenticate, Logins
from tether.web.console import Console
from tether.web.security import Guard, Secure, new_secret

STATIC = Path(__file__).parent / "static"


def create_app(console: Console) -> Starlette:
    """The console's ASGI app over ``console``'s store. Its ``state`` holds, besides
    ``console``, this process's authentication (``logins``: the one-time link and the login
    sessions; ``csrf_secret``) and its open live streams (``streams``)."""
    routes: list[BaseRoute] = [
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        *auth.ROUTES,
        *sessions.ROUTES,
        *live.ROUTES,
        *inbox.ROUTES,
        *halts.ROUTES,
        *timeline.ROUTES,
        *compare.ROUTES,
        *whatif.ROUTES,
        *evals.ROUTES,
    ]
    app = Starlette(routes=routes, middleware=[Middleware(Secure), Middleware(Authenticate),
                                               Middleware(Guard)])
    app.state.console = console
    app.state.logins = Logins(console.login_ttl)
    app.state.csrf_secret = new_secret()
    app.state.streams = live.Streams()
    return app
