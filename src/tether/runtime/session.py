"""Session: one run of an Agent on a task, event-sourced over its journal.

Decision: the session wires one Environment (the chokepoint) per activation, hands the strategy a
narrow Handle, and owns the ending. When the chokepoint raises Stop, the session gives the model a
wrap-up turn without tools (held inside the budget) and records why the run ended — except for
``needs_approval``, which pauses: the session records what waits and can be resumed, and on resume
the waiting calls are settled first (approved ones run once, without the model asking again). Its
state is the fold of its journal; the Result is read off that state.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.policy.base import Subject
from tether.runtime.agent import run_sync
from tether.runtime.approvals import ApprovalRequest
from tether.runtime.budget import Accountant, Budget, Spend
from tether.runtime.environment import Environment
from tether.runtime.executor import ToolExecutor
from tether.runtime.gate import PolicyGate
from tether.runtime.handle import Handle
from tether.runtime.journal import EventBus, Journal
from tether.runtime.result import Result, Trajectory
from tether.runtime.state import SessionState
from tether.runtime.stop import Stop, StopReason
from tether.runtime.turn import ToolCalls
from tether.types import Event

if TYPE_CHECKING:
    from tether.runtime.agent import Agent

WRAP_UP = ("[tether] The run is stopping: {why}. Tools are no longer available. Give your best "
           "final answer now from what you already have, and say plainly what is missing or "
           "unfinished because of this.")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where a session's journal stands: enough to verify it later or resume from it."""

    session_id: str
    seq: int
    head_hash: str


class Session:
    __slots__ = ("_accountant", "_journal", "_result", "_running", "_state", "agent", "budget",
                 "context", "id", "subject", "task")

    def __init__(self, agent: Agent, task: str, *, budget: Budget, user_id: str | None,
                 tenant_id: str | None, roles: Iterable[str],
                 context: Mapping[str, Any] | None, session_id: str | None) -> None:
        if not isinstance(task, str) or not task.strip():
            raise ValueError("task must be a non-empty string")
        self.agent = agent
        self.task = task
        self.budget = budget
        self.id = session_id or uuid.uuid4().hex
        self.subject = Subject(user_id, tenant_id, frozenset(roles), agent.name)
        self.context = dict(context or {})
        self._state = SessionState()
        self._journal = Journal(self.id, on_append=self._state.apply)
        self._accountant = Accountant(budget, agent.effective_price, self._state.tally)
        self._result: Result | None = None
        self._running = False

    def __repr__(self) -> str:
        return f"<Session {self.id} agent={self.agent.name!r}>"

    @property
    def events(self) -> EventBus:
        """Subscribe with ``session.events.subscribe(fn)``; fn(event) after each append."""
        return self._journal.bus

    @property
    def result(self) -> Result | None:
        return self._result

    @property
    def paused(self) -> bool:
        return self._state.paused

    def replay(self) -> list[Event]:
        """AUDIT: the session's events, in order, each chained to the previous by hash."""
        return self._journal.events()

    def verify(self) -> int | None:
        """The seq of the first event whose hash link is broken, or None when the chain holds."""
        return self._journal.verify()

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.id, len(self._journal), self._journal.head)

    def pending_approvals(self) -> list[ApprovalRequest]:
        """Approval requests of this session that no one has decided yet."""
        return self.agent.approvals.pending(self.id)

    def run(self) -> Result:
        result: Result = run_sync(self.arun())
        return result

    def resume(self) -> Result:
        result: Result = run_sync(self.aresume())
        return result

    async def arun(self) -> Result:
        """Run to the end, or to a pause for approval. A run that ended returns its result."""
        if self._result is not None:
            return self._result
        return await self._activate()

    async def aresume(self) -> Result:
        """Continue a session paused for approval: settle the waiting calls, then go on."""
        if not self._state.paused:
            state = "has not started" if not len(self._journal) else (
                f"ended ({self._state.stop_reason})" if self._state.stop_reason else "is running")
            raise RuntimeError(f"session {self.id} is not paused; it {state}, so there is "
                               "nothing to resume")
        return await self._activate()

    async def _activate(self) -> Result:
        if self._running:
            raise RuntimeError(f"session {self.id} is already running")
        self._running = True
        try:
            return await self._drive()
        finally:
            self._running = False
            if self.agent.credentials is not None:  # no token outlives the activation
                self.agent.credentials.revoke_session(self.id)

    async def _drive(self) -> Result:
        agent, journal, state = self.agent, self._journal, self._state
        resuming = state.paused
        self._accountant.start_clock()
        gate = PolicyGate(agent.policy, self.subject, self.id, journal, state, self._accountant,
                          self.context)
        tools = ToolCalls(session_id=self.id,
                          executor=ToolExecutor(agent.registry, agent.max_result_chars),
                          gate=gate, accountant=self._accountant, journal=journal, state=state,
                          limits=agent.limits, approvals=agent.approvals,
                          approval_ttl=agent.approval_ttl, credentials=agent.credentials)
        env = Environment(model=agent.model, specs=agent.registry.specs, tools=tools,
                          accountant=self._accountant, journal=journal, state=state,
                          show_budget=agent.show_budget)
        if resuming:
            journal.append("session.resumed", {})
        else:
            journal.append("session.start", {
                "task": self.task, "system_prompt": agent.system_prompt, "agent": agent.name,
                "model": agent.model.name, "tools": list(agent.registry.names),
                "budget": self.budget.to_dict(),
                "subject": {"user_id": self.subject.user_id,
                            "tenant_id": self.subject.tenant_id,
                            "roles": sorted(self.subject.roles)},
            })
        handle = Handle(env.ask_model, env.call_tools, env.remaining_budget)
        try:
            if resuming:
                await env.resolve_open_turn()
            answer = str(await agent.reasoning.run(handle))
            reason, detail = StopReason.FINISHED, ""
        except Stop as stop:
            if stop.reason is StopReason.NEEDS_APPROVAL:
                return self._pause(stop)
            reason, detail = stop.reason, stop.detail
            answer = await self._wrap_up(env, stop)
        except asyncio.CancelledError:
            self._end(StopReason.CANCELLED, "the run was cancelled", "")
            raise
        except Exception as exc:
            journal.append("session.error", {"error": f"{type(exc).__name__}: {exc}"})
            raise
        return self._end(reason, detail, answer)

    async def _wrap_up(self, env: Environment, stop: Stop) -> str:
        why = f"{stop.reason.value} ({stop.detail})"
        if stop.reason.gets_final_turn:
            try:
                response = await env.ask_model(final=True, note=WRAP_UP.format(why=why))
                return response.text
            except Stop as no_room:
                self._journal.append("session.wrap_up_skipped", {"reason": no_room.reason.value,
                                                                 "detail": no_room.detail})
        return f"[tether] The run stopped before an answer: {why}."

    def _pause(self, stop: Stop) -> Result:
        waiting = self.pending_approvals()
        answer = (f"[tether] Paused: {len(waiting)} call(s) wait for approval "
                  f"({', '.join(f'{r.tool} [{r.id}]' for r in waiting)}). Approve or deny them, "
                  "then resume the session.")
        spend = self._accountant.spend()
        self._journal.append("session.paused", {
            "detail": stop.detail, "answer": answer, "pending": [r.id for r in waiting],
            "active_seconds": self._accountant.activation_seconds(), "spend": spend.to_dict(),
        })
        return self._snapshot(spend)

    def _end(self, reason: StopReason, detail: str, answer: str) -> Result:
        spend = self._accountant.spend()
        self._journal.append("session.end", {"reason": reason.value, "detail": detail,
                                             "answer": answer, "spend": spend.to_dict()})
        self._result = self._snapshot(spend)
        return self._result

    def _snapshot(self, spend: Spend) -> Result:
        """The Result as the journal now stands, with the spend the journal recorded."""
        state = self._state
        assert state.stop_reason is not None and state.answer is not None
        return Result(state.answer, state.stop_reason, state.tally.usage,
                      Trajectory(state.trajectory_steps()), self.id, spend, state.stop_detail)
