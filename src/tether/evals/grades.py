"""Grades, journaled: one grade book per process's run of an evaluation, read back per trial.

Why: a trial's grade can only be given after its session has ended, and it must be durable and
tamper-evident like the session, so the report can be rebuilt from the store alone. Decision: a
run keeps a *grade book* — a journal session of its own (``<evaluation prefix>grades-<random>``)
with one ``eval.graded`` event per trial, written to the store every ``FLUSH_EVERY`` grades and
when the run ends. A grade not yet written when the process dies is simply lost, and its trial
runs again as a new attempt: a trial counts once its grade is stored, never before, and the
lowest graded attempt is the one that counts. Batching keeps the record's cost per trial to one
event (a grade as a session of its own would cost a scripted trial a third of its time).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.evals.keys import TrialKey, evaluation_prefix
from tether.journal.chain import Journal
from tether.reasoning.graders import Grade
from tether.store.base import Store
from tether.vocabulary import EventType

GRADES = "grades-"
GRADER_AGENT = "eval-grader"
FLUSH_EVERY = 64


@dataclass(frozen=True, slots=True)
class StoredGrade:
    key: TrialKey
    attempt: int
    session_id: str
    grade: Grade
    error: str = ""


class GradeBook:
    """Where one run of an evaluation, in one process, journals its grades."""

    def __init__(self, store: Store, evaluation: str, *, every: int = FLUSH_EVERY) -> None:
        self.evaluation = evaluation
        self._journal = Journal(f"{evaluation_prefix(evaluation)}{GRADES}{os.urandom(8).hex()}",
                                store=store)
        self._every = every
        self._waiting = 0
        self._open = False

    async def record(self, key: TrialKey, attempt: int, session_id: str, verdict: Grade,
                     grader: str, error: str = "") -> None:
        if not self._open:
            self._open = True
            self._journal.append(EventType.SESSION_START, {
                "task": f"grades of evaluation {self.evaluation}", "system_prompt": "",
                "agent": GRADER_AGENT, "model": "", "tools": [], "budget": {}, "context": {},
                "subject": {"user_id": None, "tenant_id": None, "roles": []},
                "metadata": {"evaluation": self.evaluation, "kind": "grades"}})
        self._journal.append(EventType.EVAL_GRADED, {**key.labels(), "attempt": attempt,
                                                     "session_id": session_id, "grader": grader,
                                                     "error": error, **verdict.to_dict()})
        self._waiting += 1
        if self._waiting >= self._every:
            await self.flush()

    async def flush(self) -> None:
        self._waiting = 0
        await self._journal.aflush()

    async def close(self) -> None:
        """Write what is left and end the book (a run that graded nothing writes nothing)."""
        if self._open:
            self._journal.append(EventType.SESSION_END, {"reason": "finished", "detail": "",
                                                         "answer": "", "notice": "", "spend": {}})
            await self.flush()


def stored_grades(store: Store, evaluation: str) -> dict[str, StoredGrade]:
    """For every trial of ``evaluation`` with a stored grade, its lowest graded attempt."""
    prefix = f"{evaluation_prefix(evaluation)}{GRADES}"
    found: dict[str, StoredGrade] = {}
    for info in store.sessions():
        if not info.session_id.startswith(prefix):
            continue
        for event in store.read(info.session_id):
            if event.type != EventType.EVAL_GRADED or event.data["evaluation"] != evaluation:
                continue
            grade = _grade_of(event.data)
            held = found.get(grade.key.id)
            if held is None or grade.attempt < held.attempt:
                found[grade.key.id] = grade
    return found


def _grade_of(data: Mapping[str, Any]) -> StoredGrade:
    return StoredGrade(TrialKey.from_labels(data), int(data["attempt"]), data["session_id"],
                       Grade(bool(data["passed"]), data.get("why") or "", data.get("score")),
                       data.get("error") or "")
