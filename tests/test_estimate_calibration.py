"""The input estimate is calibrated by the provider's own counts: once a provider has counted the
conversation up to its last answer, only what was added since is estimated. A provider whose
tokenizer counts far fewer tokens than tether's pessimistic estimate (SmolLM2 behind llama.cpp:
790 real against 1,353 estimated) no longer stops a run long before its budget is spent — and a
calibrated reservation still covers every call: no overrun, whatever the ratio."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import Agent, Budget, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall
from tether.models.base import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_message_tokens,
    estimate_text_tokens,
)
from tether.store.memory import MemoryStore
from tether.tools import Calculator
from tether.types import Message, Usage


class Tokenizer(ScriptedModel):
    """A scripted model whose provider counts ``ratio`` of tether's estimate of the input."""

    def __init__(self, script: list[ModelResponse | str], ratio: float) -> None:
        super().__init__(script)
        self.ratio = ratio

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await super().complete(request)
        counted = math.ceil((request.input_tokens_estimate or 0) * self.ratio)
        return replace(response, usage=Usage(counted, response.usage.output_tokens))


def script(turns: int, pad: int) -> list[ModelResponse | str]:
    return [*[ModelResponse("x" * pad, (ToolCall(f"c{i}", "calculator",
                                                 {"expression": f"{i}+1"}),))
              for i in range(turns)], "done"]


def run(turns: int, pad: int, ratio: float, budget: Budget) -> tuple[Any, list[dict[str, Any]]]:
    store = MemoryStore()
    result = Agent(model=Tokenizer(script(turns, pad), ratio), reasoning=ReAct(),
                   tools=[Calculator()], store=store).run("count", budget=budget)
    return result, [dict(e.data) for e in store.read(result.session_id)]


def test_a_thrifty_tokenizer_lets_the_run_use_its_budget() -> None:
    """At 0.55 of the estimate, the run needs 7,475 tokens: calibrated reservations let it finish
    within 9,000, where the uncalibrated estimate (every past message charged at the pessimistic
    rate) stopped it with ~1,500 tokens unspent, thinking the next call needed ~1,580."""
    result, events = run(12, 400, 0.55, Budget(max_tokens=9_000))
    assert result.stop_reason == "finished" and result.usage.total_tokens == 7475
    requests = [e for e in events if "reserved_input" in e and "new" in e]
    responses = [e for e in events if "response" in e]
    for request, response in zip(requests[1:], responses[1:], strict=True):
        reported = response["response"]["usage"]["input_tokens"]
        assert reported <= request["reserved_input"] <= 1.6 * reported + 200  # close, and above


@settings(max_examples=40, deadline=None)
@given(turns=st.integers(1, 8), pad=st.integers(0, 600), ratio=st.floats(0.2, 1.0),
       limit=st.integers(400, 20_000))
def test_calibrated_reservations_cover_every_call(turns: int, pad: int, ratio: float,
                                                  limit: int) -> None:
    result, events = run(turns, pad, ratio, Budget(max_tokens=limit))
    assert [e for e in events if "reported" in e and "reserved" in e] == []  # no overrun
    assert result.usage.total_tokens <= limit


def test_a_resumed_session_reserves_what_its_lost_request_added(tmp_path: Any) -> None:
    """The process died waiting for the model: the lost request's messages (a large tool result)
    are in the conversation after the provider's last counted answer. The resumed call is
    reserved for them too — not for the answer alone — so it does not overrun."""
    from tether.tools import tool

    @tool
    def fetch() -> str:
        """Fetch a large document."""
        return "word " * 2000

    class DiesOnce(Tokenizer):
        asked = 0

        async def complete(self, request: ModelRequest) -> ModelResponse:
            self.asked += 1
            if self.asked == 2:  # the second call: the tool's result is in its request
                raise SystemExit("the worker died waiting for the model")
            return await super().complete(request)

    def agent(model: Tokenizer) -> Agent:
        return Agent(model=model, reasoning=ReAct(), tools=[fetch],
                     store=f"sqlite:///{tmp_path / 'r.db'}")

    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall("c1", "fetch", {}),)), "summarised"]
    crashing = DiesOnce(script, ratio=1.0)
    session = agent(crashing).session("summarise", budget=Budget(max_tokens=20_000))
    with pytest.raises(SystemExit):  # the worker dies; the request is in the journal
        session.run()
    resumed = Tokenizer(script, ratio=1.0)  # it answers by the turn the conversation is at
    result = agent(resumed).resume(session.id)
    assert result.ok and result.answer == "summarised"
    events = [dict(e.data) for e in agent(resumed).load(session.id).replay()]
    assert [e for e in events if "reported" in e and "reserved" in e] == []  # no overrun
    last_request = [e for e in events if "reserved_input" in e and "new" in e][-1]
    last_response = [e for e in events if "response" in e][-1]
    assert last_request["reserved_input"] >= last_response["response"]["usage"]["input_tokens"]


MESSAGES = st.lists(st.builds(
    lambda role, text, calls: Message(role, text, tuple(
        ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls))),
    st.sampled_from(["system", "user", "assistant", "tool"]), st.text(max_size=40),
    st.lists(st.tuples(st.text(min_size=1, max_size=8),
                       st.one_of(st.text(max_size=20),
                                 st.dictionaries(st.text(max_size=4), st.integers()))),
             max_size=2)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(messages=MESSAGES)
def test_a_message_is_estimated_as_its_texts_are(messages: list[Message]) -> None:
    """``estimate_message_tokens`` (its text estimate inlined: it runs for every message of a
    thread's history) counts what ``estimate_text_tokens`` counts of the content and of each
    call, plus the overheads, for any contents and calls; ``ScriptedModel`` bills with it."""
    def reference(message: Message) -> int:
        n = MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(message.content)
        for call in message.tool_calls:
            args = call.arguments
            n += MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(call.name) + \
                estimate_text_tokens(args if isinstance(args, str) else repr(args))
        return n

    assert [estimate_message_tokens(m) for m in messages] == list(map(reference, messages))
    assert ScriptedModel([]).estimate_message_tokens is estimate_message_tokens
