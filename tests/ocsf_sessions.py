"""Real sessions that produce every security event the OCSF view maps, for the OCSF/SIEM tests:
an allowed call, a denied one, a credential issued, approvals granted and refused (a session
paused and resumed), a budget overrun (a model that misreports its usage) and a sub-agent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tether import (
    Agent,
    AgentAsTool,
    Budget,
    Decision,
    Effect,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    Usage,
    tool,
)
from tether.credentials import CredentialBroker, ScopedToken
from tether.policy import Action, Context, Resource, Subject
from tether.tools import Calculator
from tether.types import Event

from conftest import call

SECRET = "sk-live-ocsf-7c6b5a4938271605"
CARD = "4111-1111-1111-1111"

Sink = Callable[[Event], object]


class Rules:
    """wipe is denied; pay needs a person (its card masked); everything else is allowed."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "wipe":
            return Decision(Effect.DENY, "wiping is never allowed", "no-wipe")
        if action.tool == "pay":
            return Decision(Effect.REQUIRE_APPROVAL, "money moves need a human", "approvals",
                            fields=("card",))
        return Decision(Effect.ALLOW, "ok", "house-rules")


def _tools() -> list[Any]:
    @tool(side_effect=True)
    def wipe(path: str) -> str:
        """Delete everything under a path."""
        return f"wiped {path}"

    @tool(side_effect=True)
    def pay(account: str, amount: int, card: str = "") -> str:
        """Pay an amount."""
        return f"paid {amount} to {account}"

    @tool(egress=True)
    def charge(amount: int, credentials: ScopedToken) -> str:
        """Charge a card through the payment API."""
        return f"charged {amount} with a key of {len(credentials.reveal())} characters"

    return [Calculator(), wipe, pay, charge]


def _scripted(script: Sequence[Any]) -> ScriptedModel:
    def respond(request: ModelRequest) -> Any:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        return script[turn] if turn < len(script) else "all done"

    return ScriptedModel(respond)


def agent(script: Sequence[Any], sinks: Sequence[Sink], store: str | None = None,
          name: str = "ops") -> Agent:
    broker = CredentialBroker()
    broker.register("charge", SECRET, ttl=30, max_uses=1)
    return Agent(model=_scripted(script), reasoning=ReAct(), tools=_tools(), policy=Rules(),
                 credentials=broker, telemetry=list(sinks), store=store, name=name)


class Misreports(ScriptedModel):
    """Reports far more output than the cap it was sent: a budget overrun."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        reported = request.input_tokens_estimate or 0
        return ModelResponse("y" * 16000, (), Usage(reported, 4000), "gpt-liar", "stop")


def run_all(sinks: Sequence[Sink], store: str | None = None) -> list[str]:
    """Run every scenario; returns the session ids, in order."""
    ids = []
    busy = agent([call("calculator", {"expression": "6*7"}), call("wipe", {"path": "/"}),
                  call("charge", {"amount": 5}), "done"], sinks, store)
    ids.append(busy.run("work", user_id="alice", tenant_id="acme").session_id)

    for verdict, who in (("approve", "alice"), ("deny", "bob")):
        payer = agent([call("pay", {"account": "A", "amount": 40, "card": CARD}), "ok"],
                      sinks, store)
        session = payer.session("pay A", user_id="carol", tenant_id="acme")
        session.run()
        (request,) = session.pending_approvals()
        getattr(payer.approvals, verdict)(request.id, approver=who, note=f"{verdict} it")
        session.resume()
        ids.append(session.id)

    liar = Agent(model=Misreports(["x"], when_exhausted="x", name="gpt-liar"),
                 reasoning=ReAct(), telemetry=list(sinks), store=store, name="liar")
    ids.append(liar.run("write a lot", budget=Budget(max_tokens=800)).session_id)

    # the child has no sinks of its own: it inherits its caller's (AgentAsTool)
    child = agent([call("calculator", {"expression": "1+1"}), "2"], [], store, name="child")
    parent = Agent(model=_scripted([call("child", {"task": "add"}), "it is 2"]),
                   reasoning=ReAct(), tools=[AgentAsTool(child)], telemetry=list(sinks),
                   store=store, name="parent")
    ids.append(parent.run("delegate", user_id="dave").session_id)
    return ids
