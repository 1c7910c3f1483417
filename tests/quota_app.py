"""A worker of the quota race tests: sessions of one agent under shared quotas, on one store.

``python tests/quota_app.py race URL PLAN LEDGER`` builds the agent, prints ``ready``, waits
for a line on stdin (so every worker starts at once), runs the sessions PLAN (JSON) describes
and prints one JSON line per session: its stop reason and the tokens it used. Each refund that
runs appends a line to LEDGER (what actually happened, whatever the store says).

``python tests/quota_app.py hang URL LEDGER`` starts one session whose model call never
answers: it prints ``reserved`` once the call's request is durable (its quota reservation
taken before it) and waits to be killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from tether import Agent, ModelResponse, Quota, ReAct, ScriptedModel, ToolCall, Usage, tool
from tether.models.base import Model
from tether.types import ModelRequest

REFUNDS = 4  # default limits (the race test passes its own in PLAN)
TOKENS = 2000


def quotas(plan: dict[str, Any]) -> list[Quota]:
    return [Quota("refunds", plan["refunds"], "1h", per="tenant", tool="refund"),
            Quota("tokens", plan["tokens"], "1h", per="tenant", counts="tokens")]


def build(url: str, ledger: str, plan: dict[str, Any], model: Model) -> Agent:
    @tool(side_effect=True)
    def refund(order: str) -> str:
        """Refund an order."""
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{order}\n".encode())
        finally:
            os.close(fd)
        return f"refunded {order}"

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"order {order}: paid"

    return Agent(model=model, reasoning=ReAct(), tools=[refund, lookup], store=url,
                 quotas=quotas(plan), lease_ttl=plan.get("ttl", 60.0))


def script(turns: list[list[Any]], tenant: str) -> list[ModelResponse]:
    """Each turn: [output tokens, [tool names]]; then a final answer."""
    out = []
    for n, (tokens, tools) in enumerate(turns):
        calls = tuple(ToolCall("", name, {"order": f"{tenant}:o{n}-{i}"})
                      for i, name in enumerate(tools))
        out.append(ModelResponse("x", calls, Usage(output_tokens=tokens)))
    return [*out, ModelResponse("done", (), Usage(output_tokens=8))]


class Hangs:
    """A model whose every call waits forever (the test kills the process)."""

    name = "hangs"
    price = None

    def estimate_message_tokens(self, message: Any) -> int:
        return 10

    async def complete(self, request: ModelRequest) -> ModelResponse:
        print("reserved", flush=True)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def race(url: str, plan: dict[str, Any], ledger: str) -> None:
    runs = [(build(url, ledger, plan, ScriptedModel(script(s["turns"], s["tenant"]))), s)
            for s in plan["sessions"]]
    print("ready", flush=True)
    sys.stdin.readline()
    for agent, session in runs:
        result = agent.run("refund what is owed", tenant_id=session["tenant"])
        print(json.dumps({"tenant": session["tenant"], "stop": result.stop_reason.value,
                          "tokens": result.usage.total_tokens, "detail": result.stop_detail}),
              flush=True)


def hang(url: str, ledger: str, ttl: float) -> None:
    agent = build(url, ledger, {"refunds": REFUNDS, "tokens": TOKENS, "ttl": ttl}, Hangs())
    session = agent.session("refund", tenant_id="acme")
    print(session.id, flush=True)
    session.run()


if __name__ == "__main__":
    if sys.argv[1] == "race":
        race(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])
    else:
        hang(sys.argv[2], sys.argv[3], float(sys.argv[4]))
