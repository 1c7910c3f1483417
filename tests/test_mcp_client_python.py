"""The MCP client against a Python MCP server (official SDK), over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_servers import open_py, py_server
from tether import Agent, Decision, Effect, ReAct, ScriptedModel, StopReason
from tether.mcp import MCPToolset, connect

from conftest import call

ENV = {"TETHER_TEST_PAGE_SIZE": "4", "TETHER_TEST_FILLER": "5"}
TOOLS = {"add", "fail", "hang", "freeze", "die", "noisy", "fetch", "wipe", "picture", "mutate",
         *(f"filler_{n}" for n in range(5))}


@pytest.fixture(scope="module", params=["stdio", "http"])
def toolset(request: pytest.FixtureRequest) -> Iterator[MCPToolset]:
    """One connection per transport, shared by the tests that leave the server running."""
    with open_py(request.param, env=ENV, call_timeout=5) as tools:
        yield tools


def run_agent(tools: MCPToolset, *turns: Any, policy: Any = None, **kwargs: Any) -> Any:
    model = ScriptedModel([*turns, "done"])
    extra = {} if policy is None else {"policy": policy}
    agent = Agent(model=model, reasoning=ReAct(), tools=[*tools], **extra, **kwargs)
    session = agent.session("use the MCP tools")
    return session.run(), session


def test_discovery_follows_every_page(toolset: MCPToolset) -> None:
    # 15 tools in pages of 4: four tools/list requests, all of them followed
    assert {t.mcp_name for t in toolset} == TOOLS
    assert len(toolset) == 15
    assert toolset.get("py_add") is toolset.get("add")
    spec = toolset.get("add").spec  # type: ignore[union-attr]
    assert spec.name == "py_add" and spec.description == "Add two integers."
    assert spec.parameters["required"] == ["a", "b"]


def test_agent_run_calls_the_mcp_tool(toolset: MCPToolset) -> None:
    result, session = run_agent(toolset, call("py_add", {"a": 17, "b": 25}))
    assert result.stop_reason is StopReason.FINISHED
    (tool_result,) = result.trajectory.tool_results
    assert (tool_result.status, tool_result.content) == ("ok", "42")
    assert session.verify() is None


def test_async_agent_run_in_another_loop(toolset: MCPToolset) -> None:
    agent = Agent(model=ScriptedModel([call("py_add", {"a": 1, "b": 2}), "done"]),
                  reasoning=ReAct(), tools=[*toolset])

    async def main() -> Any:
        return await agent.arun("add")

    (tool_result,) = asyncio.run(main()).trajectory.tool_results
    assert tool_result.content == "3"


def test_schema_mismatch_is_refused_before_the_server(toolset: MCPToolset) -> None:
    result, _ = run_agent(toolset, call("py_add", {"a": "seventeen", "b": 1}),
                          call("py_add", {"b": 1}))
    bad_type, missing = result.trajectory.tool_results
    assert bad_type.status == "rejected" and "field 'a'" in bad_type.content
    assert missing.status == "rejected" and "field 'a'" in missing.content
    assert "required" in missing.content


def test_is_error_becomes_an_error_result_with_the_servers_text(toolset: MCPToolset) -> None:
    result, _ = run_agent(toolset, call("py_fail", {"message": "disk quota exceeded"}))
    (tool_result,) = result.trajectory.tool_results
    assert tool_result.status == "error"
    assert "MCPToolError" in tool_result.content
    assert "disk quota exceeded" in tool_result.content


def test_annotations_are_hints_from_an_untrusted_server(toolset: MCPToolset) -> None:
    add, fetch, wipe = (toolset.get(n) for n in ("add", "fetch", "wipe"))
    assert add is not None and fetch is not None and wipe is not None
    # add claims read-only and closed-world, but the server is not trusted
    assert (add.meta.side_effect, add.meta.egress, add.meta.output_trust) == (
        True, True, "untrusted")
    assert add.meta.risk == "high" and not add.meta.idempotent  # cannot lower caution
    assert wipe.meta.risk == "high"
    assert add.meta.tags == frozenset({"mcp", "py"}) and add.meta.timeout == 5


def test_image_content_is_summarised_not_dumped(toolset: MCPToolset) -> None:
    result, _ = run_agent(toolset, call("py_picture", {}))
    (tool_result,) = result.trajectory.tool_results
    assert tool_result.content.startswith("a tiny picture\n[image content: image/png")
    assert "iVBOR" not in tool_result.content and "not shown" in tool_result.content


class Watch:
    """A policy that allows everything and records whether the session was tainted."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool]] = []

    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
        self.seen.append((action.tool, context.tainted))
        return Decision(Effect.ALLOW, "ok", "watch")


def test_open_world_output_taints_the_session() -> None:
    watch = Watch()
    with open_py("stdio", trusted=True) as tools:
        add, fetch = tools.get("add"), tools.get("fetch")
        assert add is not None and fetch is not None
        # trusted: add's read-only, closed-world hints are believed; fetch is open-world
        assert (add.meta.side_effect, add.meta.egress, add.meta.output_trust,
                add.meta.risk, add.meta.idempotent) == (False, False, "trusted", "low", True)
        assert (fetch.meta.side_effect, fetch.meta.egress, fetch.meta.output_trust) == (
            False, True, "untrusted")
        result, session = run_agent(tools, call("py_add", {"a": 1, "b": 1}),
                                    call("py_fetch", {"url": "https://news.example"}),
                                    call("py_add", {"a": 2, "b": 2}), policy=watch)
    assert result.stop_reason is StopReason.FINISHED
    assert watch.seen == [("py_add", False), ("py_fetch", False), ("py_add", True)]
    marks = [e.data.get("untrusted", False) for e in session.replay() if e.type == "tool.result"]
    assert marks == [False, True, False]


def test_any_output_of_an_untrusted_server_taints(toolset: MCPToolset) -> None:
    watch = Watch()
    run_agent(toolset, call("py_add", {"a": 1, "b": 1}), call("py_add", {"a": 2, "b": 2}),
              policy=watch)
    assert watch.seen == [("py_add", False), ("py_add", True)]


def test_policy_deny_never_reaches_the_server(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"

    class NoDestruction:
        def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
            if action.tool == "py_wipe":
                return Decision(Effect.DENY, "destructive MCP tools are off", "no-destruction")
            return Decision(Effect.ALLOW, "ok", "no-destruction")

    with connect(py_server(env={"TETHER_TEST_CALL_LOG": str(log)})) as tools:
        result, _ = run_agent(tools, call("py_wipe", {"path": "/"}),
                              call("py_add", {"a": 1, "b": 1}), policy=NoDestruction())
    denied, allowed = result.trajectory.tool_results
    assert denied.status == "denied" and "destructive MCP tools are off" in denied.content
    assert allowed.status == "ok"
    assert log.read_text().splitlines() == ["add {'a': 1, 'b': 1}"]  # wipe never arrived


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_hung_call_times_out_on_time(transport: str) -> None:
    with open_py(transport, call_timeout=0.5) as tools:
        start = time.monotonic()
        result, _ = run_agent(tools, call("py_hang", {}), call("py_add", {"a": 2, "b": 3}))
        elapsed = time.monotonic() - start
    hung, after = result.trajectory.tool_results
    assert hung.status == "timeout" and "timed out after 0.5s" in hung.content
    assert after.status == "ok" and after.content == "5"  # the session is still usable
    assert elapsed < 3
