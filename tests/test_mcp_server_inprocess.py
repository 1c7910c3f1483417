"""The MCP server in-process: the SDK's own client against ``build_server``, and the per-client
gateways (serialised calls, separate budgets, idle release, calls that outlive a cancel)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcp import Client
from tether import Budget, Decision, Effect, tool
from tether.cli import main
from tether.cli.mcp import load_tools
from tether.cli.recipe import RecipeError
from tether.journal.chain import verify_chain
from tether.policy import AllowAll
from tether.serve.clients import ClientExpired, ClientGateways, Governance
from tether.serve.server import build_server, client_key, listing_of
from tether.store.memory import MemoryStore

ran: list[str] = []


@tool(side_effect=True)
async def slow_write(key: str) -> str:
    """Write slowly."""
    await asyncio.sleep(0.2)
    ran.append(key)
    return f"wrote {key}"


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class NoSecrets:
    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
        if "secret" in str(action.arguments.get("text", "")):
            return Decision(Effect.DENY, "no secrets", "t")
        return Decision(Effect.ALLOW, "ok", "t")


def gateways(budget: Budget | None = None, **options: Any) -> ClientGateways:
    store = MemoryStore()
    return ClientGateways([slow_write, shout], Governance(NoSecrets(), store,
                                                          budget or Budget()), **options)


async def test_the_sdk_client_in_process_lists_calls_and_is_refused() -> None:
    g = gateways()
    async with Client(build_server(g, listing_of(g.tools))) as client:
        listed = (await client.list_tools()).tools
        loud = await client.call_tool("shout", {"text": "hi"})
        refused = await client.call_tool("shout", {"text": "my secret"})
    assert [t.name for t in listed] == ["slow_write", "shout"]
    assert listed[1].input_schema == dict(shout.spec.parameters)
    assert not loud.is_error and loud.content[0].text == "HI"  # type: ignore[union-attr]
    assert refused.is_error and refused.meta is not None
    assert refused.meta["tether/status"] == "denied"
    assert refused.meta["tether/session"] == g.gateways[0].id
    assert refused.meta["io.modelcontextprotocol/serverInfo"]["name"] == "tether"
    assert len(g) == 1  # one client, one gateway


async def test_concurrent_calls_of_one_client_cannot_overspend() -> None:
    ran.clear()
    g = gateways(Budget(max_tool_calls=1))
    outcomes = await asyncio.gather(*(g.call("c", "slow_write", {"key": k}) for k in "ab"))
    assert sorted(o.result.status for o in outcomes) == ["ok", "skipped"]
    assert len(ran) == 1


async def test_clients_have_separate_budgets_and_sessions() -> None:
    g = gateways(Budget(max_tool_calls=1))
    a1, a2 = [await g.call("a", "shout", {"text": "x"}) for _ in range(2)]
    b1 = await g.call("b", "shout", {"text": "y"})
    assert (a1.result.status, a2.result.status, b1.result.status) == ("ok", "skipped", "ok")
    assert a1.session_id != b1.session_id and len(g) == 2


async def test_an_idle_client_is_released_and_never_gets_a_fresh_budget() -> None:
    now = [0.0]
    g = gateways(idle_timeout=60, lasting=["http:sessionless"], clock=lambda: now[0])
    first = await g.call("http:s1", "shout", {"text": "x"})
    shared = await g.call("http:sessionless", "shout", {"text": "x"})
    now[0] = 50.0
    await g.call("http:s2", "shout", {"text": "x"})
    now[0] = 100.0
    await g.call("http:s2", "shout", {"text": "x"})  # s2 is active; s1 was idle for 100 s
    assert g.gateway("http:s1") is None and g.gateway("http:s2") is not None
    with pytest.raises(ClientExpired, match="Reconnect"):
        await g.call("http:s1", "shout", {"text": "x"})
    assert first.session_id not in {gw.id for gw in g.gateways}
    again = await g.call("http:sessionless", "shout", {"text": "x"})  # no session to renew
    assert again.session_id == shared.session_id


async def test_a_call_the_client_cancels_still_finishes_and_is_journaled() -> None:
    ran.clear()
    g = gateways()
    waiting = asyncio.ensure_future(g.call("c", "slow_write", {"key": "k"}))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.sleep(0.3)
    assert ran == ["k"]
    (gateway,) = g.gateways
    events = gateway.journal.events()
    assert verify_chain(events) is None
    assert [e.data["status"] for e in events if e.type == "tool.result"] == ["ok"]


def test_load_tools_takes_a_list_an_agent_or_a_factory(tmp_path: Path) -> None:
    module = tmp_path / "served.py"
    module.write_text(
        "from tether import Agent, ReAct, ScriptedModel, tool\n"
        "from tether.policy import AllowAll\n"
        "@tool\ndef ping() -> str:\n    '''Ping.'''\n    return 'pong'\n"
        "tools = [ping]\n"
        "agent = Agent(model=ScriptedModel(['x']), reasoning=ReAct(), tools=[ping],\n"
        "              policy=AllowAll())\n"
        "def make():\n    return [ping]\n"
        "number = 3\n")
    listed, policy = load_tools(f"{module}:tools")
    assert [t.name for t in listed] == ["ping"] and policy is None
    listed, policy = load_tools(f"{module}:agent")
    assert [t.name for t in listed] == ["ping"] and isinstance(policy, AllowAll)
    assert [t.name for t in load_tools(f"{module}:make")[0]] == ["ping"]
    with pytest.raises(RecipeError, match="name a list of tether tools"):
        load_tools(f"{module}:number")
    with pytest.raises(RecipeError, match="MODULE:ATTRIBUTE"):
        load_tools("no_colon")


@pytest.mark.parametrize(("argv", "message"), [
    (["serve", "examples/mcp_notes.py:nothing"], "has no attribute 'nothing'"),
    (["serve", "examples/mcp_notes.py:tools", "--port", "9"], "--port applies to --transport"),
    (["serve", "examples/mcp_notes.py:tools", "--policy", "missing.yaml"],
     "cannot load the policy"),
    (["proxy", "--policy", "examples/policies/mcp_notes.yaml"], "after '--'"),
    (["proxy", "--policy", "examples/policies/mcp_notes.yaml", "--env", "TETHER_NOT_SET_X",
      "--", "server"], "TETHER_NOT_SET_X is not set"),
])
def test_cli_errors_say_what_to_fix(argv: list[str], message: str,
                                    capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("TETHER_STORE", "memory://")
    assert main(["mcp", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("request_", "version", "key"), [
    (None, "2025-11-25", "stdio"),
    (SimpleNamespace(headers={"mcp-session-id": "abc"}), "2025-11-25", "http:abc"),
    (SimpleNamespace(headers={}), "2025-11-25", "http:sessionless"),
    # a 2026-07-28 request is not routed through a session, so its header proves nothing
    (SimpleNamespace(headers={"mcp-session-id": "forged"}), "2026-07-28", "http:sessionless"),
])
def test_which_client_sent_a_request(request_: Any, version: str, key: str) -> None:
    assert client_key(SimpleNamespace(request=request_, protocol_version=version)) == key  # type: ignore[arg-type]
