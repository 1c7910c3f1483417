"""Real sessions for the console's page tests (timeline, compare, what-if): small scripted
agents on a real store, and a console app over it."""

from __future__ import annotations

import re
from typing import Any

from starlette.testclient import TestClient

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.rules import ApprovalRules, Person
from tether.store.base import Store
from tether.web import Console, create_app

PEOPLE = {"ops": Person(), "alice": Person("acme", frozenset({"treasurer"})),
          "bob": Person("globex")}


@tool(side_effect=True, intents=["move", "transfer"])
def transfer(amount: int, to: str) -> str:
    """Move money."""
    return f"moved {amount} to {to}"


@tool
def lookup(account: str) -> str:
    """Look an account up."""
    return f"account {account}: open"


class ApproveTransfers:
    """Transfers wait for a person; everything else is allowed."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "transfer":
            return Decision(Effect.REQUIRE_APPROVAL, "a person approves transfers",
                            "treasury-approvals")
        return Decision(Effect.ALLOW, "lookups are fine", "treasury-lookups")


def script() -> list[ModelResponse | str]:
    return [ModelResponse("checking the account first",
                          (ToolCall("c1", "lookup", {"account": "ACME-7"}),)),
            ModelResponse(tool_calls=(ToolCall("c2", "transfer",
                                               {"amount": 900, "to": "ACME-7"}),)),
            "moved it"]


def treasury(url: str | Store, tenant: str | None = None, **options: Any) -> Agent:
    """The treasury agent: looks the account up, then transfers (which waits for a person)."""
    return Agent(model=ScriptedModel(script()), reasoning=ReAct(), tools=[lookup, transfer],
                 policy=options.pop("policy", ApproveTransfers()), store=url, tenant_id=tenant,
                 name="treasury", **options)


def client(store: Store, **settings: Any) -> TestClient:
    """A console over ``store``: ``auth="none"`` unless told, header auth trusting the test
    client's address."""
    settings.setdefault("auth", "none")
    if settings["auth"].startswith("header:"):
        settings.setdefault("proxies", frozenset({"testclient"}))
        settings.setdefault("rules", ApprovalRules(people=PEOPLE))
    return TestClient(create_app(Console(store, **settings)))


@tool(side_effect=True)
def refund(order_id: str, amount_cents: int) -> str:
    """Refund part or all of an order."""
    return f"refunded {amount_cents} cents on {order_id}"


def slipping_agent(store: str | Store) -> Agent:
    """Refunds order A1 in full on its first trial and only in part on the next: two trials of
    one task that part at their first call."""
    asked: list[int] = []

    def respond(request: Any) -> ModelResponse | str:
        if any(m.role == "tool" for m in request.messages):
            return "Done: " + request.messages[-1].content
        asked.append(1)
        amount = 12000 if len(asked) % 2 else 5000
        return ModelResponse(tool_calls=(ToolCall("c1", "refund", {"order_id": "A1",
                                                                    "amount_cents": amount}),))

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[refund], store=store,
                 name="refunds")


def refunded_in_full(outcome: Any) -> bool:
    return any(c.tool == "refund" and c.ran and c.arguments == {"order_id": "A1",
                                                                "amount_cents": 12000}
               for c in outcome.calls)


def evaluation(store: str | Store) -> Any:
    """Two trials of one refund task on ``store``: the first passes, the second fails."""
    from tether.evals import Task, evaluate

    return evaluate(slipping_agent(store), [Task("Refund order A1 in full",
                                                 grader=refunded_in_full)],
                    k=2, seed=3, name="refunds", concurrency=1)


def csrf_of(client: TestClient, page: str = "/inbox") -> str:
    """The CSRF token the console gives this client's viewer (every page's csrf-token meta)."""
    text = client.get(page).text
    found = re.search(r'<meta name="csrf-token" content="([^"]*)">', text)
    assert found is not None, text[:300]
    return found.group(1)


def post_form(client: TestClient, path: str, data: dict[str, str]) -> Any:
    """POST ``data`` to ``path`` as the page's own form would: with the viewer's CSRF token."""
    return client.post(path, data={"csrf": csrf_of(client, path), **data})
