"""A fleet worker that cannot hide what a session hid does not run it, and says so.

The seam: secrets across a resume (masked values as keyed fingerprints, ``HiddenNotRecalled``
when this process has another redaction key) and fleet statuses. A session masked a card
number and paused for approval; a worker started with another ``TETHER_REDACTION_KEY`` wakes
it. Its activation (the body every fleet workflow runs, ``tether.durable.activation``) must
refuse before it appends anything, the status must be ``failed`` with an error naming the key
(not ``paused``, not a traceback without a name), and the worker mended must finish it with the
card still masked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.durable.activation import activate
from tether.durable.status import Attempt, describe
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.provenance.recalled import HiddenNotRecalled
from tether.store.sqlite import SQLiteStore

CARD = "4111111111111111"


@tool
def card_on_file(card_number: str) -> str:
    """Check a card."""
    return f"card {card_number} is valid"


@tool(side_effect=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


class Rules:
    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "card_on_file":
            return Decision(Effect.MASK, "card", "rules", fields=("card_number",),
                            mask_in=("journal", "output"))
        return Decision(Effect.REQUIRE_APPROVAL, "a person checks payments", "rules")


def recipe(path: Path) -> Agent:
    def respond(request: Any) -> Any:
        tools_done = sum(1 for m in request.messages if m.role == "tool")
        if tools_done == 0:
            return ModelResponse(tool_calls=(ToolCall("c1", "card_on_file",
                                                      {"card_number": CARD}),))
        if tools_done == 1:
            return ModelResponse(tool_calls=(ToolCall("c2", "pay", {"amount": 5}),))
        return f"paid with {CARD}"

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[card_on_file, pay],
                 policy=Rules(), store=SQLiteStore(path / "fleet.db"))


def test_a_worker_with_another_redaction_key_fails_the_session_and_can_wake_it_mended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_REDACTION_KEY", "the fleet's key")
    agent = recipe(tmp_path)
    assert activate(agent, "s1", "check the card and pay") == "needs_approval"
    [request] = agent.approval_store.pending("s1")
    agent.approval_store.approve(request.id, approver="ops")
    store = SQLiteStore(tmp_path / "fleet.db")
    before = store.read("s1")

    monkeypatch.setenv("TETHER_REDACTION_KEY", "a worker set up wrong")
    with pytest.raises(HiddenNotRecalled) as refused:
        activate(recipe(tmp_path), "s1")
    assert store.read("s1") == before  # nothing appended by the worker that refused
    error = f"{type(refused.value).__name__}: {refused.value}"
    report = describe("s1", before, 0, [Attempt("SUCCESS"), Attempt("ERROR", error)])
    assert report.status == "failed" and "TETHER_REDACTION_KEY" in report.detail

    monkeypatch.setenv("TETHER_REDACTION_KEY", "the fleet's key")  # the worker mended
    assert activate(recipe(tmp_path), "s1") == "finished"
    text = "\n".join(json.dumps(e.data) for e in store.read("s1"))
    assert CARD not in text and "paid with [masked]" in text
