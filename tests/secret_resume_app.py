"""A session that holds a broker secret and a masked card number when it pauses for approval,
resumed by another recipe object in another interpreter (as ``tether resume`` and fleet workers
do). Used by ``test_secrets_across_resume.py`` and by the CLI there (``tether run
secret_resume_app.py:agent``; the store comes from ``--store``).

``python tests/secret_resume_app.py run URL`` starts the session (it pauses) and prints its id;
``approve URL`` approves every pending request; ``resume URL SID SENT`` resumes it and writes
what the model was sent, one JSON line per request, to SENT.

After the approval a careless tool returns the secret (in every encoding) and the card, and the
model repeats both in its answer.
"""

from __future__ import annotations

import base64
import json
import sys
import urllib.parse
from typing import Any

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
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.opening import open_store

SECRET = "sk-live/Zq81xR0+pLm2vN7tB="
CARD = "4929120945581307"
USER = "svc-billing"
FORMS = [
    SECRET,
    base64.b64encode(f"{USER}:{SECRET}".encode()).decode(),
    base64.b64encode(SECRET.encode()).decode(),
    base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
    urllib.parse.quote(SECRET, safe=""),
    urllib.parse.quote_plus(SECRET),
    json.dumps(SECRET)[1:-1],
    SECRET.encode().hex(),
    SECRET.encode().hex().upper(),
]
TASK = f"Fetch invoice I-1, charge card {CARD} for it, then pay acme."


class CardPolicy:
    """Card numbers are masked in the journal; payments wait for a person."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "charge_card":
            return Decision(Effect.MASK, "card data", "cards", fields=("card",),
                            mask_in=("journal",))
        if action.tool == "pay":
            return Decision(Effect.REQUIRE_APPROVAL, "payments need a person", "cards")
        return Decision(Effect.ALLOW, "ok", "cards")


def respond(request: ModelRequest) -> ModelResponse | str:
    turns = sum(1 for m in request.messages if m.role == "assistant")
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall("c1", "fetch_invoice", {"invoice": "I-1"}),
                                  ToolCall("c2", "charge_card", {"card": CARD, "amount": 5}))),
        ModelResponse(tool_calls=(ToolCall("c3", "pay", {"to": "acme"}),)),
        ModelResponse(tool_calls=(ToolCall("c4", "debug_dump", {}),)),
        f"done; the key was {' / '.join(FORMS)} and the card {CARD}",
    ]
    return script[min(turns, len(script) - 1)]


def build(store: Any = None, sent: list[ModelRequest] | None = None) -> Agent:
    """A fresh recipe object (and broker) each call, as every new process builds its own."""

    @tool(egress=True)
    def fetch_invoice(invoice: str, credentials: ScopedToken) -> str:
        """Fetch an invoice with the billing key."""
        credentials.reveal()
        return f"invoice {invoice}: 5 EUR"

    @tool(side_effect=True)
    def charge_card(card: str, amount: int) -> str:
        """Charge a card."""
        return f"charged {amount}"

    @tool(side_effect=True)
    def pay(to: str) -> str:
        """Pay someone."""
        return f"paid {to}"

    @tool
    def debug_dump() -> str:
        """Dump debugging state (careless: it has the key and the card by another way)."""
        return f"state: keys={' '.join(FORMS)} card={CARD}"

    def model(request: ModelRequest) -> ModelResponse | str:
        if sent is not None:
            sent.append(request)
        return respond(request)

    broker = CredentialBroker()
    broker.register("fetch_invoice", SECRET, max_uses=1)
    return Agent(model=ScriptedModel(model), reasoning=ReAct(),
                 tools=[fetch_invoice, charge_card, pay, debug_dump], policy=CardPolicy(),
                 credentials=broker, store=store, name="billing")


agent = build()  # for the CLI: ``tether run tests/secret_resume_app.py:agent --store URL``


def main(argv: list[str]) -> None:
    command, url = argv[0], argv[1]
    store = open_store(url)
    try:
        if command == "run":
            session = build(store).session(TASK)
            print(session.id, session.run().stop_reason.value, flush=True)
        elif command == "approve":
            approvals = StoredApprovals(store)
            for request in approvals.pending():
                approvals.approve(request.id, approver="maria", note="ok")
        else:
            sent: list[ModelRequest] = []
            try:
                result = build(store, sent).resume(argv[2])
                print(result.stop_reason.value, flush=True)
            finally:
                with open(argv[3], "w") as out:
                    for request in sent:
                        out.write(json.dumps([m.to_dict() for m in request.messages]) + "\n")
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
