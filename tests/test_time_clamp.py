"""Under a time budget a call is sent no larger an output cap than the model can produce in
the time left, at the pace of its last answer (issue 30: a server that keeps generating an
answer the deadline abandoned then stops about when the deadline passes); with too little time
for even a short answer, the call is not started. Checked with a fake clock, and end to end with
bounds that hold however loaded the machine is."""

from __future__ import annotations

import pytest

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, StopReason, Usage
from tether.runtime.accounting.accountant import MIN_OUTPUT_TOKENS, Accountant, Tally
from tether.runtime.accounting.stop import Stop


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_cap_is_what_the_last_answers_pace_produces_in_the_time_left() -> None:
    clock = Clock()
    a = Accountant(Budget(max_seconds=10.0, final_turn_share=0.0), None, Tally(), clock)
    a.start_clock()
    assert a.reserve_model_call(50).max_output_tokens is None  # no pace known yet
    sent = a.now()
    clock.now += 2.0
    a.learn_rate(400, sent)  # 200 tokens a second
    assert a.output_rate == 200.0
    reservation = a.reserve_model_call(50)  # 8 s left
    assert reservation.max_output_tokens == 1600
    assert reservation.bound_by is StopReason.TIME_BUDGET
    clock.now += 7.95  # 0.05 s left: 10 tokens, too few to be worth a call
    with pytest.raises(Stop) as stopped:
        a.reserve_model_call(50)
    assert stopped.value.reason is StopReason.TIME_BUDGET and "not started" in str(stopped.value)


def test_a_short_answer_teaches_no_pace_and_no_time_budget_means_no_clamp() -> None:
    clock = Clock()
    a = Accountant(Budget(max_seconds=10.0), None, Tally(), clock)
    a.start_clock()
    sent = a.now()
    clock.now += 5.0
    a.learn_rate(MIN_OUTPUT_TOKENS - 1, sent)  # a few tokens say little about the pace
    assert a.output_rate is None
    untimed = Accountant(Budget(max_tokens=10_000), None, Tally(), clock)
    untimed.output_rate = 1.0
    assert untimed.reserve_model_call(50).bound_by is StopReason.TOKEN_BUDGET


def answer(text: str, output_tokens: int) -> ModelResponse:
    return ModelResponse(text=text, usage=Usage(20, output_tokens))


def test_end_to_end_the_second_cap_never_exceeds_the_first_answers_pace() -> None:
    # the first answer: 400 tokens after at least 0.2 s, so at most 2,000 a second; with at most
    # 1 s left, the second call's cap is at most 2,000 — whatever the machine's load
    from tether import ToolCall

    first = ModelResponse(tool_calls=(ToolCall("c1", "calculator", {"expression": "1+1"}),),
                          usage=Usage(20, 400))
    model = ScriptedModel([first, answer("2", 5)], latency=0.2)
    from tether.tools import Calculator

    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()])
    session = agent.session("1+1?", budget=Budget(max_seconds=60.0))
    result = session.run()
    caps = [e.data["max_output_tokens"] for e in session.replay() if e.type == "model.request"]
    assert result.stop_reason is StopReason.FINISHED
    assert caps[0] is None and caps[1] is not None and caps[1] <= 400 / 0.2 * 60


def test_end_to_end_too_little_time_for_an_answer_starts_no_call() -> None:
    # 16 tokens after at least 0.5 s: at most 32 a second; under a 0.9 s budget the next call
    # has at most 0.4 s: at most 12 tokens, fewer than an answer needs
    from tether import ToolCall
    from tether.tools import Calculator

    first = ModelResponse(tool_calls=(ToolCall("c1", "calculator", {"expression": "1+1"}),),
                          usage=Usage(20, MIN_OUTPUT_TOKENS))
    model = ScriptedModel([first, answer("2", 5)], latency=0.5)
    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()])
    session = agent.session("1+1?", budget=Budget(max_seconds=0.9))
    result = session.run()
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert [e.type for e in session.replay()].count("model.request") == 1
