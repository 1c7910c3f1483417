"""A run can force a tool on its first turn (``Agent(first_tool_choice=...)``): that turn's
request carries the choice and its journal entry says so; no later turn and no wrap-up does."""

from __future__ import annotations

import pytest

from tether import Agent, Budget, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall
from tether.store.memory import MemoryStore
from tether.tools import Calculator


class Recording(ScriptedModel):
    """A scripted model that keeps every request it was sent."""

    def __init__(self, script: list[ModelResponse | str]) -> None:
        super().__init__(script)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return await super().complete(request)


def calls(n: int) -> list[ModelResponse | str]:
    return [ModelResponse(tool_calls=(ToolCall(f"c{i}", "calculator", {"expression": "1+1"}),))
            for i in range(n)]


def test_the_first_turn_alone_carries_the_forced_choice() -> None:
    model = Recording([*calls(2), "two"])
    store = MemoryStore()
    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], store=store,
                  first_tool_choice="calculator")
    result = agent.run("add")
    assert result.stop_reason == "finished"
    assert [r.tool_choice for r in model.requests] == ["calculator", None, None]
    journaled = [e.data.get("tool_choice") for e in store.read(result.session_id)
                 if e.type == "model.request"]
    assert journaled == ["calculator", None, None]


def test_a_wrap_up_turn_carries_no_choice() -> None:
    model = Recording([*calls(3), "stopped"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()],
                  first_tool_choice="required")
    result = agent.run("add", budget=Budget(max_steps=2))
    assert result.stop_reason == "step_budget"
    assert model.requests[0].tool_choice == "required"
    assert all(r.tool_choice is None for r in model.requests[1:])
    assert not model.requests[-1].tools  # the wrap-up: no tools, so no choice either


def test_a_choice_that_names_no_tool_is_refused_when_the_agent_is_built() -> None:
    with pytest.raises(ValueError, match=r"neither one of .* nor a tool of this agent"):
        Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), tools=[Calculator()],
              first_tool_choice="calculater")
