"""While tether's proxy restarts its upstream, its MCP clients are told what an MCP client can
do (call again shortly; the proxy never repeats a call itself), not the Python API's advice
(``toolset.reconnect()``, ``with connect(server)``) meant for library users."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_peers import http_peer, status, text
from mcp_servers import py_server
from test_mcp_proxy_upstream import serving, until
from tether.mcp.toolset import MCPToolset
from tether.serve.proxy import RESTART_ADVICE

LIBRARY_WORDS = ("toolset", "reconnect()", "connect(server)", "tools.open()")


async def test_a_call_that_meets_a_dead_upstream_gets_advice_for_an_mcp_client(
        tmp_path: Path) -> None:
    log: list[str] = []
    task, url = await serving(py_server("upstream", prefix=""), log)
    try:
        async with http_peer(url) as client:
            died = await client.call_tool("die", {})
            said = text(died)
            assert status(died) != "ok"
            assert "restart" in said and "call the tool again" in said, said
            assert not [w for w in LIBRARY_WORDS if w in said], said
            await until(lambda: any("runs again" in line for line in log))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_proxy_toolset_between_connections_gives_the_same_advice() -> None:
    # the window inside a restart: the old connection closed, the new one not open yet
    toolset = MCPToolset(py_server("upstream", prefix=""),
                         advice=RESTART_ADVICE)
    try:
        toolset._require_open()
    except Exception as exc:
        said = str(exc)
    else:
        raise AssertionError("a toolset that is not open answered")
    assert "restarting" in said and "call the tool again" in said, said
    assert not [w for w in LIBRARY_WORDS[1:] if w in said], said
