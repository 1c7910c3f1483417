"""Trials: one task, one perturbation, one repetition — run as a session, graded, recorded.

Why: a trial that is a tether session is governed (budget, policy, approvals) exactly as
production is, and its journal is the evidence behind the score. Its identity (evaluation,
suite, task, perturbation, repetition, seed) is in the session's metadata, and its id is derived
from that identity, so running the same evaluation again finds what is already done.

Decision: the grade is journaled as its own small session (``<attempt id>.grade``: start, one
``eval.graded`` event, end) — hash-chained and anchored like any session — because the trial's
journal ends with its ``session.end`` and a grade can only be given after it. A trial counts once
it has a grade; an attempt that died before its grade (a killed worker) is left in the store as
it is and the trial runs again as the next attempt, in a fresh environment. The lowest graded
attempt is the trial's result, so a retry, a second worker or a resumed evaluation can never
count a trial twice.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.evals.graders import CallRecord, Grade, Outcome, grade
from tether.evals.perturb import Perturbation, Setup
from tether.evals.tasks import Task
from tether.journal.chain import Journal
from tether.journal.views.metrics import SessionFacts, session_facts
from tether.store.base import Store, StoreError
from tether.types import Event

if TYPE_CHECKING:
    from tether.runtime.agent import Agent
    from tether.runtime.result import Result

MAX_ATTEMPTS = 20
AgentSource = Callable[[Any], "Agent"]  # the trial's environment (or None) -> its Agent


@dataclass(frozen=True, slots=True)
class TrialKey:
    evaluation: str
    suite: str
    task: str
    perturbation: str
    repetition: int
    seed: int

    @property
    def id(self) -> str:
        """``ev-<evaluation digest>-<trial digest>``: the evaluation's trials share a prefix."""
        body = json.dumps([self.suite, self.task, self.perturbation, self.repetition,
                           self.seed])
        return (f"{evaluation_prefix(self.evaluation)}"
                f"{hashlib.sha256(body.encode()).hexdigest()[:24]}")

    def labels(self) -> dict[str, Any]:
        return {"evaluation": self.evaluation, "suite": self.suite, "task": self.task,
                "perturbation": self.perturbation, "repetition": self.repetition,
                "seed": self.seed, "trial": self.id}

    @classmethod
    def from_labels(cls, labels: Mapping[str, Any]) -> TrialKey:
        return cls(labels["evaluation"], labels["suite"], labels["task"],
                   labels["perturbation"], int(labels["repetition"]), int(labels["seed"]))


def evaluation_prefix(evaluation: str) -> str:
    return f"ev-{hashlib.sha256(evaluation.encode()).hexdigest()[:10]}-"


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


async def run_trial(key: TrialKey, task: Task, perturbation: Perturbation,
                    agent_for: AgentSource, store: Store) -> TrialRecord:
    """Run the trial unless it already has a grade in ``store``; return its record."""
    attempt = 1
    while attempt <= MAX_ATTEMPTS:
        session_id = f"{key.id}.{attempt}"
        if not store.read(session_id):
            try:
                return await _attempt(key, attempt, task, perturbation, agent_for, store)
            except StoreError:  # another worker took this attempt meanwhile: take the next
                pass
        else:
            done = load_trial(store, session_id)
            if done is not None:
                return done
        attempt += 1
    raise RuntimeError(f"trial {key.id} has {MAX_ATTEMPTS} attempts without a grade; "
                       "look at its sessions with `tether audit show`")


async def _attempt(key: TrialKey, attempt: int, task: Task, perturbation: Perturbation,
                   agent_for: AgentSource, store: Store) -> TrialRecord:
    session_id = f"{key.id}.{attempt}"
    rng = random.Random(f"{key.seed}|{key.task}|{key.perturbation}|{key.repetition}")
    environment = task.environment() if task.environment is not None else None
    agent = _with_store(agent_for(environment), store)
    setup = await perturbation.apply(Setup(task.prompt, agent), rng)
    labels = {**key.labels(), "attempt": attempt, "kind": "trial",
              "perturbed": dict(setup.notes)}
    session = setup.agent.session(setup.prompt, session_id=session_id, metadata=labels)
    error = ""
    try:
        result = await session.arun()
        outcome = Outcome(task.prompt, task.expected, result.answer, result.stop_reason.value,
                          _calls(result), environment, session_id, labels)
        verdict = await grade(task.judge, outcome)
    except StoreError:
        raise
    except Exception as exc:  # the run itself broke: the trial fails, with why
        error = f"{type(exc).__name__}: {exc}"
        verdict = Grade(False, f"the trial could not run: {error}")
    events = session.replay()
    if not events:
        raise RuntimeError(f"trial {session_id} journaled nothing")
    write_grade(store, key, attempt, session_id, verdict, task)
    return TrialRecord(key, attempt, session_id, verdict, session_facts(events), error)


def _with_store(agent: Agent, store: Store) -> Agent:
    """The trial's sessions go to the evaluation's store, and so do its approvals."""
    from tether.runtime.agent import Agent

    if not isinstance(agent, Agent):
        raise TypeError(f"the agent factory returned {agent!r}, not a tether Agent")
    return agent.with_store(store)


def write_grade(store: Store, key: TrialKey, attempt: int, session_id: str, verdict: Grade,
                task: Task) -> None:
    journal = Journal(f"{session_id}.grade", store=store)
    journal.append("session.start", {
        "task": f"grade of trial {session_id}", "system_prompt": "", "agent": "eval-grader",
        "model": "", "tools": [], "budget": {}, "context": {},
        "subject": {"user_id": None, "tenant_id": None, "roles": []},
        "metadata": {**key.labels(), "attempt": attempt, "kind": "grade",
                     "graded": session_id}})
    journal.append("eval.graded", {"session_id": session_id,
                                   "grader": getattr(task.judge, "__qualname__", "grader"),
                                   **verdict.to_dict()})
    journal.append("session.end", {"reason": "finished", "detail": "",
                                   "answer": "pass" if verdict.passed else "fail", "notice": "",
                                   "spend": {}})
    journal.flush()


def load_trial(store: Store, session_id: str) -> TrialRecord | None:
    """The record of a stored trial attempt, or None if it has no grade."""
    graded = store.read(f"{session_id}.grade")
    found = next((e for e in graded if e.type == "eval.graded"), None)
    if found is None:
        return None
    events = store.read(session_id)
    return record_of(events, graded)


def record_of(events: Sequence[Event], graded: Sequence[Event]) -> TrialRecord:
    labels = graded[0].data["metadata"]
    verdict = next(e.data for e in graded if e.type == "eval.graded")
    facts = session_facts(events)
    error = ""
    why = verdict.get("why") or ""
    if why.startswith("the trial could not run: "):
        error = why.removeprefix("the trial could not run: ")
    return TrialRecord(TrialKey.from_labels(labels), int(labels["attempt"]),
                       labels["graded"], Grade(bool(verdict["passed"]), why,
                                               verdict.get("score")), facts, error)


def stored_trials(store: Store, evaluation: str) -> list[TrialRecord]:
    """Every graded trial of ``evaluation`` in ``store``: for each trial, its lowest graded
    attempt. Read from the journals alone."""
    prefix = evaluation_prefix(evaluation)
    best: dict[str, TrialRecord] = {}
    for info in store.sessions():
        sid = info.session_id
        if not (sid.startswith(prefix) and sid.endswith(".grade")):
            continue
        record = load_trial(store, sid.removesuffix(".grade"))
        if record is None or record.key.evaluation != evaluation:
            continue
        held = best.get(record.key.id)
        if held is None or record.attempt < held.attempt:
            best[record.key.id] = record
    return list(best.values())
