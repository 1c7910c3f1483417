"""The web console (``tether console``): approvals inbox, sessions, timelines, live runs.

Why: the people around an agent — approvers, operators, auditors — should not need a terminal to
see what ran, what it spent, what it was allowed to do and what waits for them. The console is a
view over the store: it keeps no state of its own (no database, no cache that could disagree
with the journal); every page is read from the store when it is asked for, and every decision
goes through the one path the CLI uses (``tether.runtime.approvals.deciding.decide``).

Needs the ``web`` extra (Starlette, Jinja2, uvicorn); imported only by ``tether console``.
"""

from tether.web.app import create_app
from tether.web.console import Console

__all__ = ["Console", "create_app"]
