"""No secret reaches a page or a shell through an approval request: a model that copies a broker
secret (in every encoding the journal's scrubber knows) into a call that waits for a person.

The request's quote of the call is kept beside the journal, in the approvals table, and people
read it (the console's inbox, ``tether approvals list``): it must hold the call as the journal
shows it, secrets blanked, or the secret leaks there — and the journal check that guards
decisions would call the request forged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import secret_resume_app as app
from console_sessions import client
from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.cli import main
from tether.credentials import CredentialBroker, ScopedToken
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.deciding import pending
from tether.runtime.approvals.identity import OS_USER, Identity
from tether.store.sqlite import SQLiteStore

MEMO = "key " + " / ".join(app.FORMS)


class PaymentsWait:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "pay":
            return Decision(Effect.REQUIRE_APPROVAL, f"pay {action.arguments.get('memo')}", "p")
        return Decision(Effect.ALLOW, "ok", "p")


def paused(store: SQLiteStore) -> str:
    @tool(egress=True)
    def fetch_invoice(invoice: str, credentials: ScopedToken) -> str:
        """Fetch an invoice with the billing key (careless: it echoes the key)."""
        return f"invoice {invoice}: {credentials.reveal()}"

    @tool(side_effect=True)
    def pay(to: str, memo: str) -> str:
        """Pay someone."""
        return f"paid {to}"

    broker = CredentialBroker()
    broker.register("fetch_invoice", app.SECRET, max_uses=1)
    script = [ModelResponse(tool_calls=(ToolCall("c1", "fetch_invoice", {"invoice": "I-1"}),)),
              ModelResponse(tool_calls=(ToolCall("c2", "pay", {"to": "acme", "memo": MEMO}),)),
              "done"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[fetch_invoice, pay],
                  policy=PaymentsWait(), credentials=broker, store=store, name="billing")
    session = agent.session("pay acme")
    session.run()
    assert session.paused
    return session.id


def leaks(text: str) -> list[str]:
    return [form[:12] for form in app.FORMS if form in text]


def test_a_secret_copied_into_a_waiting_call_reaches_no_page_and_no_shell(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    session_id = paused(store)
    (shown,) = pending(store, Identity("ops", OS_USER))
    assert shown.forged is None  # the quote is the journal's: not taken for a forgery
    assert not leaks(repr(shown.request.to_dict()))
    assert "[secret redacted]" in shown.request.arguments["memo"]
    console = client(store)
    for page in ("/inbox", "/inbox?fragment=1", f"/sessions/{session_id}", "/sessions"):
        answer = console.get(page)
        assert answer.status_code == 200 and not leaks(answer.text), page
    store.close()
    assert main(["approvals", "list", "--all", "--store", f"sqlite:///{tmp_path / 't.db'}"]) == 0
    listed = capsys.readouterr().out
    assert "[secret redacted]" in listed and not leaks(listed)
