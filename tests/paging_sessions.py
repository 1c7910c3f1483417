"""Sessions written with chosen facts (created when, for whom, stopped how, at what cost) for the
paging tests: ``put`` seals the events itself, since a journal stamps "now"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.journal.chain import GENESIS, seal
from tether.store.base import Store
from tether.types import Event

T0 = 1_700_000_000.0
Stop = tuple[str, str | None, str | None]  # "paused" | "ended" | "resumed", reason, cost_usd


@dataclass(frozen=True)
class Made:
    """A session a test wrote, and what its index row must say."""

    sid: str
    created: float
    agent: str | None
    tenant: str | None
    user: str | None
    thread: str | None
    status: str
    reason: str | None
    cost: float | None


def put(store: Store, sid: str, created: float, *, agent: str | None = "billing",
        tenant: str | None = "acme", user: str | None = "u1", thread: str | None = None,
        stops: Sequence[Stop] = (), together: bool = False) -> Made:
    """A session: its start, then each stop as a step of its own (``together``: all one step)."""
    start: dict[str, Any] = {"task": "t", "agent": agent,
                             "subject": {"tenant_id": tenant, "user_id": user, "roles": []}}
    if thread is not None:
        start["thread"] = {"id": thread, "position": 1}
    steps: list[list[tuple[str, dict[str, Any]]]] = [[("session.start", start)]]
    status, reason, cost = "open", None, None
    for kind, why, usd in stops:
        if kind == "resumed":
            steps.append([("session.resumed", {"after": "approval"})])
            status = "open"
            continue
        data = {"reason": why, "answer": "", "spend": {"tokens": 3, "cost_usd": usd}}
        steps.append([("session.note", {"text": "working"}),
                      ("session.paused" if kind == "paused" else "session.end", data)])
        status, reason, cost = kind, why, None if usd is None else float(usd)
    if together:
        steps = [[event for step in steps for event in step]]
    prev, seq = GENESIS, 0
    for step in steps:
        sealed: list[Event] = []
        for kind, data in step:
            seq += 1
            event = seal(prev, sid, (seq, kind, created + seq / 1e6, data))
            sealed.append(event)
            prev = event.hash
        store.append(sid, sealed)
    return Made(sid, created, agent, tenant, user, thread, status, reason, cost)


def put_record(store: Store, sid: str, created: float) -> Made:
    """An erasure record: a session whose only event is ``erasure.recorded``."""
    store.append(sid, [seal(GENESIS, sid, (1, "erasure.recorded", created,
                                           {"sessions": {}, "reason": "forget"}))])
    return Made(sid, created, None, None, None, None, "erasure", None, None)
