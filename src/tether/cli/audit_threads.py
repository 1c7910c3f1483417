"""``tether audit verify``: the threads' kept turns against the starts that name them.

Why: a session that continues a thread names the history it was shown by reference — the last
place and that place's link (``tether.runtime.lifecycle.thread``) — and the turns themselves are
kept once by the store beside the journals (``tether.store.turn_chain``). A journal's own chain
covers the reference, not the turns; so a verify that checked only chains would pass a store
whose kept turns were edited, and the sessions that name them would refuse to resume later.

Decision: each thread's kept turns are checked once (every digest and link recomputed), and
each verified start that names them must find the link it journaled at its place: an edited,
dropped or re-chained turn is a finding naming the thread and the sessions whose history it
changed. Turns removed by a prune or an erasure keep their digests, so they are no finding.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.journal.tamper import Break
from tether.runtime.lifecycle.thread import ThreadTampered, check_kept
from tether.store.base import Store
from tether.types import Event
from tether.vocabulary import EventType

Owner = tuple[str | None, str | None, str]  # (tenant, user, thread)


def report_threads(store: Store,
                   results: Sequence[tuple[str, Sequence[Event], Break | None]]) -> list[str]:
    """The findings, one sentence each, for the verified sessions among ``results`` whose start
    names a thread's history by reference."""
    named: dict[Owner, list[tuple[str, int, str]]] = {}
    for session_id, events, broken in results:
        if broken is not None or not events or events[0].type != EventType.SESSION_START:
            continue
        start = events[0].data
        thread = start.get("thread") or {}
        if not thread or "history" in thread or not thread.get("through"):
            continue  # no thread, a start that carries its turns, or nothing shown
        subject = start.get("subject") or {}
        owner = (subject.get("tenant_id"), subject.get("user_id"), str(thread["id"]))
        named.setdefault(owner, []).append(
            (session_id, int(thread["through"]), str(thread.get("link"))))
    findings = []
    for (tenant, user, thread_id), starts in named.items():
        kept = store.thread_turns(tenant, user, thread_id)
        try:
            check_kept(kept)
        except ThreadTampered as exc:
            findings.append(f"thread {thread_id!r} of user {user!r}: {exc}")
            continue
        links = {row.ended: row.link for row in kept}
        findings += [f"session {sid}: the kept turns of thread {thread_id!r} through place "
                     f"{through} are missing or do not match the link its start journaled"
                     for sid, through, link in starts if links.get(through) != link]
    return findings
