"""What "forget me" erases: a user's sessions, and every copy of their turns tether itself made.

Why: erasing a user's own sessions is not enough. Recall (``recall_tool(scope="tenant")``) hands
a user's turns to another user's session as a tool result, which tether journals and sends to
the model again on every later turn; that session's answer may repeat them, and a session that
continues its thread, or recalls it in turn, journals them again. Each is a copy tether made,
and each outlived the erasure.

Decision: a copy is found by the way tether makes one, never by guessing at meaning. Every
recall result and every thread history names the session a turn came from; so the sessions that
hold copies are those of the user's tenant whose events name an erased session — and, in turn,
those that name one of these (a thread continued from them, a recall of their turns), until
none is added. In each, the user's turns (the task and the final answer of each of their
sessions, as recall and threads quote them) are erased wherever they stand verbatim, as written
or JSON-escaped, in events and approval requests (``tether.journal.erasure.passage_scrubber``);
the rest of those sessions stays theirs. What a model said *about* a turn in its own words is
not a copy and is not found: only the turn's text, whole.
"""

from __future__ import annotations

from collections.abc import Collection

from tether.journal.erasure import PREFIX, is_erased
from tether.runtime.lifecycle.thread import turn_of
from tether.store.base import Store
from tether.vocabulary import EventType


def users_sessions(store: Store, tenant_id: str | None, user_id: str) -> list[str]:
    """Every session ``user_id`` ran in ``tenant_id``: on their threads, or started for them."""
    sessions = list(dict.fromkeys(e.session_id for e in store.thread_entries(tenant_id, user_id)))
    on_threads = set(sessions)
    for info in store.sessions():
        if info.tenant_id == tenant_id and info.session_id not in on_threads:
            first = store.read(info.session_id)[:1]
            if first and first[0].type == EventType.SESSION_START and (
                    first[0].data.get("subject") or {}).get("user_id") == user_id:
                sessions.append(info.session_id)
    return sessions


def turns_of(store: Store, sessions: Collection[str]) -> set[str]:
    """The texts of the turns of ``sessions`` as recall and threads quote them: each one's task
    and final answer, and those of the earlier turns its start carried."""
    texts: set[str] = set()
    for sid in sessions:
        events = store.read(sid)
        turn = turn_of(sid, 0, events, store.read)
        if turn is None:
            continue  # erased already, or never started
        texts |= {turn.user, turn.assistant}
        for earlier in (events[0].data.get("thread") or {}).get("history") or ():
            texts |= {earlier.get("user") or "", earlier.get("assistant") or ""}
    return {text for text in texts if text.strip()}


def quoting_sessions(store: Store, tenant_id: str | None, sessions: Collection[str]) -> list[str]:
    """The other sessions of ``tenant_id`` whose events name one of ``sessions``, or one of the
    sessions found so, until none is added (erasure records aside: they name what they erased
    and quote nothing)."""
    named = set(sessions)
    candidates = [info.session_id for info in store.sessions()
                  if info.tenant_id == tenant_id and info.session_id not in named
                  and not info.session_id.startswith(PREFIX)]
    found: list[str] = []
    while True:
        added = []
        for sid in candidates:
            events = store.read(sid)
            text = "".join(e.json_text for e in events if not is_erased(e))
            if any(other in text for other in named):
                added.append(sid)
        if not added:
            return found
        found += added
        named |= set(added)
        candidates = [sid for sid in candidates if sid not in named]
