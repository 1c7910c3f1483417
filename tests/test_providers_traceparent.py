"""The W3C ``traceparent`` header on provider requests, read back from a real loopback server.

With telemetry on, every HTTP request a model call makes carries that call's span (the
``chat`` span ``tether.tracing.Segment.model_call`` derives from the journal); with telemetry
off, or a value that is not a valid traceparent, no such header is sent at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fake_llm_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    anthropic_stream,
    openai_completion,
    openai_stream,
)
from tether import Agent, Budget, Message, ModelRequest, ReAct
from tether.models import (
    AnthropicModel,
    Backoff,
    Fallback,
    Model,
    OpenAIModel,
    Resilient,
)
from tether.store.memory import MemoryStore
from tether.tools import Calculator
from tether.tracing import Segment, TraceParent
from tether.types import Event

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
NO_WAIT = Backoff(initial=0.0, jitter=0.0)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(answer) as s:
        yield s


def answer(rec: Recorded) -> Reply:
    """A one-text answer in the shape (JSON or stream) and dialect the request asked for."""
    streamed = bool(rec.body.get("stream"))
    if rec.path == ANTHROPIC_PATH:
        return (Reply(events=anthropic_stream(["ok"])) if streamed
                else Reply(body=anthropic_message("ok")))
    return Reply(events=openai_stream(["ok"])) if streamed else Reply(body=openai_completion("ok"))


def openai(server: FakeLLMServer, **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("compat", "openai")
    return OpenAIModel(api_key="sk-test-trace", base_url=server.url + "/v1", env_file=None,
                       **kwargs)


def anthropic(server: FakeLLMServer) -> AnthropicModel:
    return AnthropicModel("claude-3-5-haiku-latest", api_key="sk-ant-test-trace",
                          base_url=server.url, env_file=None)


MODELS = {
    "openai": openai,
    "llama.cpp": lambda s: openai(s, compat="llama.cpp"),  # what local.py's server gets
    "generic": lambda s: openai(s, compat="auto"),  # any OpenAI-compatible base URL
    "anthropic": anthropic,
}


def request(traceparent: str = "") -> ModelRequest:
    return ModelRequest((Message.system("Be brief."), Message.user("hi")), (), 50,
                        traceparent=traceparent)


async def call(model: Model, req: ModelRequest, streamed: bool) -> None:
    if streamed:
        async for _ in model.stream(req):  # type: ignore[attr-defined]
            pass
    else:
        await model.complete(req)
    await model.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", list(MODELS))
async def test_a_request_with_a_traceparent_sends_exactly_that_header(
        server: FakeLLMServer, kind: str, streamed: bool) -> None:
    await call(MODELS[kind](server), request(PARENT), streamed)
    (rec,) = server.requests
    assert rec.path == (ANTHROPIC_PATH if kind == "anthropic" else OPENAI_PATH)
    assert rec.headers["traceparent"] == PARENT
    assert "tracestate" not in rec.headers
    assert "traceparent" not in rec.body  # a header, never part of the body


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", list(MODELS))
async def test_a_request_without_one_sends_no_header(server: FakeLLMServer, kind: str,
                                                     streamed: bool) -> None:
    await call(MODELS[kind](server), request(), streamed)
    (rec,) = server.requests
    assert "traceparent" not in rec.headers and "tracestate" not in rec.headers


@pytest.mark.parametrize("bad", [
    PARENT.upper(), "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    PARENT + "\r\nx-injected: 1", PARENT + "-extra", "x" * 10_000,
])
async def test_a_malformed_traceparent_is_not_sent(server: FakeLLMServer, bad: str) -> None:
    for kind in ("openai", "anthropic"):
        await call(MODELS[kind](server), request(bad), False)
    assert len(server.requests) == 2
    for rec in server.requests:
        assert "traceparent" not in rec.headers and "x-injected" not in rec.headers


async def test_resilient_and_fallback_pass_the_header_on_every_attempt(
        server: FakeLLMServer) -> None:
    server.queue(OPENAI_PATH, Reply(503, {"error": {"message": "busy", "type": "server_error",
                                                    "param": None, "code": None}}))
    model = Fallback([Resilient(openai(server), retries=1, backoff=NO_WAIT), anthropic(server)])
    response = await model.complete(request(PARENT))
    assert response.text == "ok"
    assert [r.path for r in server.requests] == [OPENAI_PATH, OPENAI_PATH]
    assert [r.headers["traceparent"] for r in server.requests] == [PARENT, PARENT]


def sink(event: Event) -> None:  # a telemetry sink that keeps nothing
    pass


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_an_agent_with_telemetry_sends_its_model_calls_span(server: FakeLLMServer,
                                                                  kind: str) -> None:
    store = MemoryStore()
    agent = Agent(model=MODELS[kind](server), reasoning=ReAct(), tools=[Calculator()],
                  telemetry=[sink], store=store)
    result = await agent.arun("Say ok.", budget=Budget(max_tokens=20_000))
    assert result.answer == "ok"
    (rec,) = server.requests
    sent = TraceParent.parse(rec.headers["traceparent"])
    assert sent is not None and sent.sampled
    (seq,) = [e.seq for e in store.read(result.session_id) if e.type == "model.request"]
    segment = Segment(result.session_id, 1)
    assert sent.trace_id == segment.trace_id
    assert sent == segment.model_call(seq)


async def test_a_sub_agent_session_started_under_a_parent_sends_the_parents_trace(
        server: FakeLLMServer) -> None:
    store = MemoryStore()
    agent = Agent(model=openai(server), reasoning=ReAct(), telemetry=[sink], store=store)
    result = await agent.arun("Say ok.", budget=Budget(max_tokens=20_000),
                              context={"traceparent": PARENT})
    (rec,) = server.requests
    sent = TraceParent.parse(rec.headers["traceparent"])
    assert sent is not None and sent.trace_id == PARENT.split("-")[1]
    (seq,) = [e.seq for e in store.read(result.session_id) if e.type == "model.request"]
    assert sent == Segment(result.session_id, 1, TraceParent.parse(PARENT)).model_call(seq)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_an_agent_without_telemetry_sends_no_header(server: FakeLLMServer,
                                                          kind: str) -> None:
    store = MemoryStore()
    agent = Agent(model=MODELS[kind](server), reasoning=ReAct(), tools=[Calculator()],
                  store=store)
    result = await agent.arun("Say ok.", budget=Budget(max_tokens=20_000))
    assert result.answer == "ok"
    (rec,) = server.requests
    assert "traceparent" not in rec.headers
    assert not any("traceparent" in str(e.data) for e in store.read(result.session_id))
