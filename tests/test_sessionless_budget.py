"""Requests that carry no MCP session (stateless HTTP) share one gateway and so one budget: not
per request, not renewed by waiting past the idle timeout, not by a session end, not by sending
several at once."""

from __future__ import annotations

import asyncio
from typing import Any

from tether import Budget, Decision, Effect, tool
from tether.serve.clients import ClientGateways, Governance
from tether.serve.server import SESSIONLESS_CLIENT
from tether.store.memory import MemoryStore

ran: list[str] = []


@tool
def ping(note: str) -> str:
    """Answer."""
    ran.append(note)
    return f"pong {note}"


class AllowAll:
    inline = True

    def evaluate(self, *_: Any) -> Decision:
        return Decision(Effect.ALLOW, "ok", "all")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _gateways(clock: Clock, calls: int) -> ClientGateways:
    governance = Governance(AllowAll(), MemoryStore(), budget=Budget(max_tool_calls=calls))
    return ClientGateways([ping], governance, idle_timeout=60.0, lasting=(SESSIONLESS_CLIENT,),
                          clock=clock)


async def test_sessionless_requests_share_one_budget_across_idle_time_and_session_ends() -> None:
    ran.clear()
    clock = Clock()
    gateways = _gateways(clock, calls=2)
    first = await gateways.call(SESSIONLESS_CLIENT, "ping", {"note": "1"})
    clock.now += 3600.0  # far past the idle timeout: a session would have been released
    second = await gateways.call(SESSIONLESS_CLIENT, "ping", {"note": "2"})
    gateways.end(SESSIONLESS_CLIENT, "a DELETE without a session")
    clock.now += 3600.0
    third = await gateways.call(SESSIONLESS_CLIENT, "ping", {"note": "3"})
    assert [o.result.status for o in (first, second, third)] == ["ok", "ok", "skipped"]
    assert first.session_id == second.session_id == third.session_id
    assert ran == ["1", "2"] and len(gateways) == 1


async def test_concurrent_sessionless_requests_cannot_overspend_the_shared_budget() -> None:
    ran.clear()
    gateways = _gateways(Clock(), calls=3)
    outcomes = await asyncio.gather(*(gateways.call(SESSIONLESS_CLIENT, "ping", {"note": str(i)})
                                      for i in range(8)))
    assert sorted(o.result.status for o in outcomes) == ["ok"] * 3 + ["skipped"] * 5
    assert len(ran) == 3 and len({o.session_id for o in outcomes}) == 1


async def test_a_client_with_a_session_is_released_when_idle_unlike_the_sessionless_one() -> None:
    clock = Clock()
    gateways = _gateways(clock, calls=5)
    await gateways.call("http:abc", "ping", {"note": "a"})
    await gateways.call(SESSIONLESS_CLIENT, "ping", {"note": "s"})
    clock.now += 3600.0
    await gateways.call(SESSIONLESS_CLIENT, "ping", {"note": "t"})  # sweeps the idle ones
    assert gateways.gateway("http:abc") is None
    assert gateways.gateway(SESSIONLESS_CLIENT) is not None
