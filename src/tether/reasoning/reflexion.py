"""Reflexion: attempt, evaluate, reflect in words, and try again with the reflections in context.

Why: a model whose first attempt is wrong often knows why once it is told *that* it is wrong
(Shinn et al., 2023): a verbal reflection on the failed attempt, kept in context, steers the next
one where a plain retry repeats the mistake. The signal must come from somewhere honest: a
grader from ``tether.reasoning.graders`` (an exact answer, a check of the environment, of the calls
made) or, without one, the model's own critique.

Decision: the attempt is any strategy (ReAct by default) run on a handle scoped to the attempt:
the same chokepoint, plus caps of its own (``attempt_steps``, ``attempt_tool_calls``) so one
attempt cannot spend what the next ones need; the run's budget still holds over everything.
The critique and the reflection are tool-less turns with small output caps of their own. Each
attempt, its answer, evaluation and reflection is journaled (``strategy.note``: ``attempt``
starts a phase, ``answer``, ``evaluation`` and ``reflection`` each end one), and a resumed run
reads where it stands from those notes (``Handle.history``): ``max_attempts`` holds across a
resume, the reflections are kept, and a run a crash cut starts again in the phase that had not
ended — an attempt goes on (its own caps start again; the run's budget does not) with the calls
it made before (rebuilt from the journal, for a grader that checks them); a critique or a
reflection cut short is asked again, never taken for the attempt's answer. The earlier
attempts stay in the conversation (they are the session's record); the reflections are added as
a note at the start of the next one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tether.errors import InvalidArgument, RunError
from tether.reasoning.graders import CallRecord, Grade, Grader, Outcome, grade
from tether.reasoning.react import ReAct
from tether.runtime.record.result import ToolResult
from tether.runtime.strategy.handle import Handle, Strategy
from tether.runtime.strategy.planned import Entry, ModelTurn, Note, PlannedCalls
from tether.types import Message, ModelResponse, ToolCall

CRITIQUE_NOTE = ("Check the answer you just gave against the task. Reply PASS if it is right "
                 "and complete, otherwise FAIL followed by what is wrong, in one line.")
REFLECT_NOTE = ("That attempt failed: {why}. In two or three sentences, reflect: what went "
                "wrong, and what will you do differently on the next attempt? Do not answer "
                "the task yet.")
RETRY_NOTE = ("Reflections on your earlier attempts at this task — use them, do not repeat the "
              "mistakes:\n{reflections}\nNow try the task again from the start.")


class Evaluator(Protocol):
    """Judges one attempt; may use the handle (a tool-less model turn) but runs no tool."""

    async def evaluate(self, handle: Handle, answer: str,
                       calls: Sequence[CallRecord]) -> Grade: ...


@dataclass(frozen=True, slots=True)
class SelfCritique:
    """The model judges its own answer in one tool-less turn of at most ``max_output_tokens``;
    anything but a leading PASS is a fail (an unreadable critique included)."""

    max_output_tokens: int = 64

    async def evaluate(self, handle: Handle, answer: str,
                       calls: Sequence[CallRecord]) -> Grade:
        said = (await handle.ask_model(note=CRITIQUE_NOTE, tool_choice="none",
                                       max_output_tokens=self.max_output_tokens)).text
        word = next(iter(re.findall(r"[A-Za-z]+", said)), "").upper()
        if word == "PASS":
            return Grade(True, "the model's critique: PASS")
        return Grade(False, said.strip()[:300] or "the critique was empty")


@dataclass(frozen=True, slots=True)
class GraderCheck:
    """A grader from ``tether.reasoning.graders`` judges the attempt (no model call): its answer,
    the calls it made and, when given, ``environment`` (what the tools act on)."""

    grader: Grader
    expected: Any = None
    environment: Any = None

    async def evaluate(self, handle: Handle, answer: str,
                       calls: Sequence[CallRecord]) -> Grade:
        return await grade(self.grader, Outcome(handle.task, self.expected, answer, "finished",
                                                tuple(calls), self.environment))


class AttemptOver(RunError):
    """An attempt reached its own cap (not the run's budget): it ends, and is evaluated."""


class _Attempt:
    """The handle one attempt gets: the run's, with the attempt's caps, the reflections as
    the first turn's note, and a record of the calls it made."""

    def __init__(self, outer: Handle, note: str | None, steps: int | None,
                 tool_calls: int | None, attempt: int = 1) -> None:
        self.outer, self.note, self.attempt = outer, note, attempt
        self.steps_left, self.calls_left = steps, tool_calls
        self.calls: list[CallRecord] = []
        for entry in self._history():  # resumed: the calls the attempt made before
            if isinstance(entry, ModelTurn | PlannedCalls):
                ran = [(c, r) for c, r in zip(entry.calls, entry.results, strict=True) if r]
                self._keep([c for c, _ in ran], [r for _, r in ran])
        self.handle = Handle(self._ask, self._call, outer.remaining_budget, outer.record,
                             outer.task, planned=self._planned, history=self._history,
                             branch=(self._ask_branch, self._call_branch))

    def _history(self) -> tuple[Entry, ...]:
        """What the actor journaled in this attempt only: an actor that resumes from its
        history (LLM+P) starts each attempt afresh, not from the last attempt's plan."""
        entries = self.outer.history()
        start = max((i for i, e in enumerate(entries)
                     if isinstance(e, Note) and e.kind == "attempt"), default=-1)
        return entries[start + 1:]

    def _spend_step(self) -> None:
        if self.steps_left is not None:
            if self.steps_left < 1:
                raise AttemptOver("the attempt used all its model turns")
            self.steps_left -= 1

    async def _ask_branch(self, key: str, messages: Sequence[Message], *,
                          tool_choice: str | None = None, cap: int | None = None,
                          tools: bool = True) -> ModelResponse:
        """A search's branch call (an actor such as LATS): one of the attempt's model turns,
        its key the attempt's own (each attempt searches afresh)."""
        self._spend_step()
        return await self.outer.ask_branch(messages, key=f"a{self.attempt}.{key}",
                                           tool_choice=tool_choice, max_output_tokens=cap,
                                           tools=tools)

    async def _call_branch(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """A branch's calls count against the attempt's tool calls; they are exploration, not
        what the attempt did (only a chosen path's planned calls are graded)."""
        self._spend_calls(len(calls))
        return await self.outer.call_branch(calls)

    async def _ask(self, note: str | None = None, tool_choice: str | None = None,
                   cap: int | None = None) -> ModelResponse:
        self._spend_step()
        if self.note is not None:
            note, self.note = (self.note if note is None else f"{self.note}\n\n{note}"), None
        return await self.outer.ask_model(note=note, tool_choice=tool_choice,
                                          max_output_tokens=cap)

    def _spend_calls(self, n: int) -> None:
        if self.calls_left is not None:
            if n > self.calls_left:
                raise AttemptOver("the attempt used all its tool calls")
            self.calls_left -= n

    def _keep(self, calls: Sequence[ToolCall],
              results: Sequence[ToolResult]) -> tuple[ToolResult, ...]:
        for c, r in zip(calls, results, strict=True):
            arguments = c.arguments if isinstance(c.arguments, Mapping) else {}
            self.calls.append(CallRecord(c.name, arguments, r.status, r.content))
        return tuple(results)

    async def _call(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        self._spend_calls(len(calls))
        return self._keep(calls, await self.outer.call_tools(calls))

    async def _planned(self, calls: Sequence[tuple[str, Mapping[str, Any]]],
                       reason: str) -> tuple[ToolResult, ...]:
        self._spend_calls(len(calls))
        results = await self.outer.call_planned(calls, reason=reason)
        return self._keep([ToolCall("", n, a) for n, a in calls], results)


@dataclass(frozen=True, slots=True)
class Reflexion:
    """A strategy: attempt, evaluate, reflect in words, and try again with the reflections in
    context: ``Agent(reasoning=Reflexion(evaluator=GraderCheck(numeric("42"))))``.

    Args:
        actor: The strategy each attempt runs, on a handle scoped to the attempt.
        evaluator: Judges each attempt's answer: ``GraderCheck(grader)`` (an honest signal, a
            grader of ``tether.evals``) or ``SelfCritique()`` (the model's own critique).
        max_attempts: Attempts at most, across a resume too.
        attempt_steps: Model turns per attempt. None: only the run's budget.
        attempt_tool_calls: Tool calls per attempt. None: only the run's budget.
        reflection_tokens: The output cap of each critique and reflection turn.
    """

    actor: Strategy = field(default_factory=ReAct)
    evaluator: Evaluator = field(default_factory=SelfCritique)
    max_attempts: int = 3
    attempt_steps: int | None = 8
    attempt_tool_calls: int | None = None
    reflection_tokens: int = 256

    def __post_init__(self) -> None:
        for name in ("max_attempts", "reflection_tokens", "attempt_steps",
                     "attempt_tool_calls"):
            value = getattr(self, name)
            if value is None and name.startswith("attempt_"):
                continue
            if type(value) is not int or value < 1:
                raise InvalidArgument(f"{name} must be a whole number >= 1")

    async def run(self, handle: Handle) -> str:
        at = _progress(handle.history())
        if at.returned:  # run again after it answered (a repair of the answer's form): the
            # attempts stand, and the actor answers — the journaled answer would repair nothing
            return str(await self.actor.run(handle))
        # (a reflection's note is journaled with the next attempt's: never one without the other)
        attempt, answer, verdict, reflected = at.attempt, at.answer, at.verdict, False
        reflections = list(at.reflections)
        while not at.exhausted:
            note = None
            if attempt == 0 or (verdict is not None and reflected):  # the next attempt
                if attempt >= self.max_attempts:
                    break
                attempt += 1
                handle.record("attempt", {"attempt": attempt, "of": self.max_attempts,
                                          "reflections": len(reflections)})
                answer, verdict, reflected = None, None, False
                note = RETRY_NOTE.format(reflections="\n".join(
                    f"{i}. {r}" for i, r in enumerate(reflections, 1))) if reflections else None
            # resumed inside an attempt (a pause, a crash): it goes on, it is not a new one
            scoped = _Attempt(handle, note, self.attempt_steps, self.attempt_tool_calls,
                              attempt)
            if answer is None and verdict is None:
                try:
                    answer = str(await self.actor.run(scoped.handle))
                    handle.record("answer", {"attempt": attempt, "answer": answer})
                except AttemptOver as exc:
                    answer, verdict = "", Grade(False, str(exc))
                    self._evaluated(handle, attempt, verdict)
            if verdict is None:  # (resumed after the answer: evaluated again, not answered)
                verdict = await self.evaluator.evaluate(handle, answer or "", scoped.calls)
                self._evaluated(handle, attempt, verdict)
            if verdict.passed:
                return _returned(handle, answer)
            if attempt >= self.max_attempts:
                break
            if not reflected:
                said = await handle.ask_model(note=REFLECT_NOTE.format(
                    why=verdict.why or "no reason given"), tool_choice="none",
                    max_output_tokens=self.reflection_tokens)
                handle.record("reflection", {"attempt": attempt, "text": said.text})
                reflections.append(said.text)
                reflected = True
        if not at.exhausted:
            handle.record("attempts.exhausted", {"attempts": attempt})
        return _returned(handle, answer)

    def _evaluated(self, handle: Handle, attempt: int, verdict: Grade) -> None:
        handle.record("evaluation", {"attempt": attempt, "passed": verdict.passed,
                                     "why": verdict.why,
                                     "evaluator": type(self.evaluator).__name__})


@dataclass(frozen=True, slots=True)
class _Progress:
    """Where a run stands, read off its journaled notes: the attempt (0: none yet), its answer
    and verdict (None: not yet), and the reflections so far."""

    attempt: int = 0
    answer: str | None = None
    verdict: Grade | None = None
    reflections: tuple[str, ...] = ()
    exhausted: bool = False
    returned: bool = False  # the run gave its answer (run again: a repair of its form)


def _returned(handle: Handle, answer: str | None) -> str:
    handle.record("returned", {})
    return answer or ""


def _progress(history: Sequence[Entry]) -> _Progress:
    """Each phase ends with its note (``attempt`` starts one; ``answer``, ``evaluation``,
    ``reflection`` end one), so a run resumed after a crash starts again in the phase that had
    not ended — never taking the words of a critique or a reflection cut short for an answer."""
    at = _Progress()
    for n in history:
        if not isinstance(n, Note):
            continue
        if n.kind == "attempt":
            at = _Progress(int(n.data["attempt"]), reflections=at.reflections)
        elif n.kind == "answer":
            at = replace(at, answer=str(n.data["answer"]))
        elif n.kind == "evaluation":
            at = replace(at, verdict=Grade(bool(n.data["passed"]), str(n.data.get("why", ""))))
        elif n.kind == "reflection":
            at = replace(at, reflections=(*at.reflections, str(n.data["text"])))
        elif n.kind == "attempts.exhausted":
            at = replace(at, exhausted=True)
        elif n.kind == "returned":
            at = replace(at, returned=True)
    return at
