"""Continuing a governed foreign run from its stored journal: in another process, after a crash.

Why its own module: a framework's run can pause for a person for days (pydantic-ai's deferred
tool requests are plain data a caller stores), and the process that paused it may be gone when
the person decides. The approval is durable in tether's store, and so is the journal; this
module reads back from the journal what the door needs to go on exactly where it stopped.

Decision: a stored run is continued only if its journal verifies, it is a run of the same
framework and tenant with the same tools, and it has not ended. Its state is folded from its
events (``tether.runtime.record.state.fold``), so the open model turn, its decisions and its
approvals are what they were; what the door remembers of the framework's calls — the ones
resolved (a resent call gets its recorded result, never a second run), the ones waiting for a
person, the call ids used — is read back from the same events. A time budget counts wall time
from the run's start, pauses and the gap between processes included.
"""

from __future__ import annotations

import time
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.errors import BadData, InvalidArgument, NotFound
from tether.integrations.decided import identity
from tether.journal.chain import verify_chain
from tether.journal.erasure import vouched
from tether.runtime.accounting.budget import Budget
from tether.runtime.lifecycle.session import SessionEnded
from tether.runtime.record.result import ToolResult
from tether.runtime.record.revive import revive
from tether.runtime.record.state import SessionState
from tether.store.base import Store
from tether.tools.registry import ToolRegistry
from tether.types import Event, ToolCall
from tether.vocabulary import EventType


@dataclass(slots=True)
class Reopened:
    """A stored run's events, its folded state, and the door's memory of framework calls."""

    events: list[Event]
    state: SessionState
    elapsed: float  # wall seconds since the run started
    budget: Budget  # the run's, as its start recorded them
    user: str
    roles: tuple[str, ...]
    ledger: dict[str, tuple[str, ToolResult]] = field(default_factory=dict)
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)  # framework id -> its last tether id
    used: set[str] = field(default_factory=set)


def reopen(store: Store | None, session_id: str, *, framework: str, tenant_id: str | None,
           tools: ToolRegistry, request: str, budget: Budget | None) -> Reopened:
    """The stored run ``session_id``, ready to go on; LookupError when there is none for this
    framework and tenant, ValueError when its journal breaks, it ended, or its tools, request
    or budget (when given) are not the ones it was started with."""
    if store is None:
        raise InvalidArgument("continuing a stored run needs its store: pass store=...")
    events = store.read(session_id)
    start = events[0].data if events and events[0].type == EventType.SESSION_START else None
    if start is None or start.get("agent") != framework or (
            (start.get("subject") or {}).get("tenant_id") != tenant_id):
        raise NotFound(f"no {framework} run {session_id!r} in the store")
    broken = verify_chain(events, vouched(events, store.read))  # a copy's passages erased
    if broken is not None:
        raise BadData(f"run {session_id}: its journal's hash chain breaks at event {broken}; "
                      f"it will not be continued (run `tether audit verify --session "
                      f"{session_id}`)")
    started = sorted(start.get("tools") or ())
    if started != sorted(tools.names):
        raise InvalidArgument(f"run {session_id} was started with the tools {started}, not "
                              f"{sorted(tools.names)}: its waiting calls would run under rules "
                              "nobody decided them by; continue it with the tools that started it")
    if request != start["task"] or (budget is not None and budget.to_dict() != start["budget"]):
        raise InvalidArgument(f"run {session_id} was started for the request {start['task']!r} "
                              f"with the budget {start['budget']}; continue it with the same")
    state, who = SessionState(), start["subject"]
    reopened = Reopened(events, state, max(0.0, time.time() - events[0].timestamp),
                        Budget.from_dict(start["budget"]), who["user_id"], tuple(who["roles"]))
    calls: dict[str, ToolCall] = {}
    for event in events:
        data = revive(event.type, event.data)
        state.apply(event.type, data)
        if event.type == EventType.MODEL_RESPONSE:
            calls.update((c.id, c) for c in data["response"].tool_calls)
        elif event.type == EventType.CLIENT_CALL:
            calls[data["call"].id] = data["call"]
        elif (event.type in (EventType.APPROVAL_REQUESTED, EventType.TOOL_RESULT)
              and data["call_id"] in calls):
            _remember(reopened, calls, calls[data["call_id"]], event.type, data, tools)
    if state.stop_reason is not None:
        raise SessionEnded(f"run {session_id} ended ({state.stop_reason}); it runs nothing more: "
                           "start a new run")
    reopened.used = set(calls)
    return reopened


def _remember(reopened: Reopened, calls: Mapping[str, ToolCall], call: ToolCall, kind: str,
              data: Mapping[str, Any], tools: ToolRegistry) -> None:
    """Note what became of one framework call: it waits for ``data``'s approval, or it has
    ``data``'s result."""
    own = framework_id(call.id, calls)
    signature = identity(tools.get(call.name), call.arguments, call.name)
    reopened.ids[own] = call.id
    if kind == EventType.APPROVAL_REQUESTED:
        reopened.waiting[own] = (signature, data["approval_id"])
    else:
        reopened.waiting.pop(own, None)
        reopened.ledger[own] = (signature, ToolResult(data["call_id"], data["tool"],
                                                      data["content"], data["status"]))


def framework_id(call_id: str, used: Container[str]) -> str:
    """The framework's id of a tether call id: tether renames a reused one ``id~2``, ``id~3``."""
    head, _, n = call_id.rpartition("~")
    return head if head and n.isdigit() and head in used else call_id
