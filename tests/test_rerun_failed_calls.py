"""rerun() of a session whose recorded model call failed or was cancelled (issue 30): the replay
fails the call the same way, so an unchanged recipe reports no divergence — and a changed one
still does."""

from __future__ import annotations

import asyncio
from typing import Any

from tether import Agent, Budget, ModelRequest, ModelResponse, ReAct, ScriptedModel, tool
from tether.models.base import ModelError
from tether.runtime.rerun import rerun

from conftest import call


@tool
def lookup(account: str) -> str:
    """Look an account up."""
    return f"{account}: active"


class FailsOnTurn(ScriptedModel):
    """The script, except that turn ``turn`` (1-based, tool-offering turns) raises, or never
    answers (``hang``: until the time budget cancels it)."""

    def __init__(self, script: list[Any], turn: int, hang: bool = False) -> None:
        super().__init__(script, when_exhausted="done")
        self.turn, self.hang, self.calls = turn, hang, 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.tools:
            self.calls += 1
            if self.calls == self.turn:
                if self.hang:
                    await asyncio.Event().wait()  # the time budget cancels it
                raise ModelError("the provider fell over")
        return await super().complete(request)


def record(model: ScriptedModel, budget: Budget | None = None) -> tuple[Agent, list[Any], str]:
    agent = Agent(model=model, reasoning=ReAct(), tools=[lookup])
    session = agent.session("look A up", budget=budget)
    result = session.run()
    return agent, session.replay(), result.stop_reason


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def test_a_recorded_model_error_replays_as_that_error() -> None:
    agent, events, reason = record(FailsOnTurn([call("lookup", {"account": "A"})], turn=2))
    assert reason == "model_error" and "model.error" in types(events)
    report = rerun(agent, events)
    assert report.matches, report.divergences
    assert report.result is not None and report.result.stop_reason == "model_error"


def test_a_recorded_cancelled_call_replays_as_a_time_stop_with_its_wrap_up() -> None:
    agent, events, reason = record(FailsOnTurn([call("lookup", {"account": "A"})], turn=2,
                                               hang=True), Budget(max_seconds=1.0))
    assert reason == "time_budget" and "model.unmetered" in types(events)
    report = rerun(agent, events)
    assert report.matches, report.divergences
    assert report.result is not None and report.result.stop_reason == "time_budget"
    assert types(report.events).count("model.response") == types(events).count("model.response")


def test_a_changed_recipe_still_diverges_after_a_recorded_failure() -> None:
    agent, events, _ = record(FailsOnTurn([call("lookup", {"account": "A"})], turn=2))
    changed = Agent(model=agent.model, reasoning=ReAct(), tools=[lookup],
                    system_prompt="Something else entirely.")
    report = rerun(changed, events)
    assert not report.matches


def test_a_call_interrupted_then_asked_again_on_resume_is_no_divergence(tmp_path: Any) -> None:
    """Interrupted during the model call, the session resumed and asked again: the record holds
    the interrupted request (charged, no answer) and the one asked on resume. The rerun runs
    without interruption and asks once: the interrupted request is no call of its own."""
    asked = asyncio.Event()

    class Slow(ScriptedModel):
        hold = True

        async def complete(self, request: ModelRequest) -> ModelResponse:
            if Slow.hold:
                asked.set()
                await asyncio.Event().wait()
            return await super().complete(request)

    agent = Agent(model=Slow([call("lookup", {"account": "A"}), "done"]), reasoning=ReAct(),
                  tools=[lookup], store=f"sqlite:///{tmp_path / 'j.db'}")
    session = agent.session("look A up")

    async def main() -> Any:
        run = asyncio.ensure_future(session.arun())
        await asked.wait()
        session.cancel()
        return await run

    assert asyncio.run(main()).stop_reason == "interrupted"
    Slow.hold = False
    assert agent.resume(session.id).stop_reason == "finished"
    events = agent.load(session.id).replay()
    assert types(events).count("model.request") == 3  # interrupted, asked again, the answer
    report = rerun(agent, events)
    assert report.matches, report.divergences
    assert report.result is not None and report.result.stop_reason == "finished"
