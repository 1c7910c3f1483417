"""An LLM judge: a grader that asks a model, through the governed chokepoint, under its own budget.

Why: some answers cannot be checked by a rule ("was the refund explained politely?"). Decision:
the judge is an ordinary tether session with no tools — budgeted, journaled, auditable — never a
side call around the runtime. Its verdict is read strictly: the last line must say PASS or FAIL;
anything else, a judge that runs out of budget, or one that errs, fails the trial with the reason
and the judge's session id, so a person can open what the judge saw.
"""

from __future__ import annotations

import re
from typing import Any

from tether.reasoning.graders import Grade, Grader, Outcome

JUDGE_PROMPT = (
    "You grade an assistant's answer against a rubric. Think briefly, then end with one line "
    "that is exactly PASS or FAIL.")
_VERDICT = re.compile(r"\b(PASS|FAIL)\b\W*$")


def llm_judge(model: Any, rubric: str, *, budget: Any = None, store: Any = None,
              name: str = "llm_judge") -> Grader:
    """A grader that asks ``model`` whether the answer meets ``rubric``. ``budget`` bounds each
    judgement (default: 2,000 tokens, 3 steps); ``store`` keeps the judge's sessions."""
    from tether.reasoning.react import ReAct
    from tether.runtime.accounting.budget import Budget
    from tether.runtime.lifecycle.agent import Agent

    judge = Agent(model=model, reasoning=ReAct(), tools=(), system_prompt=JUDGE_PROMPT,
                  budget=budget or Budget(max_tokens=2_000, max_steps=3), store=store,
                  name="eval-judge")

    async def check(outcome: Outcome) -> Grade:
        expected = "" if outcome.expected is None else f"\nReference answer: {outcome.expected}"
        task = (f"Rubric: {rubric}\nQuestion: {outcome.prompt}{expected}\n"
                f"Assistant's answer:\n<<<\n{outcome.answer}\n>>>")
        result = await judge.session(task, metadata={"judges": outcome.session_id}).arun()
        if not result.finished:
            return Grade(False, f"the judge did not finish ({result.stop_reason.value}); "
                                f"judge session {result.session_id}")
        found = _VERDICT.search(result.answer.strip())
        if found is None:
            return Grade(False, f"the judge gave no PASS/FAIL verdict; judge session "
                                f"{result.session_id}")
        passed = found.group(1) == "PASS"
        return Grade(passed, f"judge session {result.session_id}", 1.0 if passed else 0.0)

    check.__qualname__ = check.__name__ = name
    return check
