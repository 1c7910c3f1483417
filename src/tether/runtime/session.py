"""Session: one run of an Agent on a task, event-sourced over its journal.

Decision: the session wires one Environment (the chokepoint) for the run, hands the strategy a
narrow Handle, and owns the ending: when the chokepoint raises Stop, the session gives the model a
wrap-up turn without tools (held inside the budget) and records why the run ended. Its state is
the fold of its journal; the Result is read off that state.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.policy.base import Subject
from tether.runtime.agent import run_sync
from tether.runtime.budget import Accountant, Budget
from tether.runtime.environment import Environment
from tether.runtime.executor import ToolExecutor
from tether.runtime.gate import PolicyGate
from tether.runtime.handle import Handle
from tether.runtime.journal import EventBus, Journal
from tether.runtime.result import Result, Trajectory
from tether.runtime.state import SessionState
from tether.runtime.stop import Stop, StopReason
from tether.types import Event, Message

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

    def replay(self) -> list[Event]:
        """AUDIT: the session's events, in order, each chained to the previous by hash."""
        return self._journal.events()

    def verify(self) -> int | None:
        """The seq of the first event whose hash link is broken, or None when the chain holds."""
        return self._journal.verify()

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.id, len(self._journal), self._journal.head)

    def run(self) -> Result:
        result: Result = run_sync(self.arun())
        return result

    async def arun(self) -> Result:
        if self._result is not None:
            return self._result
        if self._running:
            raise RuntimeError(f"session {self.id} is already running")
        self._running = True
        agent, journal = self.agent, self._journal
        self._accountant.start_clock()
        env = Environment(
            session_id=self.id, model=agent.model,
            executor=ToolExecutor(agent.registry, agent.max_result_chars),
            gate=PolicyGate(agent.policy, self.subject, self.id, journal, self._state,
                            self._accountant, self.context),
            accountant=self._accountant, journal=journal, state=self._state,
            limits=agent.limits, show_budget=agent.show_budget,
            opening=(Message.system(agent.system_prompt), Message.user(self.task)),
        )
        journal.append("session.start", {
            "task": self.task, "agent": agent.name, "model": agent.model.name,
            "tools": list(agent.registry.names), "budget": self.budget.to_dict(),
            "subject": {"user_id": self.subject.user_id, "tenant_id": self.subject.tenant_id,
                        "roles": sorted(self.subject.roles)},
        })
        handle = Handle(env.ask_model, env.call_tools, env.remaining_budget)
        try:
            answer = str(await agent.reasoning.run(handle))
            reason, detail = StopReason.FINISHED, ""
        except Stop as stop:
            reason, detail = stop.reason, stop.detail
            answer = await self._wrap_up(env, stop)
        except asyncio.CancelledError:
            self._end(StopReason.CANCELLED, "the run was cancelled", "")
            raise
        except Exception as exc:
            journal.append("session.error", {"error": f"{type(exc).__name__}: {exc}"})
            self._running = False
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

    def _end(self, reason: StopReason, detail: str, answer: str) -> Result:
        spend = self._accountant.spend()
        self._journal.append("session.end", {"reason": reason.value, "detail": detail,
                                             "answer": answer, "spend": spend.to_dict()})
        state = self._state
        self._result = Result(answer, reason, state.tally.usage,
                              Trajectory(state.closed_steps()), self.id, spend, detail)
        self._running = False
        return self._result
