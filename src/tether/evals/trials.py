"""Trials: one task, one perturbation, one repetition — run as a session, graded, recorded.

Why: a trial that is a tether session is governed (budget, policy, approvals) exactly as
production is, and its journal is the evidence behind the score. Its identity is in the
session's metadata and its id is derived from that identity (``tether.evals.keys``), so running
the same evaluation again finds what is already done: a trial with a stored grade
(``tether.evals.grades``) is read back, not run. An attempt that died before its grade was
stored (a killed worker) is left in the store as it is and the trial runs again as the next
attempt, in a fresh environment; the lowest graded attempt is the trial's result, so a retry, a
second worker or a resumed evaluation never counts a trial twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.errors import RunFailed, WrongType
from tether.evals.grades import GradeBook, StoredGrade, stored_grades
from tether.evals.keys import TrialKey
from tether.evals.perturb import Perturbation, Setup
from tether.evals.tasks import Task
from tether.journal.views.metrics import SessionFacts, session_facts
from tether.reasoning.graders import CallRecord, Grade, Outcome, grade
from tether.store.base import Store, StoreError

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.record.result import Result

MAX_ATTEMPTS = 20
AgentSource = Callable[[Any], "Agent"]  # the trial's environment (or None) -> its Agent


@dataclass(frozen=True, slots=True)
class TrialRecord:
    key: TrialKey
    attempt: int
    session_id: str
    grade: Grade
    facts: SessionFacts
    error: str = ""  # the trial could not run (the agent factory or the session raised)

    @property
    def passed(self) -> bool:
        return self.grade.passed

    def to_dict(self) -> dict[str, Any]:
        return {**self.key.labels(), "attempt": self.attempt, "session_id": self.session_id,
                **self.grade.to_dict(), "stop_reason": self.facts.stop_reason,
                "error": self.error}


def _calls(result: Result) -> tuple[CallRecord, ...]:
    results = {r.call_id: r for r in result.trajectory.tool_results}
    out = []
    for step in result.trajectory.steps:
        for call in step.tool_calls:
            r = results.get(call.id)
            arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
            out.append(CallRecord(call.name, arguments, r.status if r else "skipped",
                                  r.content if r else ""))
    return tuple(out)


class TrialRunner:
    """Runs trials of one evaluation on one store, from one process, with one grade book."""

    def __init__(self, store: Store, evaluation: str, agent_for: AgentSource) -> None:
        self.store = store
        self.book = GradeBook(store, evaluation)
        self._evaluation = evaluation
        self._agent_for = agent_for
        self._graded: dict[str, StoredGrade] | None = None  # read when first needed

    async def run(self, key: TrialKey, task: Task, perturbation: Perturbation) -> TrialRecord:
        """The trial's record: read back if a graded attempt is stored, else a new attempt."""
        store = self.store
        for attempt in range(1, MAX_ATTEMPTS + 1):
            session_id = key.attempt(attempt)
            if store.read(session_id):  # an earlier attempt: graded, or died before its grade
                if self._graded is None:
                    self._graded = stored_grades(store, self._evaluation)
                done = self._graded.get(key.id)
                if done is not None:
                    return TrialRecord(key, done.attempt, done.session_id, done.grade,
                                       session_facts(store.read(done.session_id)), done.error)
                continue
            try:
                return await self._attempt(key, attempt, task, perturbation)
            except StoreError:  # another worker took this attempt meanwhile: take the next
                continue
        raise RunFailed(f"trial {key.id} has {MAX_ATTEMPTS} attempts without a grade; "
                           "look at its sessions with `tether audit show`")

    async def _attempt(self, key: TrialKey, attempt: int, task: Task,
                       perturbation: Perturbation) -> TrialRecord:
        session_id = key.attempt(attempt)
        rng = random.Random(f"{key.seed}|{key.task}|{key.perturbation}|{key.repetition}")
        environment = task.environment() if task.environment is not None else None
        agent = _with_store(self._agent_for(environment), self.store)
        setup = await perturbation.apply(Setup(task.prompt, agent), rng)
        labels = {**key.labels(), "attempt": attempt, "kind": "trial",
                  "perturbed": dict(setup.notes)}
        session = setup.agent.session(setup.prompt, session_id=session_id, metadata=labels)
        error = ""
        try:
            result = await session.arun()
            outcome = Outcome(task.prompt, task.expected, result.answer,
                              result.stop_reason.value, _calls(result), environment, session_id,
                              labels, result.output)
            verdict = await grade(task.judge, outcome)
        except StoreError:
            raise
        except Exception as exc:  # the run itself broke: the trial fails, with why
            error = f"{type(exc).__name__}: {exc}"
            verdict = Grade(False, f"the trial could not run: {error}")
        events = session.replay()
        if not events:
            raise RunFailed(f"trial {session_id} journaled nothing")
        grader = getattr(task.judge, "__qualname__", type(task.judge).__name__)
        await self.book.record(key, attempt, session_id, verdict, grader, error)
        return TrialRecord(key, attempt, session_id, verdict, session_facts(events), error)

    async def close(self) -> None:
        await self.book.close()


def _with_store(agent: Agent, store: Store) -> Agent:
    """The trial's sessions go to the evaluation's store, and so do its approvals."""
    from tether.runtime.lifecycle.agent import Agent

    if not isinstance(agent, Agent):
        raise WrongType(f"the agent factory returned {agent!r}, not a tether Agent")
    return agent.with_store(store)


def stored_trials(store: Store, evaluation: str) -> list[TrialRecord]:
    """Every graded trial of ``evaluation`` in ``store`` (its lowest graded attempt), read from
    the journals alone."""
    return [TrialRecord(g.key, g.attempt, g.session_id, g.grade,
                        session_facts(store.read(g.session_id)), g.error)
            for g in stored_grades(store, evaluation).values()]
