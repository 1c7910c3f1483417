"""Sessions end to end: the quickstart, the journal, replay, subscribers, errors, concurrency."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from tether import (
    Agent,
    Budget,
    FakeModel,
    ModelResponse,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from tether.journal.chain import verify_chain
from tether.models import ModelError
from tether.runtime.record.state import fold
from tether.tools import Calculator

from conftest import call


def quick_agent() -> Agent:
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    return Agent(model=model, reasoning=ReAct(), tools=[Calculator()])


def test_quickstart_answers_and_reports_usage() -> None:
    result = quick_agent().run(
        "What is 17 * 23?", budget=Budget(max_tokens=1000, max_tool_calls=5, max_steps=10)
    )
    assert result.answer == "391"
    assert result.stop_reason is StopReason.FINISHED
    assert 0 < result.usage.total_tokens <= 1000
    assert len(result.trajectory.steps) == 2
    first = result.trajectory.steps[0]
    assert first.tool_calls[0].name == "calculator"
    assert first.results[0].content == "391" and first.results[0].status == "ok"
    assert result.spend.tool_calls == 1 and result.spend.steps == 2


def test_fake_model_is_the_scripted_model() -> None:
    assert FakeModel is ScriptedModel


async def test_async_forms_match_sync() -> None:
    agent = quick_agent()
    result = await agent.arun("What is 17 * 23?")
    session = agent.session("What is 17 * 23?")
    again = await session.arun()
    assert result.answer == again.answer == "391"
    assert await session.arun() is again  # a finished session returns its result


def test_sync_run_inside_event_loop_is_refused_clearly() -> None:
    async def inside() -> None:
        with pytest.raises(RuntimeError, match="arun"):
            quick_agent().run("x")

    asyncio.run(inside())


def test_journal_records_every_step_in_order_with_content() -> None:
    session = quick_agent().session("What is 17 * 23?")
    session.run()
    events = session.replay()
    assert [e.type for e in events] == [
        "session.start", "model.request", "model.response", "tool.decision", "tool.result",
        "model.request", "model.response", "session.end",
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert all(e.session_id == session.id for e in events)
    request = events[1].data
    assert [m["role"] for m in request["new"]] == ["system", "user"]
    assert request["new"][1]["content"] == "What is 17 * 23?"
    assert request["tools"] == ["calculator"]
    response = events[2].data["response"]
    assert response["tool_calls"][0]["arguments"] == {"expression": "17 * 23"}
    decision = events[3].data
    assert decision["decision"]["effect"] == "allow" and decision["charged"] is True
    assert events[4].data["content"] == "391"
    # the second request references the conversation so far and adds only the tool result
    second = events[5].data
    assert second["ref"] == 3 and [m["role"] for m in second["new"]] == ["tool"]
    assert events[-1].data["reason"] == "finished" and events[-1].data["answer"] == "391"


def test_journal_grows_linearly_with_steps() -> None:
    def script(n: int) -> ScriptedModel:
        turns: list[ModelResponse | str] = [
            call("calculator", {"expression": f"{i} + 1"}) for i in range(n)
        ]
        return ScriptedModel([*turns, "done"])

    sizes = []
    for n in (10, 20, 40):
        session = Agent(model=script(n), reasoning=ReAct(), tools=[Calculator()]).session("x")
        session.run()
        sizes.append(sum(len(str(e.data["new"])) for e in session.replay()
                         if e.type == "model.request"))
    # doubling the steps roughly doubles the request bytes (quadratic growth would quadruple)
    assert sizes[2] / sizes[1] < 2.5 and sizes[1] / sizes[0] < 2.5


def test_hash_chain_verifies_and_detects_tampering() -> None:
    session = quick_agent().session("What is 17 * 23?")
    session.run()
    events = session.replay()
    assert session.verify() is None and verify_chain(events) is None
    edited = list(events)
    edited[4] = dataclasses.replace(events[4], data={**events[4].data, "content": "392"})
    assert verify_chain(edited) == 5
    assert verify_chain(events[:3] + events[4:]) == 4  # deletion
    swapped = list(events)
    swapped[2], swapped[3] = swapped[3], swapped[2]
    assert verify_chain(swapped) == 3  # reordering
    checkpoint = session.checkpoint()
    assert checkpoint.seq == len(events) and checkpoint.head_hash == events[-1].hash


def test_state_is_a_fold_over_the_journal() -> None:
    session = quick_agent().session("What is 17 * 23?")
    result = session.run()
    state = fold(session.replay())
    assert state.tally.usage == result.usage
    assert state.tally.steps == result.spend.steps
    assert state.tally.tool_calls == result.spend.tool_calls
    assert state.answer == result.answer and state.stop_reason is result.stop_reason
    assert state.trajectory_steps() == result.trajectory.steps


def test_subscribers_see_every_event_and_a_raising_one_never_breaks_the_run() -> None:
    session = quick_agent().session("What is 17 * 23?")
    seen: list[str] = []
    session.events.subscribe(lambda e: seen.append(e.type))

    def broken(event: object) -> None:
        raise RuntimeError("subscriber bug")

    session.events.subscribe(broken)
    result = session.run()
    assert result.answer == "391"
    types = [e.type for e in session.replay()]
    assert seen == types  # every event, in order, the recorded failures included
    assert seen[0] == "session.start" and "session.end" in seen
    errors = [e for e in session.replay() if e.type == "subscriber.error"]
    assert errors and "subscriber bug" in errors[0].data["error"]
    assert types.count("session.end") == 1
    assert session.verify() is None


def test_unsubscribe_stops_delivery() -> None:
    session = quick_agent().session("x")
    seen: list[int] = []
    unsubscribe = session.events.subscribe(lambda e: seen.append(e.seq))
    unsubscribe()
    session.run()
    assert seen == []


def test_model_error_stops_with_model_error_and_is_journaled() -> None:
    def explode(request: object) -> str:
        raise ModelError("provider down")

    agent = Agent(model=ScriptedModel(explode), reasoning=ReAct())
    session = agent.session("x")
    result = session.run()
    assert result.stop_reason is StopReason.MODEL_ERROR
    assert "provider down" in result.stop_detail and "provider down" in result.notice
    errors = [e for e in session.replay() if e.type == "model.error"]
    assert len(errors) == 1 and "provider down" in errors[0].data["error"]
    assert session.replay()[-1].data["reason"] == "model_error"


def test_exhausted_script_is_a_model_error_not_a_crash() -> None:
    agent = Agent(model=ScriptedModel([call("calculator", {"expression": "1+1"})]),
                  reasoning=ReAct(), tools=[Calculator()])
    result = agent.run("x")
    assert result.stop_reason is StopReason.MODEL_ERROR
    assert "when_exhausted" in result.stop_detail


def test_model_returning_garbage_is_a_model_error() -> None:
    class Garbage(ScriptedModel):
        async def complete(self, request: object) -> ModelResponse:
            return "not a response"  # type: ignore[return-value]

    result = Agent(model=Garbage(["x"]), reasoning=ReAct()).run("x")
    assert result.stop_reason is StopReason.MODEL_ERROR


def test_text_and_tool_calls_in_one_response_are_both_kept() -> None:
    both = ModelResponse(text="Let me compute.",
                         tool_calls=(ToolCall("c1", "calculator", {"expression": "2*3"}),))
    session = Agent(model=ScriptedModel([both, "6"]), reasoning=ReAct(),
                    tools=[Calculator()]).session("x")
    result = session.run()
    assert result.trajectory.steps[0].text == "Let me compute."
    assert result.trajectory.steps[0].results[0].content == "6"
    response = next(e for e in session.replay() if e.type == "model.response")
    assert response.data["response"]["text"] == "Let me compute."


def test_agent_is_a_stateless_recipe_shared_by_concurrent_sessions() -> None:
    agent = quick_agent()
    before = repr(agent)

    async def many() -> list[str]:
        results = await asyncio.gather(*(agent.arun("What is 17 * 23?") for _ in range(200)))
        return [r.answer for r in results]

    assert asyncio.run(many()) == ["391"] * 200
    assert repr(agent) == before
    assert dataclasses.is_dataclass(agent)
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.name = "changed"  # type: ignore[misc]


def test_same_agent_gives_same_result_each_time() -> None:
    agent = quick_agent()
    first, second = agent.run("q"), agent.run("q")
    assert (first.answer, first.usage, first.trajectory) == (
        second.answer, second.usage, second.trajectory)
    assert first.session_id != second.session_id


def test_bad_recipe_and_task_fail_where_made() -> None:
    with pytest.raises(TypeError, match="Model"):
        Agent(model=object(), reasoning=ReAct())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="run"):
        Agent(model=ScriptedModel(["x"]), reasoning=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="evaluate"):
        Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), policy=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task"):
        quick_agent().session("   ")


def test_cancellation_is_recorded() -> None:
    agent = Agent(model=ScriptedModel(["slow"], latency=5), reasoning=ReAct())
    session = agent.session("x")

    async def cancel_it() -> None:
        task = asyncio.create_task(session.arun())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    last = session.replay()[-1]  # a pause, not an end: the run can be resumed
    assert last.type == "session.paused" and last.data["reason"] == "interrupted"
    assert session.paused


def test_strategy_bug_is_journaled_and_raised() -> None:
    class Buggy:
        async def run(self, handle: object) -> str:
            raise KeyError("oops")

    session = Agent(model=ScriptedModel(["x"]), reasoning=Buggy()).session("x")
    with pytest.raises(KeyError):
        session.run()
    assert session.replay()[-1].type == "session.error"


def test_the_answer_is_the_models_words_and_the_notice_tethers() -> None:
    """A run stopped by its budget: the wrap-up the model gave is the answer, untouched; why the
    run stopped is the notice. ``ok`` is the common check."""
    script = [call("calculator", {"expression": "1+1"}), call("calculator", {"expression": "2"}),
              "my best so far: 2"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[Calculator()])
    result = agent.run("add", budget=Budget(max_steps=3))
    assert result.stop_reason == "step_budget" and not result.ok
    assert result.answer == "my best so far: 2"
    assert result.notice.startswith("[tether] The run stopped: step_budget")
    done = Agent(model=ScriptedModel(["2"]), reasoning=ReAct()).run("add")
    assert done.ok and done.notice == "" and done.answer == "2"


def test_a_journal_from_before_notices_reads_its_tether_answer_as_the_notice() -> None:
    session = Agent(model=ScriptedModel(["x"]), reasoning=ReAct()).session(
        "t", budget=Budget(max_tokens=10))
    session.run()
    *before, end = session.replay()
    old = {k: v for k, v in end.data.items() if k != "notice"}  # as journals were written
    state = fold([*before, dataclasses.replace(end, data={**old, "answer": end.data["notice"]})])
    assert state.answer == "" and state.notice.startswith("[tether] The run stopped")
    state = fold([*before, dataclasses.replace(end, data={**old, "answer": "model's words"})])
    assert state.answer == "model's words" and state.notice == ""
