"""Real MCP peers for the tests of ``tether mcp serve`` and ``tether mcp proxy``.

The official SDK client (``ClientSession``) talks to the tether command line in a subprocess,
over stdio (the client spawns it) or streamable HTTP on 127.0.0.1 (the server prints its URL);
nothing here touches any other network. The served tools are the README's example
(``examples/mcp_notes.py``) with its policy, so the README's commands are what is tested.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession
from tether.store.sqlite import SQLiteStore
from tether.types import Event

ROOT = Path(__file__).resolve().parents[1]
NOTES_TOOLS = "examples/mcp_notes.py:tools"
NOTES_POLICY = "examples/policies/mcp_notes.yaml"
URL = re.compile(r"at (http://127\.0\.0\.1:\d+/mcp)")


def store_url(db: Path) -> str:
    return f"sqlite:///{db}"


@contextlib.asynccontextmanager
async def stdio_peer(args: Sequence[str], *, errlog: Path,
                     env: Mapping[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An SDK client session with ``tether mcp <args>`` spawned over stdio."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "tether", "mcp", *args],
                                   env=dict(env or {}), cwd=str(ROOT))
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(
                read, write, read_timeout_seconds=30) as session:
            await session.initialize()
            yield session


@contextlib.contextmanager
def http_server(args: Sequence[str], *, env: Mapping[str, str] | None = None,
                timeout: float = 30.0) -> Iterator[tuple[str, list[str]]]:
    """``tether mcp <args> --transport http --port 0`` in a subprocess: its URL (from the line it
    prints when ready) and its stderr lines so far (a list that keeps filling)."""
    with printed_url([sys.executable, "-m", "tether", "mcp", *args[:1], "--transport", "http",
                      "--port", "0", *args[1:]], env=env, timeout=timeout) as served:
        yield served


@contextlib.contextmanager
def printed_url(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                timeout: float = 30.0, pattern: re.Pattern[str] = URL
                ) -> Iterator[tuple[str, list[str]]]:
    """``argv``, an HTTP server, in a subprocess until the block ends: the URL it prints on
    stderr when ready (``pattern``'s group: by default ``... at http://127.0.0.1:PORT/mcp``) and
    its stderr lines so far (a list that keeps filling); stopped (terminated, then killed) when
    the block ends."""
    import os

    process = subprocess.Popen(
        list(argv), cwd=ROOT, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    found: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            match = pattern.search(line)
            if match:
                found.put(match[1])
        found.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        try:
            url = found.get(timeout=timeout)
        except queue.Empty:
            url = None
        if url is None:
            time.sleep(0.2)
            raise RuntimeError(f"{' '.join(argv[1:])} did not start:\n{''.join(lines)}")
        yield url, lines
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@contextlib.asynccontextmanager
async def http_peer(url: str) -> AsyncIterator[ClientSession]:
    """An SDK client session with a streamable-HTTP server (a new MCP session each time)."""
    async with streamable_http_client(url) as (read, write), ClientSession(
            read, write, read_timeout_seconds=30) as session:
        await session.initialize()
        yield session


def text(result: Any) -> str:
    """The text of a CallToolResult (tether sends one text block)."""
    (block,) = result.content
    return str(block.text)


def status(result: Any) -> str:
    return str((result.meta or {}).get("tether/status"))


def journals(db: Path) -> dict[str, list[Event]]:
    """Every session's events in a SQLite store."""
    store = SQLiteStore(db)
    try:
        return {info.session_id: store.read(info.session_id) for info in store.sessions()}
    finally:
        store.close()


def journal_text(events: Sequence[Event]) -> str:
    return json.dumps([e.data for e in events])


def approve(db: Path, approval_id: str) -> str:
    """Approve with the real CLI, from another process, as an operator would."""
    done = subprocess.run(
        [sys.executable, "-m", "tether", "approvals", "approve", approval_id, "--approver",
         "maria", "--unauthenticated", "--note", "checked", "--store", store_url(db)],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout
