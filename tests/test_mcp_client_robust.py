"""The MCP client survives servers that die, hang, freeze, flood stderr or never start."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest

from mcp_servers import PY_SERVER, free_port, open_py, py_server
from tether import Agent, ReAct, ScriptedModel, StopReason
from tether.mcp import MCPConnectionError, MCPServer, MCPToolset, connect

from conftest import call


def run_agent(tools: MCPToolset, *turns: Any) -> Any:
    agent = Agent(model=ScriptedModel([*turns, "done"]), reasoning=ReAct(), tools=[*tools])
    return agent.run("go")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_that_exits_mid_call_gives_a_clear_error(transport: str) -> None:
    with open_py(transport, call_timeout=10) as tools:
        start = time.monotonic()
        result = run_agent(tools, call("py_die", {"code": 3}), call("py_add", {"a": 1, "b": 2}))
        elapsed = time.monotonic() - start
        died, after = result.trajectory.tool_results
    assert elapsed < 5  # not the 10 s call timeout: the closed connection fails the call
    for r in (died, after):
        assert r.status == "error" and "MCPConnectionError" in r.content
        assert "is not connected" in r.content and "reconnect()" in r.content
    if transport == "stdio":  # the server's last words are in the error
        assert "fatal: simulated crash in die()" in died.content
        assert "its process exited" in after.content


def test_reconnect_after_the_server_died() -> None:
    with open_py("stdio") as tools:
        with pytest.raises(MCPConnectionError):
            asyncio.run(tools.invoke("die", {}))
        tools.reconnect()
        assert asyncio.run(tools.invoke("add", {"a": 2, "b": 2})) == "4"


def test_a_frozen_server_times_out_on_time_and_closes_within_bounds() -> None:
    # freeze blocks the server's event loop: it answers nothing, not even the cancellation,
    # and ignores its stdin closing; the SDK's shutdown then terminates it
    tools = connect(py_server(call_timeout=0.5, close_timeout=8)).open()
    try:
        start = time.monotonic()
        result = run_agent(tools, call("py_freeze", {}))
        (frozen,) = result.trajectory.tool_results
        assert frozen.status == "timeout" and time.monotonic() - start < 2.5
        assert result.stop_reason is StopReason.FINISHED
    finally:
        start = time.monotonic()
        tools.close()
        closed_in = time.monotonic() - start
    assert closed_in < 8


def test_close_never_hangs_past_close_timeout(tmp_path: Any) -> None:
    pid_file = tmp_path / "server.pid"
    tools = connect(py_server(call_timeout=0.3, close_timeout=1,
                              env={"TETHER_TEST_PID_FILE": str(pid_file)})).open()
    pid = int(pid_file.read_text())
    with pytest.raises(TimeoutError):
        asyncio.run(asyncio.wait_for(tools.invoke("freeze", {}), 0.3))
    start = time.monotonic()
    tools.close()
    assert time.monotonic() - start < 1 + 5  # close_timeout, then abandoned — and killed
    assert _gone(pid), f"the frozen server {pid} outlived close()"


def _gone(pid: int, wait: float = 5.0) -> bool:
    """Whether process ``pid`` has exited (a zombie our process has not reaped counts)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):  # gone, even between open and read
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("kbytes", [1024])
def test_stderr_noise_at_startup_and_in_calls_does_not_block(kbytes: int) -> None:
    # far more than a pipe holds (64 KiB): an undrained stderr would block the server
    env = {"TETHER_TEST_NOISE_KB": str(kbytes)}
    with open_py("stdio", env=env, call_timeout=10) as tools:
        result = run_agent(tools, call("py_noisy", {"kbytes": kbytes}),
                           call("py_add", {"a": 1, "b": 1}))
        noisy, add = result.trajectory.tool_results
        assert (noisy.status, noisy.content) == ("ok", f"wrote {kbytes} KiB of noise")
        assert add.content == "2"
        tail = tools.stderr_tail()
    assert "noise" in tail and len(tail) <= 1501  # only the tail is kept


def test_a_command_that_does_not_exist() -> None:
    with pytest.raises(MCPConnectionError) as caught:
        connect(MCPServer.stdio("ghost", "/nonexistent/mcp-server")).open()
    message = str(caught.value)
    assert "could not connect to MCP server 'ghost'" in message
    assert "/nonexistent/mcp-server" in message and "check the command" in message


def test_a_server_that_exits_at_start_shows_its_stderr(tmp_path: Any) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import sys\nprint('config error: API_TOKEN is not set', file=sys.stderr)\n"
                      "sys.exit(2)\n")
    with pytest.raises(MCPConnectionError) as caught:
        connect(MCPServer.stdio("broken", sys.executable, script, connect_timeout=10)).open()
    assert "config error: API_TOKEN is not set" in str(caught.value)


def test_a_server_that_never_answers_the_handshake(tmp_path: Any) -> None:
    script = tmp_path / "silent.py"
    script.write_text("import time\ntime.sleep(60)\n")
    start = time.monotonic()
    with pytest.raises(MCPConnectionError) as caught:
        connect(MCPServer.stdio("silent", sys.executable, script, connect_timeout=1)).open()
    assert "did not complete the MCP handshake within 1s" in str(caught.value)
    assert time.monotonic() - start < 1 + 6


def test_nothing_listening_on_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    start = time.monotonic()
    with pytest.raises(MCPConnectionError) as caught:
        connect(MCPServer.http("nobody", url, connect_timeout=5)).open()
    assert url in str(caught.value) and time.monotonic() - start < 7


def test_a_closed_toolset_refuses_calls_with_advice() -> None:
    tools = connect(py_server())
    with pytest.raises(MCPConnectionError, match="is not open; use 'with connect"):
        asyncio.run(tools.invoke("add", {"a": 1, "b": 1}))
    with pytest.raises(MCPConnectionError, match="is not open"):
        list(tools)  # an Agent built from an unopened toolset would silently have no tools
    with tools:
        pass
    tools.close()  # idempotent
    assert repr(tools) == "<MCPToolset py (closed, 10 tools)>"


async def test_async_context_manager_and_cancellation() -> None:
    async with connect(py_server(call_timeout=5)) as tools:
        task = asyncio.ensure_future(tools.invoke("hang", {}))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await tools.invoke("add", {"a": 5, "b": 5}) == "10"


def test_the_test_server_script_exists() -> None:
    assert PY_SERVER.exists()
