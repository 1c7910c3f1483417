"""``tether audit verify`` against the store-wide anchor chain, for the whole store or a scope.

Why a module of its own: what a session's own hash chain cannot show (a deleted session, a cut
tail with a fixed index row, an approval decided outside tether) is read off the anchor chain,
and under ``--session`` or ``--tenant`` that check must concern only the sessions asked about.

Decision: the anchors are the store's (one chain, or a few lanes that witness each other), so
they are always checked whole; what is printed is scoped. Under ``--tenant`` only that tenant's
sessions' anchors are counted and their findings shown; a break of a shared chain at another
session's anchor is reported once, naming no session — another tenant's sessions are neither
named nor counted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.cli.common import EXIT_FINDING, EXIT_OK
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.tamper import Break
    from tether.store.anchor_chain import Anchor
    from tether.store.base import SessionInfo, Store
    from tether.types import Event


def scope(anchors: Sequence[Anchor], infos: Sequence[SessionInfo], only: str | None,
           tenant: str | None) -> set[str] | None:
    """The sessions ``--session`` or ``--tenant`` limit the anchor check to (None: every one):
    the tenant's listed sessions and those whose anchored start names the tenant (deleted ones
    included)."""
    if only is not None:
        return {only}
    if tenant is None:
        return None
    starts = (a.session_id for a in anchors if a.kind == "head"
              and json.loads(a.body).get("type") == EventType.SESSION_START
              and json.loads(a.body).get("tenant") == tenant)
    return {i.session_id for i in infos} | set(starts)


def report_anchors(store: Store, anchors: Sequence[Anchor],
                    results: Sequence[tuple[str, Sequence[Event], Break | None]],
                    scope: set[str] | None) -> int:
    """Check the store against its anchor chain (deleted or cut sessions, approvals decided
    outside tether); with ``--session`` or ``--tenant``, only what concerns them: their anchors
    are counted, and a break of the store-wide chain elsewhere is reported once, naming no other
    session (another tenant's sessions are neither named nor counted)."""
    from tether.journal.anchors import Finding, check_anchors
    from tether.store.anchor_chain import audit_key

    sessions: dict[str, Sequence[Event]] = {sid: events for sid, events, _ in results}
    for anchor in anchors:  # anchored sessions the listing no longer shows
        sid = anchor.session_id
        if anchor.kind == "head" and sid not in sessions and (scope is None or sid in scope):
            sessions[sid] = store.read(sid)
    approvals = [r for r in store.list_approvals() if scope is None or r["session_id"] in scope]
    key = audit_key()
    findings: list[Finding] = []
    elsewhere: dict[str, Finding] = {}
    lanes = store.anchor_lanes()
    for found in check_anchors(anchors, sessions, approvals, key, lanes):
        if scope is None or found.session_id in scope:
            findings.append(found)
        elif found.kind in ("anchor", "unsigned"):  # the chain they share: said once, unnamed
            elsewhere.setdefault(found.kind, Finding(
                found.kind, "", "the store's anchor chain does not hold at an anchor of another "
                "session (edited, removed, inserted, or not signed by the audit key); run "
                "`tether audit verify` over the whole store to see where"))
    findings += elsewhere.values()
    for finding in findings:
        print(f"BROKEN  {finding}")
    signed = "signed and checked with the audit key" if key is not None else (
        "signed; set TETHER_AUDIT_KEY to check the signatures" if any(a.mac for a in anchors)
        else "not signed (no TETHER_AUDIT_KEY when written)")
    counted = sum(1 for a in anchors if scope is None or a.session_id in scope)
    print(f"anchor chain: {counted} anchors{'' if scope is None else ' of these sessions'}, "
          f"{signed}; {len(findings)} finding{'' if len(findings) == 1 else 's'}"
          f"{'' if lanes == 1 else f' ({lanes} lanes)'}")
    return EXIT_FINDING if findings else EXIT_OK
