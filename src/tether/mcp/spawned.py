"""Know the process of a stdio MCP server, so a server whose shutdown hangs can still be killed.

Why: the SDK stops a stdio server itself (close stdin, wait, kill its process group), inside the
transport's shutdown. When that shutdown does not finish within ``close_timeout`` — a frozen
server, a loop too busy — the owner task is cancelled and the SDK's escalation never completes:
the server outlived ``close()``. The SDK does not hand out the process it spawned.

Decision: record each process the SDK spawns for a connection (wrapping the SDK's one spawn
function, once, and only if it is there; the connection names where to record through a context
variable, so concurrent connections never see each other's), and after an abandoned shutdown
kill the server's process group (the SDK starts each server in a session of its own, so the
group is the server and everything it started). Without the SDK function (another SDK version)
nothing is recorded and close behaves as before.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import sys
from typing import Any

_SINK: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("tether_mcp_spawned",
                                                                         default=None)
_WRAPPED = "_tether_records_spawns"


def record_spawns(sink: list[Any]) -> contextvars.Token[list[Any] | None]:
    """From now on in this context, processes the SDK spawns are appended to ``sink``."""
    _install()
    return _SINK.set(sink)


def stop_recording(token: contextvars.Token[list[Any] | None]) -> None:
    _SINK.reset(token)


def _install() -> None:
    from mcp.client import stdio

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, _WRAPPED, False):
        return

    async def recording(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        sink = _SINK.get()
        if sink is not None:
            sink.append(process)
        return process

    setattr(recording, _WRAPPED, True)
    stdio._create_platform_compatible_process = recording


def kill_group(process: Any) -> None:
    """Kill ``process`` and its process group (POSIX), if it is still there."""
    pid = getattr(process, "pid", None)
    if not isinstance(pid, int) or sys.platform == "win32":
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # its own session: the group is the server's
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
