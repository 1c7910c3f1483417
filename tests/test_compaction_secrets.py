"""What the summariser reads: neither a registered secret — also one the model wrote in its own
words before any tool revealed it — nor a value a decision masked (a card number the model sent
as a call's argument, as text or as a number)."""

from __future__ import annotations

import json

from tether import (
    Agent,
    Compaction,
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
from tether.models.base import compacted_turns, estimate_message_tokens
from tether.policy import Action, Context, Resource, Subject
from tether.store.memory import MemoryStore
from tether.types import ModelResponse as Response
from tether.types import Usage

SECRET = "sk-live/Zq81xR0+pLm2vN7tB="
CARD = "4929120945581307"
TURNS = 8


class Cards:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "charge":
            return Decision(Effect.MASK, "card data", "cards", fields=("card", "pin"),
                            mask_in=("journal",))
        return Decision(Effect.ALLOW, "ok", "cards")


class Summariser:
    name = "summariser"
    price = None
    estimate_message_tokens = staticmethod(estimate_message_tokens)

    def __init__(self) -> None:
        self.sent: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> Response:
        self.sent.append(request)
        return Response("a summary", (), Usage(100, 10), "summariser")


def _run(summariser: Summariser) -> None:
    @tool(egress=True)
    def fetch(n: int, credentials: ScopedToken) -> str:
        """Fetch record n."""
        credentials.reveal()
        return f"record {n}: " + "x" * 300

    @tool(side_effect=True)
    def charge(card: str, pin: int) -> str:
        """Charge a card."""
        return "charged"

    first = ModelResponse(f"I will use the key {SECRET} and the card {CARD}.", (
        ToolCall("k", "charge", {"card": CARD, "pin": 4929}),
        ToolCall("c0", "fetch", {"n": 0})))
    script = [first, *(ModelResponse(tool_calls=(ToolCall(f"c{i}", "fetch", {"n": i}),))
                       for i in range(1, TURNS)), "done"]

    def respond(request: ModelRequest) -> ModelResponse | str:
        messages = request.messages
        earlier = compacted_turns(messages[2]) if len(messages) > 2 else 0
        return script[earlier + sum(m.role == "assistant" for m in messages)]

    broker = CredentialBroker()
    broker.register("fetch", SECRET, max_uses=1)
    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[fetch, charge],
                  policy=Cards(), credentials=broker, store=MemoryStore(),
                  compaction=Compaction(strategy="summarise", context_window=1000, keep_last=2,
                                        model=summariser))  # type: ignore[arg-type]
    assert agent.run("fetch the records").answer == "done"


def test_the_summariser_reads_no_secret_and_no_masked_value() -> None:
    summariser = Summariser()
    _run(summariser)
    assert summariser.sent, "the summariser was asked"
    read = json.dumps([m.content for r in summariser.sent for m in r.messages])
    assert "I will use the key" in read  # the model's own words are there, blanked
    assert SECRET not in read, "a secret the model wrote reached the summariser"
    assert CARD not in read and "4929" not in read, "a masked value reached the summariser"
    assert "[masked]" in read and "[secret redacted]" in read
