"""Assembling the console: its pages' routes, its static files, its middleware, in one place.

Why: each page is a module that exports ``ROUTES`` (one concern per module); the app is the one
place that lists them, so a page is added by adding it here and nowhere else.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from tether.web import compare, evals, inbox, timeline, whatif
from tether.web.auth import Authenticate
from tether.web.console import Console

STATIC = Path(__file__).parent / "static"


def create_app(console: Console) -> Starlette:
    """The console's ASGI app over ``console``'s store."""
    routes: list[BaseRoute] = [Mount("/static", StaticFiles(directory=STATIC), name="static")]
    routes += timeline.ROUTES
    routes += compare.ROUTES
    routes += whatif.ROUTES
    routes += evals.ROUTES
    routes += inbox.ROUTES
    app = Starlette(routes=routes, middleware=[Middleware(Authenticate)])
    app.state.console = console
    return app
