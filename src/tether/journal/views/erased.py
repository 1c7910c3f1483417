"""Whether a stored journal is an erased session or an erasure record, said once for every view.

Why: after ``ConversationStore.forget`` (``tether memory forget``) a session's events keep their
former types under ``content.erased`` markers, and the store's index keeps the last one — so a
listing said ``ended`` (or ``paused``), ``tether audit show`` said "open … ``tether resume``
continues it" while ``tether resume`` refused, and the erasure record itself was offered for
resume. Each view derived a status on its own from the last event's type, and none looked at
what erasure had done.

Decision: a session is *erased* when its first event is a ``content.erased`` marker (a view that
holds its events) or when an erasure record lists it among the sessions it erased (a listing,
which holds only the index: the records are few, the sessions many, so the records are read
rather than every session's first event). A session whose passages were erased where it quoted
another (a record's ``copies``) is not erased: it keeps its own content and stays loadable. An
erasure record is never a session to resume. ``ERASED`` and ``ERASURE`` are the status words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from tether.store.anchor_chain import ERASED_TYPE, ERASURE_TYPE

if TYPE_CHECKING:
    from tether.store.base import SessionInfo, Store
    from tether.types import Event

ERASED, ERASURE = "erased", "erasure"


def erased_by(events: Sequence[Event]) -> str | None:
    """The id of the erasure record that erased this session's content, or None."""
    if events and events[0].type == ERASED_TYPE:
        return str(events[0].data.get("erasure") or "an erasure record")
    return None


def is_erasure_record(events: Sequence[Event]) -> bool:
    return bool(events) and events[0].type == ERASURE_TYPE


def erased_sessions(store: Store, infos: Iterable[SessionInfo] | None = None) -> dict[str, str]:
    """Every session an erasure record in ``store`` erased, with the record's id (``infos``:
    the store's listing, when the caller has it already; not scoped to a tenant, since the
    records have none)."""
    erased: dict[str, str] = {}
    for info in store.sessions() if infos is None else infos:
        if info.status != ERASURE:
            continue
        for event in store.read(info.session_id)[:1]:
            listed = event.data.get("sessions") if event.type == ERASURE_TYPE else None
            if isinstance(listed, Mapping):
                erased.update(dict.fromkeys(map(str, listed), info.session_id))
    return erased


def listed_status(info: SessionInfo, erased: Mapping[str, str]) -> str:
    """A listing's status word for ``info``: ``erased`` when a record erased it, else the
    index's (``open``, ``paused``, ``ended``, ``erasure``)."""
    return ERASED if info.session_id in erased else info.status


def not_resumable(events: Sequence[Event]) -> str | None:
    """Why a stored journal can never be resumed, in a sentence, if it is erased or an erasure
    record; None otherwise (whether it can be resumed is then the runtime's to say)."""
    if not events:
        return None
    sid = events[0].session_id
    by = erased_by(events)
    if by is not None:
        return (f"session {sid} was erased (its content removed by {by}): there is nothing "
                f"to resume; `tether audit show {by}` shows the erasure record")
    if is_erasure_record(events):
        erased = events[0].data.get("sessions")
        count = len(erased) if isinstance(erased, Mapping) else 0
        return (f"{sid} is an erasure record (it erased {count} session(s): "
                f"{events[0].data.get('reason') or 'no reason given'}), not a session: there "
                "is nothing to resume")
    return None
