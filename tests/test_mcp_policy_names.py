"""``tether mcp serve`` and ``tether mcp proxy`` check the policy's names against the tools they
serve, as ``Agent`` and ``tether run`` do: a misspelt deny rule (``refnd``, ``writefile``) stops
the server before it answers anyone, instead of silently denying nothing. The proxy checks the
upstream's tools once listed, and again whenever the upstream says its tool list changed; while
the policy no longer matches, every call is refused (fail closed), on stderr and in the journal.

Every test drives the real entry point: the command line in a subprocess (its stderr read as a
pipe until it says it serves, or exits), the official MCP client, and real upstream servers.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_peers import http_peer, http_server, journals, status, stdio_peer, store_url, text
from mcp_servers import PY_SERVER, npm_bin, py_server
from tether.policy import YamlPolicy
from tether.policy.names import PolicyNameError
from tether.serve.clients import Governance
from tether.serve.proxy import proxy
from tether.serve.server import serve
from tether.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
HEADLINE = "the policy names what its tools do not have, so those rules would never match"

SHOP = """\
from types import SimpleNamespace

from tether import tool


@tool(side_effect=True)
def refund(order: str, amount: int) -> str:
    \"\"\"Refund an order.\"\"\"
    return f"refunded {amount} on {order}"


@tool
def lookup(order: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return f"order {order}: paid"


tools = [refund, lookup]
"""

INTERNS = """\
version: 1
policy_id: refunds
default: allow
rules:
  - id: interns-never-refund
    effect: deny
    reason: interns cannot refund
    when: {all: [{tool: TOOL}, {roles: {in: [intern]}}]}
"""


def policy_file(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def env() -> dict[str, str]:
    """This checkout's tether for the child (the venv may hold another checkout's)."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def start(args: list[str]) -> tuple[int | None, str]:
    """Start ``tether mcp <args>``; read its stderr until it says it serves (then stop it:
    ``None``) or it exits (its code). Either way, what it wrote to stderr."""
    process = subprocess.Popen([sys.executable, "-m", "tether", "mcp", *args], cwd=ROOT,
                               env=env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines = []
    stuck = threading.Timer(120, process.kill)  # neither serving nor exiting: fail, not hang
    stuck.start()
    try:
        for line in process.stderr:
            lines.append(line)
            if " on stdio;" in line or " at http://" in line:
                return None, "".join(lines)
        return process.wait(60), "".join(lines)
    finally:
        stuck.cancel()
        if process.poll() is None:
            process.terminate()
            process.wait(30)
        assert process.stdin is not None
        process.stdin.close()
        process.stderr.close()


# -- tether mcp serve -----------------------------------------------------------------------------

@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.py"
    path.write_text(SHOP)
    return path


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_serve_refuses_a_misspelt_deny_rule_before_serving(tmp_path: Path, shop: Path,
                                                           transport: str) -> None:
    policy = policy_file(tmp_path, INTERNS.replace("TOOL", "refnd"))
    code, err = start(["serve", f"{shop}:tools", "--policy", str(policy), "--role", "intern",
                       "--store", store_url(tmp_path / "j.db"), "--transport", transport,
                       *(["--port", "0"] if transport == "http" else [])])
    assert code == 2, f"it served with a rule that denies nothing:\n{err}"
    assert HEADLINE in err
    assert (f"{policy}: rule 'interns-never-refund' names tool 'refnd', which none of the "
            "served tools is (did you mean 'refund'?)") in err
    assert f"tether policy lint {policy} --tools {shop}:tools" in err  # what to do next
    assert "note: serving" not in err
    assert not (tmp_path / "j.db").exists()  # refused before anything was opened


def test_serve_refuses_a_misspelt_argument_and_the_policy_of_the_object_named(
        tmp_path: Path, shop: Path) -> None:
    policy = policy_file(tmp_path, INTERNS.replace("{tool: TOOL}",
                                                   "{tool: refund}, {args: {amuont: {gt: 5}}}"))
    code, err = start(["serve", f"{shop}:tools", "--policy", str(policy),
                       "--store", store_url(tmp_path / "j.db")])
    assert code == 2
    assert "names argument 'amuont', which refund does not take (did you mean 'amount'?)" in err
    # an object holding tools and its own policy: that policy is checked the same way
    shop.write_text(SHOP + "\nfrom tether.policy.yaml_policy import load_policy\n"
                    f"holder = SimpleNamespace(tools=tools, policy=load_policy("
                    f"{str(policy_file(tmp_path, INTERNS.replace('TOOL', 'lookp'), 'own.yaml'))!r}"
                    "))\n")
    code, err = start(["serve", f"{shop}:holder", "--store", store_url(tmp_path / "j.db")])
    assert code == 2 and "names tool 'lookp'" in err and "did you mean 'lookup'?" in err


def test_serve_starts_with_a_correct_policy(tmp_path: Path, shop: Path) -> None:
    policy = policy_file(tmp_path, INTERNS.replace("TOOL", "refund"))
    code, err = start(["serve", f"{shop}:tools", "--policy", str(policy),
                       "--store", store_url(tmp_path / "j.db")])
    assert code is None, err  # it served
    assert HEADLINE not in err


def test_the_python_serve_refuses_too(tmp_path: Path) -> None:
    from tether import tool

    @tool
    def refund(order: str, amount: int) -> str:
        """Refund."""
        return "refunded"

    policy = YamlPolicy.from_string(INTERNS.replace("TOOL", "refnd"), "interns.yaml")
    with pytest.raises(PolicyNameError, match="did you mean 'refund'"):
        asyncio.run(serve([refund], Governance(policy, MemoryStore())))


# -- tether mcp proxy: the upstream's tools once listed ------------------------------------------

def proxy_args(tmp_path: Path, policy: Path, *upstream: str, options: tuple[str, ...] = ()
               ) -> list[str]:
    return ["proxy", "--policy", str(policy), "--store", store_url(tmp_path / "j.db"),
            *options, "--", *upstream]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_proxy_refuses_a_rule_naming_no_upstream_tool(tmp_path: Path, transport: str) -> None:
    policy = policy_file(tmp_path, INTERNS.replace("TOOL", "wpie"))
    calls = tmp_path / "calls.log"
    code, err = start(proxy_args(
        tmp_path, policy, sys.executable, str(PY_SERVER),
        options=("--transport", transport, *(["--port", "0"] if transport == "http" else []),
                 "--env", f"TETHER_TEST_CALL_LOG={calls}")))
    assert code == 2, f"the proxy served with a rule that denies nothing:\n{err}"
    assert HEADLINE in err
    assert ("rule 'interns-never-refund' names tool 'wpie', which none of the upstream's "
            "tools is (did you mean 'wipe'?)") in err
    assert "proxying" not in err and not calls.exists()


def test_proxy_refuses_a_misspelt_argument_of_an_upstream_tool(tmp_path: Path) -> None:
    policy = policy_file(tmp_path, INTERNS.replace(
        "{tool: TOOL}", "{tool: hang}, {args: {secnds: {gt: 60}}}"))
    code, err = start(proxy_args(tmp_path, policy, sys.executable, str(PY_SERVER)))
    assert code == 2
    assert "names argument 'secnds', which hang does not take (did you mean 'seconds'?)" in err


def test_proxy_in_front_of_the_filesystem_server_refuses_writefile(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    policy = policy_file(tmp_path, "version: 1\npolicy_id: fs\ndefault: allow\nrules:\n"
                         "  - id: read-only\n    effect: deny\n    when: {tool: writefile}\n")
    code, err = start(proxy_args(tmp_path, policy, npm_bin("mcp-server-filesystem"),
                                 str(files)))
    assert code == 2, err
    assert "names tool 'writefile'" in err and "did you mean 'write_file'?" in err
    assert list(files.iterdir()) == []


async def test_the_python_proxy_refuses_too(tmp_path: Path) -> None:
    policy = YamlPolicy.from_string(INTERNS.replace("TOOL", "wpie"), "interns.yaml")
    with pytest.raises(PolicyNameError, match="did you mean 'wipe'"):
        await proxy(py_server("upstream", prefix=""), Governance(policy, MemoryStore()))


# -- tether mcp proxy: the upstream's tools change under it --------------------------------------

NO_WIPING = """\
version: 1
policy_id: upstream
default: allow
rules:
  - id: no-wiping
    effect: deny
    reason: nothing is wiped through the proxy
    when: {tool: wipe}
"""


async def until(condition: Any, seconds: float = 60.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


def changed_upstream(tmp_path: Path) -> list[str]:
    return proxy_args(tmp_path, policy_file(tmp_path, NO_WIPING), sys.executable,
                      str(PY_SERVER), options=(
                          "--env", "TETHER_TEST_RETIRE=1",
                          "--env", f"TETHER_TEST_CALL_LOG={tmp_path / 'calls.log'}"))


def refused_for_names(result: Any) -> None:
    assert result.is_error and status(result) == "denied", text(result)
    assert "names tool 'wipe', which none of the upstream's tools is" in text(result)


async def test_when_the_upstream_list_changes_under_the_policy_every_call_is_refused(
        tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(changed_upstream(tmp_path)) as (url, stderr):
        async with http_peer(url) as client:
            first = await client.call_tool("add", {"a": 1, "b": 2})
            assert status(first) == "ok" and text(first) == "3"
            retired = await client.call_tool("retire", {"name": "wipe"})  # list_changed
            assert status(retired) == "ok", text(retired)
            # the proxy re-lists on the announcement and says so, without waiting for a call
            await until(lambda: any("no longer matches" in line for line in stderr))
            refused_for_names(await client.call_tool("add", {"a": 2, "b": 2}))
            refused_for_names(await client.call_tool("fetch", {"url": "https://example.com"}))
        said = "".join(stderr)
    assert "every call is refused" in said and "names tool 'wipe'" in said
    arrived = (tmp_path / "calls.log").read_text().splitlines()
    assert arrived == ["add {'a': 1, 'b': 2}"]  # no refused call reached the upstream
    (events,) = journals(db).values()
    refusals = [e.data["decision"] for e in events if e.type == "tool.decision"
                and e.data["decision"]["effect"] == "deny"]
    assert [d["policy_id"] for d in refusals] == ["tether:policy-names"] * 2
    assert "names tool 'wipe'" in refusals[0]["reason"]


async def test_a_call_right_after_the_change_is_decided_on_the_new_list(tmp_path: Path) -> None:
    """No window: the call that follows the announcement is checked against the new list even
    if the proxy's own look has not come round yet (stdio, the client spawning the proxy)."""
    async with stdio_peer(changed_upstream(tmp_path), errlog=tmp_path / "err.txt",
                          env={"PYTHONPATH": str(ROOT / "src")}) as client:
        await client.call_tool("retire", {"name": "wipe"})
        refused_for_names(await client.call_tool("add", {"a": 2, "b": 2}))
    assert not (tmp_path / "calls.log").exists()


def test_proxy_checks_tools_awaiting_approval_against_their_own_arguments(
        tmp_path: Path) -> None:
    """A tool awaiting approval shows clients no schema; the policy is still checked against
    its real arguments, so a correct rule on one is no false alarm, and a misspelt one is
    caught."""
    good = policy_file(tmp_path, INTERNS.replace(
        "{tool: TOOL}", "{tool: hang}, {args: {seconds: {gt: 60}}}"))
    code, err = start(proxy_args(tmp_path, good, sys.executable, str(PY_SERVER),
                                 options=("--require-approval-for-new",)))
    assert code is None, err  # it served
    bad = policy_file(tmp_path, INTERNS.replace(
        "{tool: TOOL}", "{tool: hang}, {args: {secnds: {gt: 60}}}"), "bad.yaml")
    code, err = start(proxy_args(tmp_path, bad, sys.executable, str(PY_SERVER),
                                 options=("--require-approval-for-new",)))
    assert code == 2 and "names argument 'secnds', which hang does not take" in err


async def test_a_change_announced_after_a_call_was_decided_still_stops_it(
        tmp_path: Path) -> None:
    """The window between the proxy's look and the upstream's call: a call that finds the list
    announced as changed re-lists it and asks ``on_relisted`` (the proxy's re-check) before it
    is sent; raising there means the call never reaches the upstream."""
    from tether.mcp import MCPToolset
    from tether.mcp.errors import MCPError

    calls = tmp_path / "calls.log"
    seen: list[set[str]] = []

    def relisted() -> None:
        seen.append({spec.name for spec in toolset.offered()})
        raise MCPError("the policy no longer matches")

    upstream = py_server("upstream", prefix="", env={
        "TETHER_TEST_RETIRE": "1", "TETHER_TEST_CALL_LOG": str(calls)})
    async with MCPToolset(upstream, on_relisted=relisted) as toolset:
        assert await toolset.invoke("retire", {"name": "wipe"}) == "retired wipe"
        with pytest.raises(MCPError, match="no longer matches"):
            await toolset.invoke("add", {"a": 1, "b": 2})
        assert await toolset.invoke("add", {"a": 1, "b": 2}) == "3"  # listed: no new question
    assert len(seen) == 1 and "wipe" not in seen[0] and "add" in seen[0]
    assert calls.read_text().splitlines() == ["add {'a': 1, 'b': 2}"]


async def test_an_upstream_restarted_with_other_tools_is_checked_again(tmp_path: Path) -> None:
    """A restart is a change of the tool list too: the upstream that comes back without the
    tool a rule names gets every call refused, and the log says why."""
    from tether.store.sqlite import SQLiteStore

    flag, db = tmp_path / "without-wipe", tmp_path / "j.db"
    upstream = py_server("upstream", prefix="", env={"TETHER_TEST_DROP_IF": f"{flag}:wipe"})
    log: list[str] = []
    store = SQLiteStore(db)
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(proxy(
        upstream, Governance(YamlPolicy.from_string(NO_WIPING, "no-wiping.yaml"), store),
        transport="http", on_ready=ready.set_result, log=log.append))
    try:
        done, _ = await asyncio.wait({task, ready}, timeout=60,
                                     return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()
        async with http_peer(await ready) as client:
            assert text(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
            flag.touch()  # the next start of the upstream offers no wipe
            await client.call_tool("die", {})
            await until(lambda: any("runs again" in line for line in log))
            await until(lambda: any("no longer matches" in line for line in log))
            refused_for_names(await client.call_tool("add", {"a": 2, "b": 2}))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        store.close()


def test_a_shared_policy_may_opt_out_explicitly(tmp_path: Path, shop: Path) -> None:
    """As with Agent(check_policy_names=False): a policy shared by servers whose tools differ
    is served when the operator says so, and only then; the refusal says how."""
    shared = policy_file(tmp_path, INTERNS.replace("TOOL", "wipe"))  # the upstream's, not shop's
    serve_args = ["serve", f"{shop}:tools", "--policy", str(shared),
                  "--store", store_url(tmp_path / "j.db")]
    code, err = start(serve_args)
    assert code == 2 and "--skip-policy-name-check" in err
    assert start([*serve_args, "--skip-policy-name-check"])[0] is None  # it served
    misspelt = policy_file(tmp_path, INTERNS.replace("TOOL", "refund"), "other.yaml")
    code, err = start(proxy_args(tmp_path, misspelt, sys.executable, str(PY_SERVER)))
    assert code == 2 and "--skip-policy-name-check" in err
    code, err = start(proxy_args(tmp_path, misspelt, sys.executable, str(PY_SERVER),
                                 options=("--skip-policy-name-check",)))
    assert code is None, err
