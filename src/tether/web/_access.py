"""Reading one session's journal for a viewer: its events if the viewer's tenant may see it.

Why: the timeline, compare and what-if pages each open sessions by an id that came from a URL
or a form — anyone can type another tenant's id. One function decides, for all of them, that a
session of another tenant is "not found" in the same words as an id that does not exist (so an
id guessed or leaked across tenants reveals nothing), and says how the chain stands.

Decision: a session's tenant is the one its first event recorded (``journal.views.owner``);
an identity with ``ALL_TENANTS`` sees every session. The chain's status is
``journal.tamper.diagnose`` — ``verify_chain`` with erasures an erasure record vouches for, and
the index's event count — exactly what ``tether audit verify`` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.exceptions import HTTPException

from tether.journal.erasure import vouched
from tether.journal.tamper import Break, diagnose
from tether.journal.views.owner import tenant_of
from tether.runtime.approvals.identity import Identity
from tether.store.base import Store
from tether.types import Event


@dataclass(frozen=True, slots=True)
class Opened:
    """A session the viewer may see: its events and its chain's first break (None: it holds)."""

    session_id: str
    events: Sequence[Event]
    broken: Break | None


def visible(identity: Identity, events: Sequence[Event]) -> bool:
    """Whether ``identity`` may see the session these events are."""
    return bool(events) and (identity.all_tenants or tenant_of(events) == identity.tenant_id)


def open_session(store: Store, identity: Identity, session_id: str, *,
                 verify: bool = True) -> Opened:
    """The session's events, or HTTP 404 (in the same words whether it does not exist or
    belongs to a tenant the viewer does not see); with ``verify``, its chain's first break
    (without: ``broken`` is None unchecked — for the live rows, which show no chain status)."""
    events = store.read(session_id) if session_id else []
    if not visible(identity, events):
        raise HTTPException(404, f"no session {session_id!r} that you may see; check the id "
                            "on the sessions page")
    if not verify:
        return Opened(session_id, events, None)
    # the index's count (a cut-off tail shows only against it); its row was written at or after
    # the last stored event, so listing from a minute before that finds it
    recorded = {i.session_id: i.events
                for i in store.sessions(since=events[-1].timestamp - 60)}
    broken = diagnose(session_id, events, recorded=recorded.get(session_id),
                      unverifiable=store.unverifiable(session_id),
                      erased=vouched(events, store.read))
    return Opened(session_id, events, broken)
