"""A thread continued in another process keeps hidden what its earlier turn hid.

The seam: secrets across a resume (broker redactors, keyed fingerprints) and threads (a new
session is shown the earlier turns, read from their journals) were fixed apart. A turn that was
issued a secret a tool echoed, and that masked a card number, answers with both; the next turn
of the thread, run by another recipe object on the same store (as another process would), must
show the model neither, and journal neither in its start's history — even when the first turn
paused for approval and was resumed by a third recipe object before it ended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.credentials import CredentialBroker, ScopedToken
from tether.policy import Action, Context, Resource, Subject
from tether.store.sqlite import SQLiteStore
from tether.types import ModelRequest

SECRET = "sk-live-SUPERSECRET-123456"
CARD = "4111111111111111"


@tool
def get_key(credentials: ScopedToken | None) -> str:
    """The API key (a careless tool: it echoes it)."""
    assert credentials is not None
    return "key is " + credentials.reveal("get_key")


@tool(side_effect=True)
def pay(card_number: str) -> str:
    """Pay with a card."""
    return "paid with " + card_number


class MaskCards:
    inline = True

    def __init__(self, approve: bool) -> None:
        self.approve = approve

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "pay" and self.approve:
            return Decision(Effect.REQUIRE_APPROVAL, "a person checks payments", "cards")
        if action.tool == "pay":
            return Decision(Effect.MASK, "card", "cards", fields=("card_number",),
                            mask_in=("journal", "output"))
        return Decision(Effect.ALLOW, "ok", "cards")


def recipe(path: Path, seen: list[str], approve: bool = False) -> Agent:
    broker = CredentialBroker()
    broker.register("get_key", SECRET, max_uses=5)

    def respond(request: ModelRequest) -> Any:
        seen.append(json.dumps([m.content for m in request.messages]))
        last = request.messages[-1]
        if last.role == "user" and "pay" in last.content:
            return ModelResponse(tool_calls=(ToolCall("k", "get_key", {}),
                                             ToolCall("p", "pay", {"card_number": CARD})))
        if last.role == "tool":
            return f"the key {SECRET} and the card {CARD}"
        return "earlier: " + " ".join(m.content for m in request.messages
                                      if m.role == "assistant")

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[get_key, pay],
                 policy=MaskCards(approve), credentials=broker, store=SQLiteStore(path / "t.db"))


def journals(path: Path, *sessions: str) -> str:
    store = SQLiteStore(path / "t.db")
    return "\n".join(json.dumps(e.data) for s in sessions for e in store.read(s))


def test_the_next_turn_of_a_thread_shows_no_secret_or_masked_value(tmp_path: Path) -> None:
    seen: list[str] = []
    first = recipe(tmp_path, seen).run("pay the invoice", user_id="ada", thread="t")
    seen.clear()
    second = recipe(tmp_path, seen).run("what did you say?", user_id="ada", thread="t")
    assert "[masked]" in second.answer and "[secret redacted]" in second.answer
    assert not any(SECRET in s or CARD in s for s in seen)
    text = journals(tmp_path, first.session_id, second.session_id)
    assert SECRET not in text and CARD not in text


def test_a_turn_resumed_elsewhere_before_it_ended_is_shown_hidden_too(tmp_path: Path) -> None:
    seen: list[str] = []
    session = recipe(tmp_path, seen, approve=True).session("pay the invoice", user_id="ada",
                                                           thread="t")
    assert session.run().stop_reason.value == "needs_approval"
    resumer = recipe(tmp_path, seen)  # another process: a person approves the payment
    [request] = resumer.approval_store.pending(session.id)
    resumer.approval_store.approve(request.id, approver="ops")
    resumer_session = recipe(tmp_path, seen, approve=True).load(session.id)
    assert resumer_session.resume().stop_reason.value == "finished"
    seen.clear()
    second = recipe(tmp_path, seen).run("what did you say?", user_id="ada", thread="t")
    assert "[secret redacted]" in second.answer
    assert not any(SECRET in s for s in seen)
    assert SECRET not in journals(tmp_path, session.id, second.session_id)
