"""What a store's session index keeps for listing, and the one query that pages through it.

Why: a list of 100,000 sessions filtered by user, thread, stop reason or spend cannot read every
journal, so the index row of each session keeps those facts beside its tenant and agent, written
in the same transaction as the append that changes them: a session's start names its subject
(tenant, user) and thread; its pause or end names its stop reason and its spend. This module
reads those facts from a step's events (``step_facts``), once, for all three stores, and builds
the keyset query's filter (``where_sql``) for both SQL stores, so they cannot disagree about
what a filter means (the memory store, the reference, applies the same filter in Python).

Decision: the status filter maps to the index's ``last_type`` exactly as ``SessionInfo.status``
does. A cost filter matches only sessions whose spend a pause or an end recorded (an open
session's spend is not known to the index). The page key is ``(created_at, session_id)``,
newest first, and the next page starts strictly below it: no OFFSET.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.types import Event

ANY_TENANT: Any = object()
"""``SessionFilter.tenant_id`` for every tenant's sessions (an operator's view)."""

STOPS = frozenset({EventType.SESSION_PAUSED, EventType.SESSION_END})
# the status word -> the last event type that gives it (SessionInfo.status); "open" is any other
STATUS_TYPES: dict[str, str] = {"ended": EventType.SESSION_END,
                                "paused": EventType.SESSION_PAUSED,
                                "erasure": EventType.ERASURE_RECORDED}
STATUSES = ("open", *STATUS_TYPES)
# PostgreSQL orders text by the database's collation (en_US puts "a-b" after "ab/"): the page
# key's session id is compared byte by byte, as SQLite and Python do, so every store walks the
# same order (its indexes are made with the same collation, so they serve the walk)
PG_SESSION_ID = 'session_id COLLATE "C"'
# an index row as SessionInfo takes it, in its order (both SQL stores select these)
LISTED = ("session_id, created_at, updated_at, events, last_type, tenant_id, agent, user_id, "
          "thread_id, stop_reason, cost")


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions to list; a field left None does not filter.

    Args:
        status: ``open``, ``paused``, ``ended`` or ``erasure`` (``SessionInfo.status``).
        stop_reason: The stop reason its last pause or end recorded (``finished``,
            ``cost_budget``, ...).
        agent: The agent's name.
        tenant_id: One tenant (None: sessions without a tenant); ``ANY_TENANT``: every one.
        user_id: The user it ran for.
        thread_id: The conversation thread it belongs to.
        since: Created at or after (epoch seconds).
        until: Created before (epoch seconds).
        min_cost: Spent at least this many US dollars (as its last pause or end recorded).
        max_cost: Spent at most this many US dollars (as its last pause or end recorded).
        ids: Only these sessions (e.g. those an erasure record names).
        excluding: Never these sessions."""

    status: str | None = None
    stop_reason: str | None = None
    agent: str | None = None
    tenant_id: Any = ANY_TENANT
    user_id: str | None = None
    thread_id: str | None = None
    since: float | None = None
    until: float | None = None
    min_cost: float | None = None
    max_cost: float | None = None
    ids: frozenset[str] | None = None
    excluding: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in STATUSES:
            raise InvalidArgument(f"status {self.status!r} is not one of {', '.join(STATUSES)}")


@dataclass(frozen=True, slots=True)
class StepFacts:
    """What one step's events tell the session index: from a start, its user and thread; from
    its last pause or end (``stopped``), the stop reason and the spend in US dollars."""

    user_id: str | None = None
    thread_id: str | None = None
    stopped: bool = False
    stop_reason: str | None = None
    cost: float | None = None


NO_FACTS = StepFacts()


def step_facts(events: Sequence[Event]) -> StepFacts:
    """The index facts of a step: the user and thread its start names, and the reason and
    spend of its last pause or end (a step is a few events: one pass over them, backwards)."""
    first = events[0]
    user = thread = None
    if first.seq == 1 and first.type == EventType.SESSION_START:
        user = (first.data.get("subject") or {}).get("user_id")
        thread = (first.data.get("thread") or {}).get("id")
    for event in reversed(events):
        if event.type in STOPS:
            spend = event.data.get("spend") or {}
            return StepFacts(user, thread, True, event.data.get("reason"),
                             cost_of(spend.get("cost_usd")))
    if user is None and thread is None:
        return NO_FACTS
    return StepFacts(user, thread)


def cost_of(value: Any) -> float | None:
    """A journaled cost (a decimal string) as a float; None when absent or not a number."""
    if value is None:
        return None
    try:
        return float(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        return None


def where_sql(where: SessionFilter, after: tuple[float, str] | None, mark: str = "?",
              session_id: str = "session_id") -> tuple[str, list[Any]]:
    """The WHERE clause (``1 = 1`` when nothing filters) and its parameters for ``where`` and
    the page key ``after``, with ``mark`` as the parameter placeholder (``?`` or ``%s``) and
    ``session_id`` as the key's second column (PostgreSQL: ``PG_SESSION_ID``)."""
    clauses: list[str] = []
    args: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause.replace("?", mark))
        args.extend(values)

    if where.status == "open":
        add("last_type NOT IN (?, ?, ?)", *STATUS_TYPES.values())
    elif where.status is not None:
        add("last_type = ?", STATUS_TYPES[where.status])
    if where.tenant_id is not ANY_TENANT:
        if where.tenant_id is None:
            add("tenant_id IS NULL")
        else:
            add("tenant_id = ?", where.tenant_id)
    for column, value in (("stop_reason", where.stop_reason), ("agent", where.agent),
                          ("user_id", where.user_id), ("thread_id", where.thread_id)):
        if value is not None:
            add(f"{column} = ?", value)
    for clause, bound in (("created_at >= ?", where.since), ("created_at < ?", where.until),
                          ("cost >= ?", where.min_cost), ("cost <= ?", where.max_cost)):
        if bound is not None:
            add(clause, bound)
    if where.ids is not None:
        if not where.ids:
            add("1 = 0")
        else:
            add(f"session_id IN ({', '.join('?' * len(where.ids))})", *sorted(where.ids))
    if where.excluding:
        add(f"session_id NOT IN ({', '.join('?' * len(where.excluding))})",
            *sorted(where.excluding))
    if after is not None:
        add(f"(created_at, {session_id}) < (?, ?)", *after)
    return " AND ".join(clauses) or "1 = 1", args
