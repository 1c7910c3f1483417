"""A proxy whose upstream MCP server dies: it says so, restarts it with backoff, and serves again
— or, when the upstream cannot be brought back, ends with ``UpstreamLost`` (exit 1 from the
CLI) instead of failing every call forever, silently."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcp_peers import http_peer, status, text
from mcp_servers import py_server
from tether.mcp.supervise import UpstreamLost
from tether.policy.base import AllowAll
from tether.serve.clients import Governance
from tether.serve.proxy import proxy
from tether.store.memory import MemoryStore


async def serving(upstream: Any, log: list[str], **options: Any) -> tuple[asyncio.Task[None], str]:
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(proxy(
        upstream, Governance(AllowAll(), MemoryStore()), transport="http",
        on_ready=ready.set_result, log=log.append, **options))
    done, _ = await asyncio.wait({task, ready}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()
    return task, await ready


async def until(condition: Any, seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.1)):
        if condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("timed out")


async def test_a_dead_upstream_is_restarted_and_serves_again(tmp_path: Path) -> None:
    log: list[str] = []
    task, url = await serving(py_server("upstream", prefix=""), log)
    try:
        async with http_peer(url) as client:
            assert text(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
            died = await client.call_tool("die", {})
            assert status(died) != "ok"
            await until(lambda: any("runs again" in line for line in log))
            again = await client.call_tool("add", {"a": 2, "b": 2})
            assert status(again) == "ok" and text(again) == "4"
        assert any("is gone" in line for line in log)
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_an_upstream_that_cannot_restart_ends_the_proxy(tmp_path: Path) -> None:
    log: list[str] = []
    upstream = py_server("upstream", prefix="",
                         env={"TETHER_TEST_START_ONCE": str(tmp_path / "started")})
    task, url = await serving(upstream, log, restarts=2)
    async with http_peer(url) as client:
        await client.call_tool("die", {})
    with pytest.raises(UpstreamLost, match="died and 2 restarts failed"):
        await asyncio.wait_for(task, 60)
    assert sum("failed" in line for line in log) == 2
    assert "started once already" in "\n".join(log)  # the upstream's own words
