"""What the ``llama.cpp`` profile sends for a tool choice, checked against what llama.cpp's server
(llama-cpp-python, ``chatml-function-calling``) accepts: ``"auto"``, ``"none"`` or a named
function. ``"required"`` is refused there with HTTP 500, so it must never go out as is."""

from __future__ import annotations

import pytest

from tether import Message, ModelRequest
from tether.models.errors import ProviderError
from tether.models.openai import OpenAIModel
from tether.tools import Calculator
from tether.types import ToolSpec

ECHO = ToolSpec("echo", "Echo the text back.", {"type": "object",
                                                "properties": {"text": {"type": "string"}}})


def body(choice: str, *tools: ToolSpec, **kwargs: object) -> dict[str, object]:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="unused", env_file=None,
                        compat="llama.cpp", **kwargs)  # type: ignore[arg-type]
    return model.request_params(ModelRequest((Message.user("hi"),), tools, 96, None, choice))


def test_required_with_one_tool_names_that_tool_on_llama_cpp() -> None:
    sent = body("required", Calculator().spec)
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "calculator"}}
    assert sent["max_tokens"] == 96


def test_required_with_several_tools_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ProviderError, match="name the tool") as caught:
        body("required", Calculator().spec, ECHO)
    assert caught.value.kind.value == "bad_request"


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_choices_the_server_accepts_go_out_unchanged(choice: str) -> None:
    assert body(choice, Calculator().spec, ECHO)["tool_choice"] == choice


def test_other_profiles_still_send_required() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="unused", env_file=None,
                        compat="vllm")
    sent = model.request_params(ModelRequest((Message.user("hi"),), (Calculator().spec, ECHO),
                                             96, None, "required"))
    assert sent["tool_choice"] == "required"
