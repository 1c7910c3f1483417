"""Rendering a page: one Jinja environment, autoescaping everything, and what every page reads.

Why: every text on a page may have come from a model, a tool or a user (an answer, an argument,
a session id someone chose); one environment with autoescape on keeps each template from having
to remember it. A page reads the console's settings and the viewer's identity from here, never
from a global.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from tether.runtime.approvals.identity import Identity
from tether.web.console import Console


@cache
def environment() -> Environment:
    return Environment(loader=PackageLoader("tether.web", "templates"),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       trim_blocks=True, lstrip_blocks=True)


def console(request: Request) -> Console:
    """The console's settings (``app.state.console``)."""
    value: Console = request.app.state.console
    return value


def identity(request: Request) -> Identity:
    """Who is viewing (set by the authentication middleware before any page runs)."""
    value: Identity = request.state.identity
    return value


def render(request: Request, template: str, status_code: int = 200,
           **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context``, the viewer and the request's CSRF token."""
    page = environment().get_template(template).render(
        request=request, viewer=identity(request),
        csrf=getattr(request.state, "csrf", ""), **context)
    return HTMLResponse(page, status_code=status_code)
