"""ScriptedModel: deterministic, stateless across sessions, provider-like where budgets care."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tether import Message, ModelRequest, ModelResponse, ScriptedModel, ToolCall, Usage
from tether.models import ModelError
from tether.types import ToolSpec

SPEC = ToolSpec("calculator", "calc", {"type": "object"})


def request(*assistant_turns: int, max_out: int | None = None, tools: bool = True) -> ModelRequest:
    msgs = [Message.system("s"), Message.user("u")]
    msgs += [Message.assistant(f"a{i}") for i in assistant_turns]
    return ModelRequest(tuple(msgs), (SPEC,) if tools else (), max_out)


async def test_cursor_comes_from_the_request_not_from_model_state() -> None:
    model = ScriptedModel(["first", "second"])
    assert (await model.complete(request())).text == "first"
    assert (await model.complete(request())).text == "first"  # a new session starts over
    assert (await model.complete(request(1))).text == "second"


async def test_exhausted_script_raises_a_model_error_unless_told_what_to_say() -> None:
    with pytest.raises(ModelError, match="when_exhausted"):
        await ScriptedModel(["only"]).complete(request(1))
    model = ScriptedModel(["only"], when_exhausted="fallback")
    assert (await model.complete(request(1, 2))).text == "fallback"


async def test_output_is_cut_to_max_output_tokens_like_a_provider() -> None:
    long = ModelResponse(text="x" * 4000)
    response = await ScriptedModel([long]).complete(request(max_out=20))
    assert response.usage.output_tokens == 20
    assert response.finish_reason == "length" and len(response.text) <= 80
    call = ModelResponse(tool_calls=(ToolCall("c", "calculator", {"expression": "1"}),),
                         usage=Usage(output_tokens=500))
    cut = await ScriptedModel([call]).complete(request(max_out=100))
    assert cut.tool_calls == () and cut.usage.output_tokens == 100


async def test_usage_is_deterministic_and_input_follows_the_runtime_estimate() -> None:
    model = ScriptedModel(["hello there"])
    a, b = await model.complete(request()), await model.complete(request())
    assert a.usage == b.usage and a.usage.output_tokens > 0
    estimated = ModelRequest(request().messages, (), None, input_tokens_estimate=321)
    assert (await model.complete(estimated)).usage.input_tokens == 321


async def test_tool_calls_get_ids_and_are_dropped_when_no_tools_were_offered() -> None:
    turn = ModelResponse(tool_calls=(ToolCall("", "calculator", {"expression": "1"}),))
    model = ScriptedModel([turn])
    with_tools = await model.complete(request())
    assert with_tools.tool_calls[0].id == "call_1_1"
    assert with_tools.finish_reason == "tool_calls"
    without = await model.complete(request(tools=False))
    assert without.tool_calls == () and without.finish_reason == "stop"


async def test_callable_form_decides_from_the_request() -> None:
    model = ScriptedModel(lambda req: f"saw {len(req.messages)} messages")
    assert (await model.complete(request(1))).text == "saw 3 messages"


async def test_stream_yields_deltas_then_the_response() -> None:
    model = ScriptedModel(["a fairly long answer that spans chunks"])
    items = [item async for item in model.stream(request())]
    assert isinstance(items[-1], ModelResponse)
    assert "".join(i for i in items[:-1] if isinstance(i, str)) == items[-1].text


def test_import_tether_is_lazy() -> None:
    code = ("import sys, tether; "
            "assert 'pydantic' not in sys.modules and 'yaml' not in sys.modules, "
            "sorted(m for m in sys.modules if m.startswith(('pydantic', 'yaml')))")
    subprocess.run([sys.executable, "-c", code], check=True)
