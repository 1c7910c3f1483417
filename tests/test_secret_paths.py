"""A secret stays hidden whatever path it takes: in the credentialed tool's own output, in a
second tool's result in the same turn, in the model's text; raw, base64 (a Basic-auth header),
URL-encoded or hex. It must reach neither the model, nor the journal, the export, the trajectory,
nor the result."""

from __future__ import annotations

import base64
import io
import json
import urllib.parse

from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.credentials import CredentialBroker, ScopedToken
from tether.journal.views.export import write_jsonl

SECRET = "sk-live/Zq81xR0+pLm2vN7tB="
USER = "svc-billing"
FORMS = {
    "raw": SECRET,
    "basic auth": "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode(),
    "base64": base64.b64encode(SECRET.encode()).decode(),
    "url-safe base64, unpadded": base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
    "url-encoded": urllib.parse.quote(SECRET, safe=""),
    "hex": SECRET.encode().hex(),
    "HEX": SECRET.encode().hex().upper(),
}
LEAKS = [SECRET, *FORMS.values()]


def _agent(sent: list[ModelRequest], leak: str) -> Agent:
    @tool(egress=True)
    def fetch_invoice(invoice: str, credentials: ScopedToken) -> str:
        """Fetch an invoice (careless: it echoes its Authorization header)."""
        key = credentials.reveal()
        header = "Basic " + base64.b64encode(f"{USER}:{key}".encode()).decode()
        return f"fetched {invoice} with Authorization: {header}"

    @tool
    def debug_dump() -> str:
        """Dump debugging state (it has the secret by another way)."""
        return f"state: token={leak}"

    def respond(request: ModelRequest) -> ModelResponse | str:
        sent.append(request)
        turns = sum(1 for m in request.messages if m.role == "assistant")
        if turns == 0:
            return ModelResponse(tool_calls=(ToolCall("c1", "fetch_invoice", {"invoice": "I-1"}),
                                             ToolCall("c2", "debug_dump", {})))
        return f"done; for the record the key was {leak}"

    broker = CredentialBroker()
    broker.register("fetch_invoice", SECRET)
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(),
                 tools=[fetch_invoice, debug_dump], credentials=broker)


def _nowhere(text: str, where: str) -> None:
    for form in LEAKS:
        assert form not in text, f"a form of the secret ({form[:12]}...) leaked into {where}"


def test_every_form_of_the_secret_stays_hidden_on_every_path() -> None:
    for name, leak in FORMS.items():
        sent: list[ModelRequest] = []
        agent = _agent(sent, leak)
        session = agent.session("fetch invoice I-1")
        result = session.run()
        exported = io.StringIO()
        write_jsonl(session.replay(), exported)
        places = {
            "what the model was sent": repr([m for r in sent for m in r.messages]),
            "the journal": json.dumps([e.data for e in session.replay()]),
            "the export": exported.getvalue(),
            "the trajectory": repr(result.trajectory.steps),
            "the answer": result.answer,
        }
        for where, text in places.items():
            _nowhere(text, f"{where} ({name})")
        fetched, dumped = result.trajectory.steps[0].results
        assert "[secret redacted]" in fetched.content, name
        assert "[secret redacted]" in dumped.content, name
        assert "[secret redacted]" in result.answer, name
        assert session.verify() is None


def test_the_token_redacts_each_encoding_and_leaves_other_text_alone() -> None:
    token = ScopedToken(SECRET, session_id="s", tool="t")
    for name, form in FORMS.items():
        assert SECRET not in token.redact(f"x {form} y") and form not in token.redact(
            f"x {form} y"), name
    plain = "Basic " + base64.b64encode(b"svc-billing:not-the-secret").decode() + " deadbeef"
    assert token.redact(plain) == plain

