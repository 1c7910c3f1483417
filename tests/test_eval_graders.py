"""Graders: each passes what it should and fails what it should; a broken grader fails."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether import ScriptedModel
from tether.evals.judge import llm_judge
from tether.reasoning import graders as g
from tether.reasoning.graders import CallRecord, Grade, Outcome, grade


def outcome(answer: str, expected: Any = None, **kw: Any) -> Outcome:
    return Outcome("q", expected, answer, kw.pop("stop_reason", "finished"), **kw)


async def passed(grader: Any, o: Outcome) -> bool:
    return (await grade(grader, o)).passed


async def test_exact_match_normalises_case_space_and_final_period() -> None:
    assert await passed(g.exact_match(), outcome("  Paris. ", "paris"))
    assert not await passed(g.exact_match("Paris"), outcome("Paris, France"))


async def test_numeric_reads_the_last_number_with_tolerance() -> None:
    assert await passed(g.numeric(), outcome("17 * 23 = 391", "391"))
    assert await passed(g.numeric(1234.5), outcome("It is 1,234.5 in total."))
    assert not await passed(g.numeric(391), outcome("391 or maybe 392"))
    assert await passed(g.numeric(100, relative=0.05), outcome("about 104"))
    assert not await passed(g.numeric(100), outcome("no idea"))
    verdict = await grade(g.numeric(), outcome("3"))  # no expected anywhere: fails, says so
    assert not verdict.passed and "no expected value" in verdict.why


async def test_regex_contains_and_finished() -> None:
    assert await passed(g.regex(r"\bA1\b"), outcome("refunded A1"))
    assert not await passed(g.regex(r"\bA1\b"), outcome("refunded A12"))
    assert await passed(g.contains("refund", "A1"), outcome("Refund of A1 done"))
    assert not await passed(g.contains("refund", "B2"), outcome("Refund of A1 done"))
    assert not await passed(g.finished(), outcome("x", stop_reason="step_budget"))


async def test_json_schema_and_pydantic_model() -> None:
    schema = {"type": "object", "properties": {"total": {"type": "number"}},
              "required": ["total"]}
    assert await passed(g.json_schema(schema), outcome('```json\n{"total": 3}\n```'))
    verdict = await grade(g.json_schema(schema), outcome('{"total": "3"}'))
    assert not verdict.passed and "total" in verdict.why
    assert not await passed(g.json_schema(schema), outcome("not json"))

    class Total(BaseModel):
        total: int

    assert await passed(g.matches_model(Total), outcome('{"total": 3}'))
    assert not await passed(g.matches_model(Total), outcome('{"sum": 3}'))


async def test_state_and_trajectory() -> None:
    calls = (CallRecord("refund", {"order": "A1", "amount": 5}, "ok", "done"),
             CallRecord("email", {"to": "x"}, "denied", "refused"))
    o = outcome("ok", calls=calls, environment={"refunded": ["A1"]})
    assert await passed(g.state(lambda env: env["refunded"] == ["A1"]), o)
    assert await passed(g.called("refund", order="A1"), o)
    assert not await passed(g.called("refund", order="B2"), o)
    assert not await passed(g.called("email"), o)  # denied: it never ran
    assert await passed(g.not_called("email"), o)
    assert await passed(g.trajectory(lambda cs: [c.tool for c in cs] == ["refund", "email"]), o)
    verdict = await grade(g.state(lambda env: True), outcome("ok"))  # no environment
    assert not verdict.passed and "environment" in verdict.why


@pytest.mark.parametrize("bad", [
    lambda o: 1 / 0, lambda o: "yes", lambda o: 1, lambda o: None])
async def test_a_grader_that_raises_or_answers_oddly_fails_the_trial(bad: Any) -> None:
    verdict = await grade(bad, outcome("x"))
    assert verdict == Grade(False, verdict.why) and verdict.why


async def test_all_of_needs_every_grader() -> None:
    both = g.all_of(g.contains("42"), g.finished())
    assert await passed(both, outcome("42"))
    assert not await passed(both, outcome("42", stop_reason="loop_detected"))


async def test_llm_judge_runs_a_governed_session_and_reads_a_strict_verdict() -> None:
    judge = llm_judge(ScriptedModel(["Looks right.\nPASS"]), "the answer is correct")
    verdict = await grade(judge, outcome("391", "391"))
    assert verdict.passed and verdict.score == 1.0 and "judge session" in verdict.why
    assert not await passed(llm_judge(ScriptedModel(["FAIL"]), "r"), outcome("x"))
    vague = await grade(llm_judge(ScriptedModel(["I think it passes"]), "r"), outcome("x"))
    assert not vague.passed and "no PASS/FAIL" in vague.why


async def test_llm_judge_within_its_own_budget() -> None:
    from tether import Budget

    judge = llm_judge(ScriptedModel(["PASS"]), "r", budget=Budget(max_tokens=5))
    verdict = await grade(judge, outcome("x" * 400))
    assert not verdict.passed and "did not finish" in verdict.why
