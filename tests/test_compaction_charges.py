"""A summary call left without an answer — cut off by the time budget, interrupted, or lost in
a crash (tests/test_compaction_hostile.py) — is charged its reservation, since the provider may
well have billed it, and is never counted a step: docs/guide/compaction.md, "a summary is not a
step"."""

from __future__ import annotations

import asyncio

from compaction_crash_app import lookup
from tether import (
    Agent,
    Budget,
    Compaction,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    Usage,
)
from tether.models.base import compacted_turns, estimate_message_tokens
from tether.runtime.record.state import fold
from tether.runtime.rerun import rerun
from tether.types import Event

TURNS = 8


class Unanswering:
    """A summariser that does not answer until told to; ``then`` runs when it is asked."""

    name = "unanswering"
    price = None
    estimate_message_tokens = staticmethod(estimate_message_tokens)

    def __init__(self, then: object = None) -> None:
        self.then = then
        self.asked = 0
        self.answer: str | None = None  # once set, it answers this

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.asked += 1
        if self.answer is not None:
            return ModelResponse(self.answer, (), Usage(50, 5), self.name)
        if callable(self.then):
            self.then()
        await asyncio.get_running_loop().create_future()  # never done
        raise AssertionError("unreachable")


def _agent(summariser: object, **kwargs: object) -> Agent:
    script = [ModelResponse(tool_calls=(ToolCall(f"c{i}", "lookup", {"n": i}),))
              for i in range(TURNS)] + ["done"]

    def respond(request: ModelRequest) -> ModelResponse | str:
        messages = request.messages
        earlier = compacted_turns(messages[2]) if len(messages) > 2 else 0
        return script[earlier + sum(m.role == "assistant" for m in messages)]

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[lookup],
                 compaction=Compaction(context_window=1200, keep_last=2,
                                       model=summariser),  # type: ignore[arg-type]
                 **kwargs)  # type: ignore[arg-type]


def _charged_at_reservation(events: list[Event]) -> dict[str, object]:
    (request,) = [e.data for e in events if e.type == "compaction.request"]
    (error,) = [e.data for e in events if e.type == "compaction.error"]
    assert error["input_tokens"] == request["reserved_input"] > 0
    assert error["output_tokens"] == request["max_output_tokens"] > 0
    assert error["cost_usd"] == request["reserved_cost_usd"]
    return dict(error)


def _steps_are_the_answered_turns(events: list[Event], steps: int) -> None:
    turns = sum(e.type in ("model.response", "model.error") for e in events)
    assert steps == turns == fold(events).tally.steps


def test_a_summary_cut_off_by_the_time_budget_is_charged_its_reservation() -> None:
    summariser = Unanswering()
    session = _agent(summariser, budget=Budget(max_seconds=3)).session("read the records")
    result = session.run()
    assert summariser.asked == 1 and result.stop_reason is StopReason.TIME_BUDGET
    events = session.replay()
    error = _charged_at_reservation(events)
    assert "time budget" in str(error["error"])
    _steps_are_the_answered_turns(events, result.spend.steps)
    assert result.usage.input_tokens >= error["input_tokens"]  # type: ignore[operator]


def test_an_interrupted_summary_is_charged_its_reservation_and_is_not_a_step() -> None:
    holder: list[object] = []
    summariser = Unanswering(then=lambda: holder[0].cancel("test"))  # type: ignore[attr-defined]
    agent = _agent(summariser)
    session = agent.session("read the records")
    holder.append(session)
    paused = session.run()
    assert paused.stop_reason is StopReason.INTERRUPTED, paused
    events = session.replay()
    assert not [e for e in events if e.type == "model.unmetered"]
    error = _charged_at_reservation(events)
    assert error["lost"] is True
    _steps_are_the_answered_turns(events, paused.spend.steps)
    # resumed, the summariser answers: the compaction happens, the run finishes, the steps
    # are still the turns the model answered, and a rerun asks for one summary, not two
    summariser.answer = "records 0-5 looked up"
    result = session.resume()
    assert result.stop_reason is StopReason.FINISHED and result.answer == "done"
    events = session.replay()
    assert next(e.data["strategy"] for e in events
                if e.type == "context.compacted") == "summarise"
    _steps_are_the_answered_turns(events, result.spend.steps)
    summariser.then = None
    report = rerun(agent, events)
    assert report.matches, report.divergences
