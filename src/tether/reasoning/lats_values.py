"""LATS's value functions: how a node of the search tree is judged, 0 (hopeless) to 1 (solved).

Why: Zhou et al. (2023) value a node with the model's own judgement of the trajectory; where a
task has a checkable answer, a grader (``tether.reasoning.graders``) is the honest signal and
costs no model call. Both are protocols behind one seam, so another (a reward model, a test
suite) can stand in.

Decision: the model's judgement is a branch call (``Handle.ask_branch``) with no tool offered and
a small output cap, keyed under the node (``<node>.v``): budgeted, journaled and replayed like any
other; an unreadable score is 0, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from tether.reasoning.graders import CallRecord, Grader, Outcome, grade
from tether.runtime.strategy.handle import Handle
from tether.types import Message

VALUE_NOTE = ("Judge the trajectory above: how likely is it to lead to a correct and complete "
              "answer to the task? Reply with one number from 0 to 10 first, then a short reason.")

@dataclass(frozen=True, slots=True)
class Trajectory:
    """What a value function judges: a path from the root, as its branch context, its calls
    (a simulated one is judged as if it ran: the path as it would be if chosen) and, at a
    terminal node, the answer."""

    key: str  # the node's id, for the keys of any branch call the judge makes
    messages: tuple[Message, ...]
    calls: tuple[CallRecord, ...]
    answer: str | None


@dataclass(frozen=True, slots=True)
class Judgement:
    value: float  # 0 (hopeless) to 1 (solved)
    why: str = ""


class ValueFunction(Protocol):
    async def judge(self, handle: Handle, task: str, path: Trajectory) -> Judgement: ...


@dataclass(frozen=True, slots=True)
class SelfEvaluation:
    """The model scores the path 0-10 in one tool-less branch call of at most
    ``max_output_tokens``; an unreadable score is 0."""

    max_output_tokens: int = 48

    async def judge(self, handle: Handle, task: str, path: Trajectory) -> Judgement:
        said = (await handle.ask_branch((*path.messages, Message.user(VALUE_NOTE)),
                                        key=f"{path.key}.v", tools=False,
                                        max_output_tokens=self.max_output_tokens)).text
        number = re.search(r"\d+(?:\.\d+)?", said)
        score = min(max(float(number.group()) / 10, 0.0), 1.0) if number else 0.0
        return Judgement(score, " ".join(said.split())[:200])


@dataclass(frozen=True, slots=True)
class GraderValue:
    """A grader from ``tether.reasoning.graders`` judges a terminal path (1 passed, 0 failed; no
    model call); a path still under way gets ``estimate`` when given (e.g. ``SelfEvaluation()``),
    else ``partial``.

    Args:
        grader: The grader (``tether.evals.contains("77")``, ``numeric(...)``, ...).
        expected: The expected answer, for a grader that compares with it.
        environment: The world, for a grader that checks its state.
        estimate: Values a path still under way. Default None: ``partial``.
        partial: The value of a path under way without ``estimate``.
    """

    grader: Grader
    expected: Any = None
    environment: Any = None
    estimate: ValueFunction | None = None
    partial: float = 0.5

    async def judge(self, handle: Handle, task: str, path: Trajectory) -> Judgement:
        if path.answer is None:
            if self.estimate is not None:
                return await self.estimate.judge(handle, task, path)
            return Judgement(self.partial, "under way")
        verdict = await grade(self.grader, Outcome(task, self.expected, path.answer, "finished",
                                                   path.calls, self.environment))
        return Judgement(1.0 if verdict.passed else 0.0, verdict.why)
