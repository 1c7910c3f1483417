"""Real sessions for the console's page tests (timeline, compare, what-if): small scripted
agents on a real store, and a console app over it."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.rules import ApprovalRules, Person
from tether.store.base import Store
from tether.web import Console, create_app

PEOPLE = {"ops": Person(), "alice": Person("acme", frozenset({"treasurer"})),
          "bob": Person("globex")}


@tool(side_effect=True)
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
