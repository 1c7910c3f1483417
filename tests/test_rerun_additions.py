"""RERUN of a session whose tool results carry what tether itself added to them: the loop
warning on a repeated call, the note that the policy ran a fallback tool instead, the notice
that a result was cut to its size limit (or to the token budget's room).

Hostile first: any session in which the model repeated a call (the warning appended to its
result), the policy degraded a call, or a result was cut, reran with "the model request
differs": the rerun replayed the recorded result — the note already in it — as the tool's own
output, and its turn added the note again, so the rerun sent the model the warning twice (and
cut a cut result again). RERUN is meant to report only what this runtime and recipe would now
do differently.
"""

from __future__ import annotations

from typing import Any

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.rerun import rerun


@tool
def read_page(n: int) -> str:
    """Read page n of the report."""
    return f"page {n}: " + "lorem ipsum " * 20


@tool
def read_summary(n: int) -> str:
    """Read the summary of page n."""
    return f"summary of page {n}"


def call(call_id: str, name: str = "read_page", n: int = 1) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(call_id, name, {"n": n}),))


class Degrading:
    """Runs ``read_summary`` instead of ``read_page`` for page 2."""

    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "read_page" and action.arguments.get("n") == 2:
            return Decision(Effect.DEGRADE, "page 2 is long", "pages", fallback="read_summary")
        return Decision(Effect.ALLOW, "ok", "pages")


def recipe(script: list[Any], policy: Any = None) -> Agent:
    extra = {} if policy is None else {"policy": policy}
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[read_page, read_summary],
                 **extra)


def test_a_rerun_of_a_repeated_call_sends_the_warning_once_and_matches() -> None:
    script = [call("c1"), call("c2"), "done"]
    session = recipe(script).session("read page 1")
    assert session.run().answer == "done"
    results = [e.data["content"] for e in session.replay() if e.type == "tool.result"]
    assert "already made" not in results[0] and results[1].count("already made") == 1
    report = rerun(recipe(script), session.replay())
    assert report.matches, report.divergences
    sent = [e.data for e in report.events if e.type == "tool.result"]
    assert [r["content"] for r in sent] == results


def test_a_rerun_of_a_degraded_call_notes_the_fallback_once_and_matches() -> None:
    script = [call("c1", n=2), call("c2", n=2), "done"]
    session = recipe(script, Degrading()).session("read page 2")
    session.run()
    results = [e.data["content"] for e in session.replay() if e.type == "tool.result"]
    assert results[0].startswith("[tether: policy ran 'read_summary'")
    report = rerun(recipe(script, Degrading()), session.replay())
    assert report.matches, report.divergences
    assert [e.data["content"] for e in report.events if e.type == "tool.result"] == results


def test_a_rerun_that_would_not_warn_or_degrade_still_reports_it() -> None:
    script = [call("c1", n=2), call("c2", n=2), "done"]
    session = recipe(script, Degrading()).session("read page 2")
    session.run()
    report = rerun(recipe(script), session.replay())  # no policy now: nothing degraded
    assert not report.matches


@tool
def big_report() -> str:
    """The whole report."""
    return "report " + "x" * 3000


def big_calls(n: int) -> list[Any]:
    return [ModelResponse(tool_calls=(ToolCall(f"b{i}", "big_report", {}),)) for i in range(n)]


def test_a_rerun_of_a_cut_result_shows_what_the_record_showed_and_matches() -> None:
    def cut_recipe(limit: int) -> Agent:
        return Agent(model=ScriptedModel([*big_calls(2), "done"]), reasoning=ReAct(),
                     tools=[big_report], max_result_chars=limit)

    session = cut_recipe(1000).session("read the report twice")
    session.run()
    results = [e.data["content"] for e in session.replay() if e.type == "tool.result"]
    assert all("showing the first 1000 of 3007 characters" in r for r in results)
    report = rerun(cut_recipe(1000), session.replay())
    assert report.matches, report.divergences
    assert [e.data["content"] for e in report.events if e.type == "tool.result"] == results
    assert not rerun(cut_recipe(500), session.replay()).matches  # cut elsewhere now: reported


def test_a_rerun_of_a_result_cut_to_fit_the_token_budget_matches() -> None:
    def tight() -> Agent:
        return Agent(model=ScriptedModel([*big_calls(1), "done"]), reasoning=ReAct(),
                     tools=[big_report])

    session = tight().session("read the report", budget=Budget(max_tokens=900))
    session.run()
    [result] = [e.data["content"] for e in session.replay() if e.type == "tool.result"]
    assert "result truncated" in result
    report = rerun(tight(), session.replay())
    assert report.matches, report.divergences
