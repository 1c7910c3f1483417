"""Session: one run of an Agent on a task, event-sourced over its journal.

Decision: the session wires one Environment (the chokepoint) per activation
(``tether.runtime.lifecycle.wiring``), hands the strategy a narrow Handle, and owns the ending.
When the chokepoint raises Stop, the session gives the model a wrap-up turn without tools (held
inside the budget) and records why the run ended — except for the reasons that pause
(``needs_approval``, ``uncertain_effect``): the session records what waits and can be resumed,
and on resume the waiting calls are settled first (approved ones run once, without the model
asking again). An interruption — ``cancel()``, a cancelled task, a signal at the CLI — pauses
too, never ends (``tether.runtime.lifecycle.interrupt``). Its state is the fold of
its journal; the Result is read off that state.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from tether.errors import InvalidArgument, RunError, WrongState
from tether.journal.chain import EventBus, Journal
from tether.policy.base import Subject
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.budget import Budget, Spend
from tether.runtime.accounting.quota import meter_for
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.approvals.requests import ApprovalRequest
from tether.runtime.chokepoint.assembly import RunContext
from tether.runtime.chokepoint.halts import refreshed, refuse_if_halted
from tether.runtime.lifecycle.interrupt import interruption, lost_call
from tether.runtime.lifecycle.lease import leased, leased_briefly
from tether.runtime.lifecycle.opening import open_run
from tether.runtime.lifecycle.stored import JournalTampered as JournalTampered
from tether.runtime.lifecycle.stored import RecipeChanged as RecipeChanged
from tether.runtime.lifecycle.stored import stored_events
from tether.runtime.lifecycle.sync import run_sync
from tether.runtime.lifecycle.thread import Turn, end_turn, recorded_history
from tether.runtime.lifecycle.wiring import environment as wired_environment
from tether.runtime.lifecycle.wiring import output_check
from tether.runtime.provenance.recalled import recall_hidden
from tether.runtime.record.result import Result, Trajectory
from tether.runtime.record.state import fold
from tether.runtime.strategy import doors as strategy_doors
from tether.store.base import StoreUnavailable
from tether.types import Event
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.stream import StreamEvent

class SessionEnded(RunError, RuntimeError, ValueError):
    """An ended session runs nothing more: it is neither resumed nor settled. (A RuntimeError as
    every refusal to resume, a ValueError as every refusal to settle: callers of either catch it.)
    """


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where a session's journal stands: enough to verify it later or resume from it."""

    session_id: str
    seq: int
    head_hash: str


class Session:
    """One run of an ``Agent`` on a task, recorded in its journal. Made by
    ``agent.session(task, ...)`` (its arguments are documented there) or rebuilt by
    ``agent.load(session_id)``; runs once (``run``, ``arun``, ``astream``); one that paused or
    whose process died goes on with ``resume``, in any process with the same recipe and store."""

    __slots__ = (
        "_accountant",
        "_activation",
        "_interrupt",
        "_journal",
        "_on_delta",
        "_result",
        "_running",
        "_state",
        "agent",
        "budget",
        "context",
        "id",
        "metadata",
        "recorded_start",
        "recorded_turns",
        "request",
        "subject",
        "task",
        "thread",
    )

    def __init__(self, agent: Agent, task: str, *, budget: Budget, user_id: str | None,
                 tenant_id: str | None, roles: Iterable[str],
                 context: Mapping[str, Any] | None, session_id: str | None,
                 history: Sequence[Event] = (),
                 metadata: Mapping[str, Any] | None = None, request: str | None = None,
                 thread: str | None = None, shown: Sequence[Turn] = ()) -> None:
        if not isinstance(task, str) or not task.strip():
            raise InvalidArgument("task must be a non-empty string")
        self.agent = agent
        self.task = task
        # what the user asked, for the policy (Context.request): the task, unless someone other
        # than the user wrote the task — a sub-agent's caller passes its own request down
        self.request = task if request is None else request
        self.budget = budget
        self.id = session_id or os.urandom(16).hex()
        self.subject = Subject(user_id, tenant_id, frozenset(roles), agent.name)
        self.context = dict(context or {})
        # labels for whoever reads the journal later (an evaluation's trial identity, a
        # ticket number): journaled at the start, never shown to the model or the policy
        self.metadata = dict(metadata or {})
        self.thread = thread  # the conversation this session continues
        # (tether.runtime.lifecycle.thread)
        # a rerun's: the recorded session's start, whose thread turns and request plan the
        # rerun starts with (not read again from a store or the request)
        self.recorded_start: Mapping[str, Any] | None = None
        self.recorded_turns: Sequence[Turn] = ()  # ... and the turns its start named
        self._state = fold(history, [t.to_dict() for t in shown])
        self._journal = Journal(self.id, on_append=self._state.apply, store=agent.journal_store,
                                history=history)
        for sink in agent.telemetry:
            self._journal.bus.subscribe(sink)
        self._accountant = Accountant(budget, agent.effective_price, self._state.tally)
        self._accountant.quota = meter_for(agent.all_quotas, agent.journal_store, self.subject,
                                           self.id, self._journal, agent.effective_price)
        self._result: Result | None = None
        self._running = False
        # the loop and task of the running activation, and why it was asked to stop (cancel())
        self._activation: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self._interrupt: str | None = None
        self._on_delta: Callable[[str], None] | None = None
        if self._state.stop_reason is not None and not self._state.paused:
            self._result = self._snapshot(self._accountant.spend())

    @classmethod
    def restore(cls, agent: Agent, session_id: str, *,
                accept_recipe_change: bool = False) -> Session:
        """Rebuild a stored session from its journal, refusing one whose chain is broken, one
        of another tenant than the agent serves (as not found), and one started under another
        recipe unless ``accept_recipe_change`` (``tether.runtime.lifecycle.stored``)."""
        events = stored_events(agent, session_id, accept_recipe_change)
        start = events[0].data
        subject = start["subject"]
        session = cls(agent, start["task"], budget=Budget.from_dict(start["budget"]),
                      user_id=subject["user_id"], tenant_id=subject["tenant_id"],
                      roles=subject["roles"], context=start.get("context"),
                      session_id=session_id, history=events, metadata=start.get("metadata"),
                      request=start.get("request"),
                      thread=(start.get("thread") or {}).get("id"),
                      shown=recorded_history(agent.journal_store, start))
        recall_hidden(session._journal, events, agent.credentials)  # before it appends a thing
        return session

    def __repr__(self) -> str:
        return f"<Session {self.id} agent={self.agent.name!r}>"

    @property
    def events(self) -> EventBus:
        """Subscribe with ``session.events.subscribe(fn)``; fn(event) after each append."""
        return self._journal.bus

    @property
    def result(self) -> Result | None:
        """The session's result once it ended; None while it has not run, runs or is paused."""
        return self._result

    @property
    def paused(self) -> bool:
        """Whether the session is paused (for approval, an uncertain effect or an
        interruption): ``resume()`` goes on from there."""
        return self._state.paused

    def settle(self, call_id: str, action: str, *, operator: str, note: str = "") -> None:
        """Decide a call that was interrupted mid-effect: ``retry`` runs it again, ``skip``
        gives the model a result saying it was not repeated. Then ``resume()``."""
        if action not in ("retry", "skip"):
            raise InvalidArgument("action must be 'retry' or 'skip'")
        state = self._state
        if state.stop_reason is not None and not state.paused:
            raise SessionEnded(f"session {self.id} ended ({state.stop_reason}), so there is "
                               "nothing to settle: an ended session runs nothing more")
        if not operator or not operator.strip():
            raise InvalidArgument("say who settles: operator must be a non-empty name")
        if call_id not in state.started or call_id in state.results:
            raise InvalidArgument(f"call {call_id!r} is not an interrupted call of this session")
        with leased_briefly(self._journal, self.agent.lease_ttl):
            self._journal.append(EventType.EFFECT_SETTLED, {"call_id": call_id, "action": action,
                                                    "operator": operator, "note": note})
            self._journal.flush()

    def cancel(self, why: str = "Session.cancel()") -> bool:
        """Interrupt the running activation, from any thread (or a signal handler): the session
        pauses, resumably — a side effect in flight is left ``uncertain_effect`` for an operator,
        exactly as after a crash; with none, the pause is ``interrupted`` — and ``run()`` /
        ``arun()`` return the paused Result. ``why`` is journaled. False when nothing runs."""
        activation = self._activation
        if activation is None:
            return False
        loop, task = activation

        def interrupt() -> None:  # on the run's loop, so never between two of its steps
            if self._activation is activation and self._interrupt is None:
                self._interrupt = why
                task.cancel(f"tether: {why}")

        try:
            loop.call_soon_threadsafe(interrupt)
        except RuntimeError:  # the loop closed meanwhile: the activation is over
            return False
        return True

    def spend(self) -> Spend:
        """What this session has spent so far."""
        return self._accountant.spend()

    def replay(self) -> list[Event]:
        """AUDIT: the session's events, in order, each chained to the previous by hash."""
        return self._journal.events()

    def verify(self) -> int | None:
        """The seq of the first event whose hash link is broken, or None when the chain holds."""
        return self._journal.verify()

    def checkpoint(self) -> Checkpoint:
        """Where the journal stands now: the session's id, its length and its head hash."""
        return Checkpoint(self.id, len(self._journal), self._journal.head)

    def pending_approvals(self) -> list[ApprovalRequest]:
        """Approval requests of this session that no one has decided yet."""
        return self.agent.approval_store.pending(self.id)

    def run(self) -> Result:
        """``arun()``, blocking (inside an event loop, await ``arun``): the ``Result`` is
        ``finished`` when the model gave its answer; else ``stop_reason`` says what stopped or
        paused the run (a budget, a denial, ``needs_approval``, ...), ``notice`` what next."""
        result: Result = run_sync(self.arun(), alone=self._hold())
        return result

    def resume(self) -> Result:
        """``aresume()``, blocking: continue a paused session (approved calls run, denied
        ones are refused) to its end or next pause; its ``Result`` as ``run`` gives it."""
        result: Result = run_sync(self.aresume(), alone=self._hold())
        return result

    def _hold(self) -> float:
        """How long a sync tool may hold the loop ``run``/``resume`` make for this session
        alone: within the lease each append renews (half of it), with no store, any time."""
        return math.inf if self._journal.store is None else self.agent.lease_ttl / 2

    async def arun(self) -> Result:
        """Run to the end, or to a pause (approval, uncertain effect, interruption). A run that
        ended returns its result. Cancelling the task running it pauses the session (see
        ``cancel()``) and raises ``CancelledError`` as usual."""
        if self._result is not None:
            return self._result
        if not len(self._journal):  # a halt standing now stops it at its first call
            refreshed(self._journal.store)
        return await self._activate()

    def astream(self) -> AsyncIterator[StreamEvent]:
        """Run like ``arun()``, yielding text deltas and tool events as they happen, then
        ``Finished(result)``. Leaving the loop early interrupts the run: it pauses."""
        from tether.runtime.stream import stream

        def on_delta(fn: Callable[[str], None] | None) -> None:
            self._on_delta = fn

        return stream(self.events, self.arun, on_delta)

    async def aresume(self) -> Result:
        """Continue a session that paused (approval, uncertain effect, interruption) or whose
        process died. Raises ``SessionEnded`` for one that ended, ``WrongState`` for one that
        never started (run it) or is running."""
        state = self._state
        if not len(self._journal):
            raise WrongState(f"session {self.id} has not started; run it instead")
        if state.stop_reason is not None and not state.paused:
            raise SessionEnded(f"session {self.id} is not paused; it ended "
                               f"({state.stop_reason}), so there is nothing to resume")
        refuse_if_halted(self._journal.store, self.id)  # Halted: tether unhalt, then resume
        return await self._activate()

    async def _activate(self) -> Result:
        if self._running:
            raise WrongState(f"session {self.id} is already running")
        self._running = True
        task = asyncio.current_task()
        assert task is not None
        self._activation, self._interrupt = (asyncio.get_running_loop(), task), None
        try:
            async with leased(self._journal, self.agent.lease_ttl, new=not len(self._journal)):
                try:
                    return await self._drive()
                except asyncio.CancelledError:
                    result = self._interrupted()
                    if self._interrupt is not None and task.uncancel() == 0:
                        return result  # cancel() asked for the pause: its caller gets it
                    raise  # whoever cancelled the task gets their cancellation
        finally:
            self._running = False
            self._activation = None
            if self.agent.credentials is not None:  # no token outlives the activation
                self.agent.credentials.revoke_session(self.id)

    async def _drive(self) -> Result:
        agent, journal, state = self.agent, self._journal, self._state
        resuming = len(journal) > 0
        self._accountant.start_clock()
        check = output_check(agent)
        trace = open_run(self, journal, state, resuming, check)
        env = wired_environment(self, RunContext(self.id, journal, state, self._accountant, trace),
                                check, self._on_delta)
        handle = strategy_doors.handle(env, self.task)
        answer = ""
        try:
            if agent.planner is not None or state.planning is not None:  # (else: nothing)
                from tether.runtime.lifecycle.planning import read_with_model

                await read_with_model(self, env, journal, state, self._accountant)
            if resuming:
                await env.resolve_open_turn()
            answer = str(await agent.reasoning.run(handle))
            if agent.output_spec is not None:  # each repair: the strategy again, on the note
                while not env.check_output(answer):
                    answer = str(await agent.reasoning.run(handle))
        except Stop as raised:
            if raised is not env.stopped:  # only the chokepoint stops a run
                self._fail(TypeError(f"the strategy raised a Stop of its own ({raised}); a "
                                     "strategy ends a run by returning its answer"))
        except Exception as exc:
            if env.stopped is None:
                self._fail(exc)
        stop = env.stopped  # whatever the strategy did with it, the chokepoint's stop stands
        if stop is None:
            env.skip_unresolved("the strategy ended the run without running this call")
            return await self._end(StopReason.FINISHED, "", answer)
        if stop.reason.pauses:
            spend = self._record_pause(stop)
            await self._journal.aflush(last=True)
            return self._snapshot(spend)
        if stop.reason is StopReason.OUTPUT_INVALID:  # the answer is the last invalid one
            return await self._end(stop.reason, stop.detail, answer,
                             f"[tether] The run stopped: {stop.detail}. The answer is the "
                             "model's last output, which is not valid; result.output is None.")
        from tether.runtime.lifecycle.stopping import wrap_up  # (a run that finishes: never)

        answer = await wrap_up(env, self._journal, stop)
        why = f"{stop.reason.value} ({stop.detail})"
        spent = f"Spent in all: {self.spend().against(self.budget)}."  # the wrap-up included
        notice = (f"[tether] The run stopped: {why}; the answer is the model's wrap-up. {spent}"
                  if answer else f"[tether] The run stopped before an answer: {why}. {spent}")
        return await self._end(stop.reason, stop.detail, answer, notice)

    def _interrupted(self) -> Result:
        """Pause an interrupted activation (no await: nothing can cut it in half)."""
        state = self._state
        if state.stop_reason is not None:  # cancelled during the end's or pause's own write,
            return self._result or self._snapshot(self._accountant.spend())  # which completed
        why = self._interrupt or "its task was cancelled"
        lost = self._state.in_flight
        if lost is not None:  # cancelled waiting for the model, which may well have billed it
            self._journal.append(*lost_call(lost, f"interrupted ({why}) during the call"))
        spend = self._record_pause(interruption(self._state, self.agent.registry, why))
        self._journal.flush(last=True)
        return self._snapshot(spend)

    def _fail(self, exc: Exception) -> NoReturn:
        if not isinstance(exc, StoreUnavailable):  # else nothing more can be journaled: the
            self._journal.append(EventType.SESSION_ERROR,  # session stops where its store stands
                                 {"error": f"{type(exc).__name__}: {exc}"})
            self._journal.flush()
        raise exc

    def _record_pause(self, stop: Stop) -> Spend:
        """Append the pause (the caller writes it: awaited in a run, at once when interrupted)."""
        from tether.runtime.lifecycle.stopping import record_pause

        return record_pause(self._journal, self._state, self.agent.registry, self._accountant,
                            self.pending_approvals(), stop)

    async def _end(self, reason: StopReason, detail: str, answer: str,
                   notice: str = "") -> Result:
        """End the session: ``answer`` is the model's words only, ``notice`` tether's own
        (why a run that did not finish stopped), each in its own field. The end's write is
        awaited, so one session's end never holds the others' steps."""
        spend = self._accountant.spend()
        journal = self._journal
        journal.append(EventType.SESSION_END, {"reason": reason.value, "detail": detail,
                                       "answer": answer, "notice": notice,
                                       "spend": spend.to_dict()})
        try:
            await journal.aflush(last=True)
        except asyncio.CancelledError:  # aflush waited for the write: if it landed, the
            if journal.store is None or journal.flushed == len(journal):  # session ended
                self._close(spend)
            raise
        return self._close(spend)

    def _close(self, spend: Spend) -> Result:
        """What an ended session leaves behind: no undecided approval, no kept secret."""
        if self._state.may_have_approvals:  # an ended session runs nothing more: what still waits
            self.agent.approval_store.expire_pending(  # for a person can never be used
                self.id, "the session ended before anyone decided")
        store = self.agent.journal_store
        if self.agent.keep_hidden_arguments and store is not None:
            store.drop_private(self.id)  # an ended session runs nothing more: keep no secret
        if self.thread is not None and store is not None:  # its turn joins the thread's history
            end_turn(store, self.subject.tenant_id, self.subject.user_id, self.thread, self.id,
                     self._journal.events(), self._state.tainted)
        self._result = self._snapshot(spend)
        return self._result

    def _snapshot(self, spend: Spend) -> Result:
        """The Result as the journal now stands, with the spend the journal recorded."""
        state = self._state
        assert state.stop_reason is not None and state.answer is not None
        output = state.output
        if output is not None and self.agent.output_spec is not None:
            output = self.agent.output_spec.revive(output)
        return Result(state.answer, state.stop_reason, state.tally.usage,
                      Trajectory(state.trajectory_steps()), self.id, spend, state.stop_detail,
                      state.notice, output)
