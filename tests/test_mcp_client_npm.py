"""The MCP client against the reference servers from npm: server-filesystem and server-everything.

They are installed from ``tests/mcp/package-lock.json`` (``make mcp-deps``); the tests skip only
when node or npm is missing, and under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_servers import free_port, http_server, npm_bin
from tether import Agent, Decision, Effect, ReAct, ScriptedModel, StopReason
from tether.mcp import MCPServer, MCPToolset, connect

from conftest import call


class NoWrites:
    """Deny filesystem writes by name; allow the rest."""

    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
        if action.tool in ("fs_write_file", "fs_edit_file", "fs_move_file"):
            return Decision(Effect.DENY, "the agent may only read files", "no-writes")
        return Decision(Effect.ALLOW, "ok", "no-writes")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("the launch code is 0000\n")
    return tmp_path


def filesystem(root: Path, **options: Any) -> MCPToolset:
    return connect(MCPServer.stdio("fs", npm_bin("mcp-server-filesystem"), root, **options))


def test_filesystem_read_through_an_agent_and_denied_write(files: Path) -> None:
    target = files / "out.txt"
    model = ScriptedModel([call("fs_read_text_file", {"path": str(files / "notes.txt")}),
                           call("fs_write_file", {"path": str(target), "content": "x"}),
                           "done"])
    with filesystem(files) as fs:
        agent = Agent(model=model, reasoning=ReAct(), tools=[*fs], policy=NoWrites())
        session = agent.session("read my notes")
        result = session.run()
    read, write = result.trajectory.tool_results
    assert (read.status, read.content) == ("ok", "the launch code is 0000\n")
    assert write.status == "denied" and "may only read files" in write.content
    assert not target.exists()  # the denied call never reached the server
    assert result.stop_reason is StopReason.FINISHED and session.verify() is None


def test_filesystem_allowed_write_and_server_side_refusal(files: Path) -> None:
    target = files / "out.txt"
    with filesystem(files) as fs:
        written = asyncio.run(fs.invoke("write_file", {"path": str(target), "content": "hi"}))
        assert "Successfully wrote" in written and target.read_text() == "hi"
        agent = Agent(model=ScriptedModel([call("fs_read_text_file", {"path": "/etc/passwd"}),
                                           "done"]), reasoning=ReAct(), tools=[*fs])
        (outside,) = agent.run("read it").trajectory.tool_results
    assert outside.status == "error" and "MCPToolError" in outside.content
    assert "Access denied" in outside.content and "outside allowed directories" in outside.content


def test_filesystem_annotations_untrusted_and_trusted(files: Path) -> None:
    with filesystem(files) as fs:
        read, write = fs.get("read_text_file"), fs.get("write_file")
        assert read is not None and write is not None
        assert read.meta.side_effect and read.meta.output_trust == "untrusted"
        assert write.meta.side_effect and write.meta.risk == "high"
        assert {t.name for t in fs} >= {"fs_read_text_file", "fs_list_directory"}
    with filesystem(files, trusted=True, prefix="files") as fs:
        read, write, mkdir = (fs.get(n) for n in ("read_text_file", "write_file",
                                                  "create_directory"))
        assert read is not None and write is not None and mkdir is not None
        assert read.name == "files_read_text_file"
        assert (read.meta.side_effect, read.meta.egress, read.meta.output_trust,
                read.meta.risk) == (False, False, "trusted", "low")
        assert (write.meta.side_effect, write.meta.risk, write.meta.idempotent) == (
            True, "high", True)
        assert (mkdir.meta.side_effect, mkdir.meta.risk) == (True, "medium")
        assert fs.stderr_tail().startswith("Secure MCP Filesystem Server running on stdio")


@pytest.fixture(scope="module", params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> Iterator[MCPToolset]:
    exe = npm_bin("mcp-server-everything")
    if request.param == "stdio":
        with connect(MCPServer.stdio("every", exe, "stdio", call_timeout=10)) as tools:
            yield tools
        return
    port = free_port()
    with http_server([exe, "streamableHttp"], port, env={"PORT": str(port)}), connect(
            MCPServer.http("every", f"http://127.0.0.1:{port}/mcp", call_timeout=10)) as tools:
        yield tools


def test_everything_echo_through_an_agent(everything: MCPToolset) -> None:
    model = ScriptedModel([call("every_echo", {"message": "hello MCP"}),
                           call("every_get-sum", {"a": 2, "b": 40}), "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[*everything])
    echo, total = agent.run("echo").trajectory.tool_results
    assert (echo.status, echo.content) == ("ok", "Echo: hello MCP")
    assert total.status == "ok" and "42" in total.content


def test_everything_schema_gate_names_the_field(everything: MCPToolset) -> None:
    agent = Agent(model=ScriptedModel([call("every_echo", {"msg": "x"}), "done"]),
                  reasoning=ReAct(), tools=[*everything])
    (rejected,) = agent.run("echo").trajectory.tool_results
    assert rejected.status == "rejected" and "field 'message'" in rejected.content


def test_everything_image_is_summarised(everything: MCPToolset) -> None:
    text = asyncio.run(everything.invoke("get-tiny-image", {}))
    assert "[image content: image/png" in text and "not shown" in text
    assert "iVBOR" not in text


def test_everything_annotations(everything: MCPToolset) -> None:
    echo, gzip = everything.get("echo"), everything.get("gzip-file-as-resource")
    assert echo is not None and gzip is not None
    assert echo.meta.tags == frozenset({"mcp", "every"})
    assert echo.meta.side_effect and echo.meta.risk == "high"  # untrusted: hints not believed
    assert gzip.meta.egress and gzip.meta.output_trust == "untrusted"
    assert len(everything) >= 10
