"""What a stored session must pass before it is loaded: found, not erased, intact, its recipe's.

Why its own module: loading a session from its store is a decision of its own — a journal whose
hash chain breaks is not resumed (its calls would run on a record nobody can vouch for), a
session of another tenant is not found, one started under another recipe is refused unless the
change is accepted — and it made the session's file the longest of the runtime. ``Session.restore``
calls ``stored_events`` and builds the session from what it returns.

Decision: every refusal is raised before a session object exists, each naming what to do
(``tether audit verify``, ``accept_recipe_change=True``); an erased session says so rather than
"not found".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.errors import NotFound, RunError, WrongState
from tether.journal.chain import verify_chain
from tether.journal.erasure import vouched
from tether.store.anchor_chain import ERASED_TYPE
from tether.types import Event
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent


class JournalTampered(RunError):
    """A stored journal does not verify; it is not resumed."""


class RecipeChanged(RunError):
    """A stored session was started by a different recipe; it is not resumed as it is."""


def stored_events(agent: Agent, session_id: str, accept_recipe_change: bool) -> list[Event]:
    """The stored events of ``session_id``, refusing one whose chain is broken, one of another
    tenant than the agent serves (as not found), and one started under another recipe unless
    ``accept_recipe_change``."""
    store = agent.journal_store
    if store is None:
        raise WrongState("this agent has no store to load sessions from; build it with "
                           "Agent(..., store='sqlite:///tether.db')")
    events = store.read(session_id)
    if events and events[0].type == ERASED_TYPE and (
            agent.tenant_id in (None, events[0].data["subject"].get("tenant_id"))):
        raise NotFound(f"session {session_id}'s content was erased (by "
                          f"{events[0].data.get('erasure')}); there is nothing to load")
    if not events or events[0].type != EventType.SESSION_START or (
            agent.tenant_id is not None
            and events[0].data["subject"].get("tenant_id") != agent.tenant_id):
        raise NotFound(f"no session {session_id!r} in {store.url}")
    broken = verify_chain(events, vouched(events, store.read))  # passages erased
    if broken is not None:
        why = (f"event {broken} was stored as JSONB by a tether before PostgreSQL schema 3 "
               "and its hash cannot be recomputed, so the journal cannot be shown intact"
               if broken in store.unverifiable(session_id)
               else f"the hash chain breaks at event {broken}")
        raise JournalTampered(f"session {session_id}: {why}; it will not be resumed (run "
                              f"`tether audit verify --session {session_id}`)")
    recorded = events[0].data.get("recipe")
    if recorded is not None and recorded != agent.fingerprint and not accept_recipe_change:
        raise RecipeChanged(
            f"session {session_id} was started by another recipe than this "
            f"{agent.name!r} agent (its name, tools or policy differ: fingerprint "
            f"{recorded} then, {agent.fingerprint} now), so its waiting calls would run "
            "under rules nobody decided them by; resume it with the recipe that started it, "
            "or pass accept_recipe_change=True (CLI: --accept-recipe-change) if the change "
            "is intended")
    return events
