"""Secrets and masked values carried where a mutation check found no test watching: across a
gateway's segment roll, into an MCP server's sampling request, and in fixed shapes (4
characters inside a longer word; a number of 4+ digits sent back as a number in another
call's arguments)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tether import (
    Agent,
    Decision,
    Effect,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.credentials import CredentialBroker, ScopedToken
from tether.mcp import MCPServer, connect
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.sqlite import SQLiteStore

SECRET = "sk-live/Zq81xR0+pLm2vN7tB="
CARD = "4929120945581307"
SAMPLING = "You answer a request that the tool server"
ASKING = Path(__file__).parent / "mcp" / "asking_server.py"


class MaskCards:
    """``charge``'s card and pin, and ``open_account``'s number, are masked in the journal."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool in ("charge", "open_account"):
            return Decision(Effect.MASK, "card data", "cards",
                            fields=("card", "pin", "account"), mask_in=("journal",))
        return Decision(Effect.ALLOW, "ok", "cards")


@tool(side_effect=True)
def charge(card: str) -> str:
    """Charge a card."""
    return "charged"


@tool
def lookup() -> str:
    """Look the customer up (careless: it has the card and the key by another way)."""
    return f"customer: card={CARD} key={SECRET}"


def test_a_segment_roll_keeps_masks_and_secrets_and_revokes_the_old_segments_tokens(
        tmp_path: Path) -> None:
    issued: list[ScopedToken] = []

    @tool(egress=True)
    def fetch(credentials: ScopedToken) -> str:
        """Fetch with the key."""
        issued.append(credentials)
        credentials.reveal()
        return "fetched"

    broker = CredentialBroker()
    broker.register("fetch", SECRET)
    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([fetch, charge, lookup], policy=MaskCards(), client="c", store=store,
                      credentials=broker, roll_calls=2)

    async def calls() -> None:
        await gateway.call("fetch", {})
        await gateway.call("charge", {"card": CARD})
        first = gateway.id
        assert not issued[0].revoked
        result = await gateway.call("lookup", {})  # the third call opens the next segment
        assert gateway.id != first, "the journal rolled"
        assert issued[0].revoked and broker.issued(first) == []
        assert SECRET not in result.content  # the card is masked in the journal only

    asyncio.run(calls())
    gateway.close()
    (dumped,) = [e for e in store.read(gateway.id) if e.type == "tool.result"]
    assert dumped.data["content"] == "customer: card=[masked] key=[secret redacted]"
    store.close()


def test_a_servers_sampling_request_quoting_a_session_secret_reaches_the_model_blanked(
) -> None:
    seen: list[ModelRequest] = []

    @tool(egress=True)
    def fetch(credentials: ScopedToken) -> str:
        """Fetch with the key."""
        credentials.reveal()
        return "fetched"

    def respond(request: ModelRequest) -> ModelResponse | str:
        if request.messages[0].content.startswith(SAMPLING):
            seen.append(request)
            return "sampled"
        turns = sum(m.role == "assistant" for m in request.messages)
        if turns == 0:
            return ModelResponse(tool_calls=(ToolCall("c0", "fetch", {}),))
        if turns == 1:  # the model hands the server the key, which asks the model about it
            return ModelResponse(tool_calls=(ToolCall("c1", "asking_sample", {
                "prompt": f"Is {SECRET} a valid key?", "max_tokens": 50}),))
        return "done"

    broker = CredentialBroker()
    broker.register("fetch", SECRET, max_uses=1)
    server = MCPServer.stdio("asking", sys.executable, ASKING, call_timeout=10,
                             sampling="session", sampling_max_tokens=64,
                             protocol="2025-11-25")  # it asks through the 2025 back-channel
    with connect(server) as tools:
        agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(),
                      tools=[fetch, *tools], credentials=broker)
        session = agent.session("check the key")
        assert session.run().answer == "done"
    (request,) = seen
    text = json.dumps([m.content for m in request.messages])
    assert "[secret redacted] a valid key?" in text and SECRET not in text
    assert SECRET not in json.dumps([e.data for e in session.replay()])


def test_fixed_shapes_of_masked_values_stay_masked() -> None:
    """A masked value of exactly 4 characters inside a longer word; a masked number of 5 digits
    the model sends back, as a number, in another call's arguments."""

    @tool(side_effect=True)
    def open_account(account: int, pin: str) -> str:
        """Open an account."""
        return "opened"

    @tool
    def note(text: str, account: int) -> str:
        """Write a note."""
        return f"noted for ref AB{PIN}CD"

    PIN = "4821"
    model = ScriptedModel([
        ModelResponse(tool_calls=(ToolCall("a", "open_account",
                                           {"account": 73914, "pin": PIN}),)),
        ModelResponse(tool_calls=(ToolCall("b", "note",
                                           {"text": f"pin{PIN}x", "account": 73914}),)),
        "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[open_account, note],
                  policy=MaskCards())
    session = agent.session("open an account")
    assert session.run().answer == "done"
    events = session.replay()
    (noted,) = [e.data for e in events if e.type == "tool.decision" and e.data["call_id"] == "b"]
    assert noted["arguments"] == {"text": "pin[masked]x", "account": "[masked]"}
    (result,) = [e.data for e in events if e.type == "tool.result" and e.data["call_id"] == "b"]
    assert result["content"] == "noted for ref AB[masked]CD"
    text = json.dumps([e.data for e in events])
    assert PIN not in text and "73914" not in text
