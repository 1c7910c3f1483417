"""Structured output on the wire: each adapter sends the output schema in its provider's native
form — OpenAI's strict json_schema response format, llama.cpp's schema grammar, Anthropic's
forced tool — over real HTTP to a loopback server, and the answer comes back as validated
output; a server with no native form gets the schema as instructions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)
from pydantic import BaseModel

from fake_llm_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    anthropic_stream,
    openai_completion,
)
from sdk_params import assert_valid
from tether import Agent, Budget, ReAct
from tether.models import AnthropicModel, OpenAIModel, Resilient
from tether.models.anthropic_format import OUTPUT_TOOL
from tether.models.base import native_output
from tether.models.openai_format import strict_schema
from tether.tools import Calculator


class Address(BaseModel):
    city: str
    zip: str


class Customer(BaseModel):
    name: str
    address: Address


class Draft(BaseModel):
    name: str
    note: str | None = None  # optional: OpenAI's strict mode cannot take it


VALID = {"name": "Ada", "address": {"city": "Paris", "zip": "75001"}}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def openai(server: FakeLLMServer, **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("compat", "openai")
    return OpenAIModel("gpt-4o-mini", api_key="sk-test-0123456789", base_url=server.url + "/v1",
                       env_file=None, **kwargs)


def anthropic(server: FakeLLMServer) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-20250514", api_key="sk-ant-test-0123456789",
                          base_url=server.url, env_file=None)


async def test_openai_gets_a_strict_json_schema_and_the_answer_validates(
        server: FakeLLMServer) -> None:
    import json

    server.queue(OPENAI_PATH, Reply(body=openai_completion(json.dumps(VALID))))
    agent = Agent(model=openai(server), reasoning=ReAct(), output_type=Customer)
    result = await agent.arun("who?", budget=Budget(max_tokens=20_000))
    assert result.ok and result.output == Customer.model_validate(VALID)
    (body,) = server.bodies(OPENAI_PATH)
    assert_valid(body, CompletionCreateParamsNonStreaming)
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Customer"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Address"]["additionalProperties"] is False
    # the provider follows the schema itself: no instructions are added to the prompt
    assert body["messages"][0]["content"] == agent.system_prompt


async def test_a_schema_strict_mode_cannot_take_goes_out_not_strict(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(body=openai_completion('{"name": "Ada"}')))
    agent = Agent(model=openai(server), reasoning=ReAct(), output_type=Draft)
    assert (await agent.arun("x")).output == Draft(name="Ada")
    (body,) = server.bodies(OPENAI_PATH)
    assert body["response_format"]["json_schema"]["strict"] is False


async def test_the_schema_goes_with_tools_and_with_every_repair_but_not_the_wrap_up(
        server: FakeLLMServer) -> None:
    def brain(rec: Recorded) -> Reply:
        turn = sum(m["role"] == "assistant" for m in rec.body["messages"])
        if turn == 0:
            return Reply(body=openai_completion(
                None, [("call_1", "calculator", '{"expression": "2 + 2"}')]))
        return Reply(body=openai_completion('{"name": 4}'))  # never valid

    server.responder = brain
    agent = Agent(model=openai(server, compat="vllm"), reasoning=ReAct(), tools=[Calculator()],
                  output_type=Customer, output_retries=1)
    result = await agent.arun("x")
    assert result.stop_reason == "output_invalid"
    bodies = server.bodies(OPENAI_PATH)
    assert len(bodies) == 3  # the tool turn, the first answer, one repair; no wrap-up
    for body in bodies:
        assert_valid(body, CompletionCreateParamsNonStreaming)
        assert body["response_format"]["type"] == "json_schema" and body["tools"]
    assert "name: Input should be a valid string" in bodies[2]["messages"][-1]["content"]


async def test_llama_cpp_gets_its_schema_grammar_without_tools_and_instructions_with(
        server: FakeLLMServer) -> None:
    import json

    server.responder = lambda rec: Reply(body=openai_completion(json.dumps(VALID)))
    bare = Agent(model=openai(server, compat="llama.cpp"), reasoning=ReAct(),
                 output_type=Customer)
    assert (await bare.arun("x")).output is not None
    body = server.bodies(OPENAI_PATH)[-1]
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"] == Customer.model_json_schema()
    assert body["messages"][0]["content"] == bare.system_prompt
    # with tools, llama.cpp's "auto" path ignores the format: the schema goes as instructions
    tooled = Agent(model=openai(server, compat="llama.cpp"), reasoning=ReAct(),
                   tools=[Calculator()], output_type=Customer)
    assert (await tooled.arun("x")).output is not None
    body = server.bodies(OPENAI_PATH)[-1]
    assert '"title":"Customer"' in body["messages"][0]["content"]


@pytest.mark.parametrize("compat", ["generic", "ollama"])
async def test_a_server_with_no_native_form_gets_instructions_and_no_response_format(
        server: FakeLLMServer, compat: str) -> None:
    import json

    server.queue(OPENAI_PATH, Reply(body=openai_completion(
        "```json\n" + json.dumps(VALID) + "\n```")))
    agent = Agent(model=openai(server, compat=compat), reasoning=ReAct(), output_type=Customer)
    result = await agent.arun("x")
    assert result.output == Customer.model_validate(VALID)
    (body,) = server.bodies(OPENAI_PATH)
    assert "response_format" not in body
    assert "validates against this JSON schema (Customer)" in body["messages"][0]["content"]


async def test_openai_streams_with_the_schema_too(server: FakeLLMServer) -> None:
    from fake_llm_server import openai_stream

    parts = ['{"name": "Ada", ', '"address": {"city": "P", "zip": "1"}}']
    server.queue(OPENAI_PATH, Reply(events=openai_stream(parts)))
    agent = Agent(model=openai(server), reasoning=ReAct(), output_type=Customer)
    deltas = []
    async for item in agent.run_stream("x"):
        deltas.append(item)
    result = deltas[-1].result  # type: ignore[attr-defined]
    assert result.output.address.city == "P"
    (body,) = server.bodies(OPENAI_PATH)
    assert_valid(body, CompletionCreateParamsStreaming)
    assert body["response_format"]["json_schema"]["strict"] is True


async def test_anthropic_gets_a_forced_output_tool_whose_call_is_the_answer(
        server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(body=anthropic_message(
        "Here it is.", [("toolu_1", OUTPUT_TOOL, VALID)])))
    agent = Agent(model=anthropic(server), reasoning=ReAct(), output_type=Customer)
    session = agent.session("who?")
    result = await session.arun()
    assert result.ok and result.output == Customer.model_validate(VALID)
    assert result.trajectory.steps[0].tool_calls == ()  # no call of a tool that does not exist
    (body,) = server.bodies(ANTHROPIC_PATH)
    assert_valid(body, MessageCreateParamsNonStreaming)
    assert body["tools"] == [{"name": OUTPUT_TOOL, "description": body["tools"][0]["description"],
                              "input_schema": Customer.model_json_schema()}]
    assert body["tool_choice"] == {"type": "tool", "name": OUTPUT_TOOL}
    assert body["system"] == agent.system_prompt  # native: no instructions


async def test_anthropic_with_tools_must_call_one_and_repairs_go_through_the_tool(
        server: FakeLLMServer) -> None:
    def brain(rec: Recorded) -> Reply:
        turn = sum(m["role"] == "assistant" for m in rec.body["messages"])
        if turn == 0:
            return Reply(body=anthropic_message(None, [("toolu_c", "calculator",
                                                        {"expression": "2 + 2"})]))
        if turn == 1:
            return Reply(body=anthropic_message(None, [("toolu_o1", OUTPUT_TOOL,
                                                        {"name": "Ada"})]))
        return Reply(body=anthropic_message(None, [("toolu_o2", OUTPUT_TOOL, VALID)]))

    server.responder = brain
    agent = Agent(model=anthropic(server), reasoning=ReAct(), tools=[Calculator()],
                  output_type=Customer)
    result = await agent.arun("x")
    assert result.ok and result.output.address.zip == "75001"
    bodies = server.bodies(ANTHROPIC_PATH)
    assert len(bodies) == 3
    for body in bodies:
        assert_valid(body, MessageCreateParamsNonStreaming)
        assert body["tool_choice"] == {"type": "any"}
        assert [t["name"] for t in body["tools"]] == ["calculator", OUTPUT_TOOL]
    # the invalid answer went back to the model as its own text, with the repair note after
    repair = bodies[2]["messages"]
    assert repair[-2] == {"role": "assistant", "content": [
        {"type": "text", "text": '{"name": "Ada"}'}]}
    assert "address: Field required" in repair[-1]["content"][-1]["text"]


async def test_anthropic_streams_the_output_tool_as_the_answer(server: FakeLLMServer) -> None:
    server.queue(ANTHROPIC_PATH, Reply(events=anthropic_stream(
        uses=[("toolu_1", OUTPUT_TOOL, ['{"name": "Ada", "address": ',
                                        '{"city": "Paris", "zip": "75001"}}'])])))
    agent = Agent(model=anthropic(server), reasoning=ReAct(), output_type=Customer)
    items = [item async for item in agent.run_stream("x")]
    result = items[-1].result  # type: ignore[attr-defined]
    assert result.ok and result.output == Customer.model_validate(VALID)
    (body,) = server.bodies(ANTHROPIC_PATH)
    assert_valid(body, MessageCreateParamsStreaming)


def test_a_tool_named_like_the_output_tool_is_refused_before_sending(
        server: FakeLLMServer) -> None:
    from tether import tool

    @tool(name=OUTPUT_TOOL)
    def clash(x: str) -> str:
        """Clash."""
        return x

    result = Agent(model=anthropic(server), reasoning=ReAct(), tools=[clash],
                   output_type=Customer).run("x")
    assert result.stop_reason == "model_error" and "rename the tool" in result.stop_detail
    assert server.requests == []


def test_strict_schema_closes_every_object_or_declines() -> None:
    strict = strict_schema(Customer.model_json_schema())
    assert strict is not None and strict["additionalProperties"] is False
    assert strict["$defs"]["Address"]["additionalProperties"] is False
    assert strict_schema(Draft.model_json_schema()) is None
    assert strict_schema({"type": "object", "properties": {}, "additionalProperties": True,
                          "required": []}) is None


def test_wrappers_say_whether_the_schema_goes_natively(server: FakeLLMServer) -> None:
    assert native_output(anthropic(server), tools=True)
    assert native_output(Resilient(openai(server)), tools=True)
    assert native_output(openai(server, compat="llama.cpp"), tools=False)
    assert not native_output(openai(server, compat="llama.cpp"), tools=True)
    assert not native_output(openai(server, compat="generic"), tools=False)
    assert not native_output(object(), tools=False)
