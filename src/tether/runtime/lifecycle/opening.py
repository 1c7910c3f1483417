"""How a run of a session opens its journal: the session's start, or its resumption.

Why its own module: the first event of a run is what every view that sees only that run's
events starts from — a live telemetry sink in a resumed process has nothing else — so it carries
who runs the run (agent, model, provider, budget, user) and, on resumption, the trace of the run
before (``tether.tracing``); and the run's trace segment, which the chokepoint stamps on every
model and tool call when the recipe has telemetry, is made from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.journal.chain import Journal
from tether.policy.plan import read_request
from tether.runtime.chokepoint.assembly import subject_record, write_start
from tether.runtime.chokepoint.gate import resource_of
from tether.runtime.chokepoint.output import OutputCheck, instructions
from tether.runtime.lifecycle.interrupt import lost_call
from tether.runtime.lifecycle.thread import HISTORY_ORDER, History, thread_history
from tether.runtime.record.history import Shown
from tether.runtime.record.state import SessionState
from tether.tracing import Segment, TraceParent
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.lifecycle.session import Session


def open_run(session: Session, journal: Journal, state: SessionState, resuming: bool,
             check: OutputCheck | None = None) -> Segment | None:
    """Journal this run's first event (the session's start, or its resumption and the model
    call a crash lost); returns the run's trace segment when the recipe has telemetry.
    ``check``: the recipe's output type, whose schema the start's system prompt carries as
    instructions when the model does not follow it natively."""
    agent = session.agent
    who: dict[str, Any] = {
        "agent": agent.name, "model": agent.model.name, **_provider(agent),
        "budget": session.budget.to_dict(), "subject": subject_record(session.subject)}
    if resuming:
        previous = next(e.seq for e in reversed(journal.events())
                        if e.type in (EventType.SESSION_START, EventType.SESSION_RESUMED))
        before = Segment(session.id, previous, TraceParent.parse(
            session.context.get("traceparent")) if previous == 1 else None)
        seq = journal.append(EventType.SESSION_RESUMED, {
            "after": "pause" if state.paused else "crash", **who,
            "link": before.root().header()})  # the trace of the run before
        lost = state.in_flight
        if lost is not None:  # the process died waiting for the model: assume it was billed
            journal.append(*lost_call(lost, None))
        parent = None
    else:
        prompt = agent.system_prompt
        if check is not None and not check.native:
            prompt = f"{prompt}\n\n{instructions(check.spec)}"
        start = {"task": session.task, "system_prompt": prompt,
                 "recipe": agent.fingerprint, "tools": list(agent.registry.names),
                 "context": session.context, **who}
        if session.request != session.task:
            start["request"] = session.request
        if session.metadata:
            start["metadata"] = session.metadata
        recorded = session.recorded_start  # a rerun's: the turns and the plan as recorded
        shown: Sequence[Mapping[str, Any]] = ()
        if recorded is not None:
            start.update({k: recorded[k] for k in ("thread", "plan") if k in recorded})
            shown = [t.to_dict() for t in session.recorded_turns]
        else:
            if session.thread is not None:
                history = _join(session, session.thread)
                start["thread"], shown = history.reference, history.turns
                state.shown_history = Shown(history.messages, history.estimate)
            plan = plan_of(session)
            if plan is not None:
                start["plan"] = plan
        if check is not None:
            start["output"] = {"type": check.spec.name, "retries": check.retries,
                               "native": check.native}
        state.shown = shown  # (the start names them by reference)
        seq = write_start(journal, start)
        parent = TraceParent.parse(session.context.get("traceparent")) if agent.telemetry \
            else None
    return Segment(session.id, seq, parent) if agent.telemetry else None


def plan_of(session: Session) -> dict[str, Any] | None:
    """What the session's request asks for (``tether.policy.plan``), read before anything else
    runs — only when a tool could be asked for (a side-effecting one that declares intents)."""
    resources = [resource_of(t) for t in session.agent.registry]
    if not session.request or not any(r.side_effect and r.intents for r in resources):
        return None
    return read_request(session.request, resources).to_dict()


def _join(session: Session, thread_id: str) -> History:
    """Take the session's place in its thread and read the turns that have ended: the start
    names them by reference (``tether.runtime.lifecycle.thread``), so nothing later depends on
    the thread index, and a thread's turns are stored once however many sessions continue it."""
    store = session.agent.journal_store
    assert store is not None  # Agent.session refuses a thread without a store
    user, tenant = session.subject.user_id, session.subject.tenant_id
    place = store.join_thread(tenant, user, thread_id, session.id)
    history = thread_history(store, tenant, user, thread_id, session.agent.checked_threads,
                             session.agent.model.estimate_message_tokens)
    return dataclasses.replace(history, reference={
        "id": thread_id, "position": place, "order": HISTORY_ORDER, **history.reference})


def _provider(agent: Agent) -> dict[str, str]:
    """The model's provider (``openai``, ``anthropic``), for the journal, when it names one."""
    provider = getattr(agent.model, "provider", None)
    return {"provider": provider} if isinstance(provider, str) and provider else {}
