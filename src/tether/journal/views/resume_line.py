"""The ``tether resume`` line for a paused session, from its journal: one wording for every face.

Why: ``tether run``, ``tether approvals`` and the web console's inbox all tell a person how to
continue a session after a decision. The command must name the recipe the session was started
with (``tether run`` records its ``--agent`` in the start's metadata under ``RECIPE_KEY``) and the
store, with any password in its URL masked. Written once here, below both faces (``tether.cli``
and ``tether.web`` may not import each other), so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.types import Event
from tether.urls import redact_url
from tether.vocabulary import EventType

RECIPE_KEY = "recipe"  # in session.start's metadata: the --agent reference `tether run` was given
PLACEHOLDER = "MODULE:ATTR"


def recorded_recipe(events: Sequence[Event]) -> str:
    """The recipe reference the session's start recorded, else the placeholder to fill in."""
    first = events[0] if events else None
    if first is None or first.type != EventType.SESSION_START:
        return PLACEHOLDER
    recipe = (first.data.get("metadata") or {}).get(RECIPE_KEY)
    return recipe if isinstance(recipe, str) and recipe else PLACEHOLDER


def store_option(url: str | None) -> str:
    """`` --store URL`` for a command line printed as advice (its secrets masked), or ""."""
    return f" --store {redact_url(url)}" if url else ""


def resume_command(session_id: str, start: Sequence[Event], store_url: str | None) -> str:
    """``tether resume ID --agent RECIPE --store URL`` for the session whose first event(s) are
    ``start``."""
    return f"tether resume {session_id} --agent {recorded_recipe(start)}{store_option(store_url)}"
