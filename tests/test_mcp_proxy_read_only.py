"""``tether mcp proxy --read-only TOOL``: the operator's word, from the command line, that an
upstream tool it reviewed has no side effect (``MCPServer.read_only``). The policy then sees the
tool as read-only whatever the untrusted upstream's hints say — except a ``destructiveHint``,
which still counts — and a name the upstream does not offer, or a value that is no tool's name,
stops the proxy before it serves anyone.

Every test drives the real entry point: the command line in a subprocess, the official MCP
client, and the Python test server (tests/mcp/py_server.py: ``add`` hints read-only, ``wipe``
hints destructive, ``fail`` hints nothing) as the upstream.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_peers import status, stdio_peer, store_url, text
from mcp_servers import PY_SERVER, py_server
from tether.errors import InvalidArgument
from tether.policy import YamlPolicy
from tether.serve.clients import Governance
from tether.serve.proxy import proxy
from tether.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
#: an operator's policy that lets through what has no side effect, and nothing else
READS_ONLY = """\
version: 1
policy_id: reads-only
default: deny
rules:
  - id: reads
    effect: allow
    when: {resource: {side_effect: false}}
"""


def env() -> dict[str, str]:
    """This checkout's tether for the child (the venv may hold another checkout's)."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def proxy_args(tmp_path: Path, *options: str) -> list[str]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(READS_ONLY)
    return ["proxy", "--policy", str(policy), "--store", store_url(tmp_path / "j.db"),
            "--env", f"TETHER_TEST_CALL_LOG={tmp_path / 'calls'}", *options,
            "--", sys.executable, str(PY_SERVER)]


def ran(tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls"
    return [line.split()[0] for line in calls.read_text().splitlines()] if calls.exists() else []


def refused(tmp_path: Path, *options: str) -> str:
    """Run the proxy, expecting it to refuse to start (exit 2); what it said on stderr."""
    done = subprocess.run([sys.executable, "-m", "tether", "mcp", *proxy_args(tmp_path, *options)],
                          cwd=ROOT, env=env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, f"the proxy started:\n{done.stderr}"
    assert "proxying" not in done.stderr and ran(tmp_path) == []
    return done.stderr


@pytest.mark.parametrize("vouched", [True, False])
async def test_a_vouched_tool_is_read_only_to_the_policy_and_the_rest_stay_side_effects(
        tmp_path: Path, vouched: bool) -> None:
    words = ["--read-only", "add", "--read-only", "wipe"] if vouched else []
    async with stdio_peer(proxy_args(tmp_path, *words), errlog=tmp_path / "err.txt",
                          env=env()) as client:
        added = await client.call_tool("add", {"a": 1, "b": 2})
        wiped = await client.call_tool("wipe", {"path": "/data"})
        failed = await client.call_tool("fail", {"message": "x"})
    if vouched:  # the operator's word, not the upstream's hint (never believed untrusted)
        assert status(added) == "ok" and text(added) == "3"
    else:
        assert status(added) == "denied"
    assert status(wiped) == "denied"  # vouched, but the upstream itself says destructive
    assert status(failed) == "denied"  # never vouched: a side effect
    assert ran(tmp_path) == (["add"] if vouched else [])  # nothing refused reached it


def test_a_name_the_upstream_does_not_offer_stops_the_proxy(tmp_path: Path) -> None:
    err = refused(tmp_path, "--read-only", "add", "--read-only", "ad", "--read-only", "nope")
    assert ("read_only (--read-only) names 'ad' (did you mean 'add'?); 'nope', which the "
            "upstream does not offer") in err
    assert "Name its tools as it lists them: add, die, fail," in err  # what to write instead


@pytest.mark.parametrize("value", ["add,wipe", "", " add", "add wipe"])
def test_a_value_that_is_no_tool_name_is_a_usage_error(tmp_path: Path, value: str) -> None:
    err = refused(tmp_path, f"--read-only={value}")
    assert "argument --read-only: expected one tool's name as the upstream lists it" in err
    assert "repeat --read-only for each tool" in err


async def test_the_python_proxy_refuses_too() -> None:
    policy = YamlPolicy.from_string(READS_ONLY, "reads.yaml")
    with pytest.raises(InvalidArgument, match=r"names 'ad' \(did you mean 'add'\?\)"):
        await proxy(py_server("upstream", prefix="", read_only=["ad"]),
                    Governance(policy, MemoryStore()))
