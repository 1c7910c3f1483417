"""The MCP client propagates a call's span to the server in the ``tools/call`` ``_meta``.

A real Python MCP server (official SDK) answers the ``meta`` tool with the ``_meta`` its own
request carried, so these tests read what arrived on the far side of stdio and HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_servers import open_py
from tether import Agent, ReAct, ScriptedModel
from tether.mcp import MCPToolset
from tether.store.memory import MemoryStore
from tether.tracing import Segment
from tether.types import Event

from conftest import call

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(scope="module", params=["stdio", "http"])
def toolset(request: pytest.FixtureRequest) -> Iterator[MCPToolset]:
    with open_py(request.param, env={"TETHER_TEST_META": "1"}, call_timeout=10) as tools:
        yield tools


def sink(event: Event) -> None:
    pass


def meta_seen(tools: MCPToolset, **agent: Any) -> tuple[dict[str, Any], str, str]:
    """Run an agent that calls ``py_meta`` once: the ``_meta`` the server saw, the session id,
    and the call's id."""
    model = ScriptedModel([call("py_meta", {}), "done"])
    result = Agent(model=model, reasoning=ReAct(), tools=[*tools], **agent).run("trace it")
    (tool_result,) = result.trajectory.tool_results
    assert tool_result.status == "ok", tool_result.content
    return json.loads(tool_result.content), result.session_id, tool_result.call_id


def test_with_telemetry_the_tool_calls_span_goes_in_meta(toolset: MCPToolset) -> None:
    meta, session_id, call_id = meta_seen(toolset, telemetry=[sink])
    assert meta["traceparent"] == Segment(session_id, 1).tool_call(call_id).header()
    assert "tracestate" not in meta


def test_a_sub_agent_like_session_under_a_parent_sends_the_parents_trace(
        toolset: MCPToolset) -> None:
    model = ScriptedModel([call("py_meta", {}), "done"])
    store = MemoryStore()
    result = Agent(model=model, reasoning=ReAct(), tools=[*toolset], telemetry=[sink],
                   store=store).run("trace it", context={"traceparent": PARENT})
    (tool_result,) = result.trajectory.tool_results
    sent = json.loads(tool_result.content)["traceparent"]
    assert sent.split("-")[1] == PARENT.split("-")[1]  # the caller's trace, a span of ours
    assert sent.split("-")[2] != PARENT.split("-")[2]


def test_without_telemetry_no_traceparent_is_sent(toolset: MCPToolset) -> None:
    meta, _, _ = meta_seen(toolset)
    assert "traceparent" not in meta and "tracestate" not in meta


@pytest.mark.parametrize("bad", [
    PARENT.upper(), "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "ff-" + PARENT[3:],
    PARENT + "-x", "x" * 10_000,
])
async def test_a_malformed_traceparent_is_never_sent(toolset: MCPToolset, bad: str) -> None:
    meta = json.loads(await toolset.invoke("meta", {}, traceparent=bad))
    assert "traceparent" not in meta


async def test_invoke_sends_a_valid_one_as_given(toolset: MCPToolset) -> None:
    meta = json.loads(await toolset.invoke("meta", {}, traceparent=PARENT))
    assert meta["traceparent"] == PARENT


AMBIENT = "00-11111111111111111111111111111111-2222222222222222-01"


@pytest.mark.parametrize("ours", ["", PARENT], ids=["telemetry-off", "telemetry-on"])
async def test_an_ambient_opentelemetry_context_is_never_what_goes_out(
        toolset: MCPToolset, ours: str) -> None:
    # the SDK injects whatever OpenTelemetry context is current (a proxied call runs under the
    # one its own client sent); tether sends its own span or nothing, never that one
    from opentelemetry import context
    from opentelemetry.propagate import extract

    token = context.attach(extract({"traceparent": AMBIENT, "tracestate": "k=v"}))
    try:
        meta = json.loads(await toolset.invoke("meta", {}, traceparent=ours))
    finally:
        context.detach(token)
    assert meta.get("traceparent") == (ours or None)
    assert "tracestate" not in meta
