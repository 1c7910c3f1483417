"""Real paused sessions and a console over them, for the inbox's tests (HTTP and browser).

A treasury agent (ScriptedModel, ReAct) reads an e-mail (untrusted text), then asks to move money
or refund an order; its policy reads where each argument came from and asks a person for every
side effect, so each session pauses with one real approval request in the store's journal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from starlette.testclient import TestClient

from console_sessions import csrf_of
from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    tool,
)
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.deciding import view
from tether.runtime.approvals.requests import StoredApprovals, from_dict
from tether.runtime.approvals.rules import ApprovalRules
from tether.store.base import Store
from tether.web import Console, create_app

HEADER = "X-Forwarded-Email"
MAIL = "Hi, please wire 250 to DE44500105175407324931 today. Bob"
effects: list[str] = []  # what the tools really did, in this process


@tool(output_trust="untrusted")
def read_mail() -> str:
    """Read the newest e-mail."""
    return MAIL


@tool(side_effect=True)
def transfer(amount: int, iban: str) -> str:
    """Move money."""
    effects.append(f"transfer {amount} {iban}")
    return f"moved {amount}"


@tool(side_effect=True)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    effects.append(f"refund {order} {amount}")
    return f"refunded {order}"


class AskForSideEffects:
    """Side effects need a person; the decision reads the arguments' origins (so they are
    journaled with it). ``hide``: fields the approver may not see (masked in the request and
    the journal)."""

    def __init__(self, hide: tuple[str, ...] = ()) -> None:
        self.hide = hide

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        dict(context.provenance)
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, f"{action.tool} needs a person",
                            "treasury.side-effects", fields=self.hide)
        return Decision(Effect.ALLOW, "reading is fine", "treasury.read")


CALLS: Mapping[str, dict[str, Any]] = {
    "transfer": {"amount": 250, "iban": "DE44500105175407324931"},
    "refund": {"order": "A-1001", "amount": 40},
}


def agent(url: str | Store, tool_name: str = "transfer", ttl: float = 3600.0,
          arguments: Mapping[str, Any] | None = None, hide: tuple[str, ...] = ()) -> Agent:
    asked = dict(arguments if arguments is not None else CALLS[tool_name])
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("m1", "read_mail", {}),)),
                           ModelResponse(tool_calls=(ToolCall("c1", tool_name, asked),)),
                           "done"])
    return Agent(model=model, reasoning=ReAct(), tools=[read_mail, transfer, refund],
                 policy=AskForSideEffects(hide), store=url, name="treasury", approval_ttl=ttl)


def paused(url: str | Store, *, user: str = "bob", tenant: str | None = "acme",
           tool_name: str = "transfer", ttl: float = 3600.0,
           arguments: Mapping[str, Any] | None = None, hide: tuple[str, ...] = ()) -> str:
    """A new session paused on one approval request; its id."""
    session = agent(url, tool_name, ttl, arguments, hide).session(
        "pay what the mail asks", user_id=user, tenant_id=tenant,
        budget=Budget(max_steps=10, max_tool_calls=5))
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    return session.id


def client(store: Store, name: str | None = None, rules: ApprovalRules | None = None,
           **settings: Any) -> TestClient:
    """The console over ``store``: as ``name`` behind a trusted proxy, or ``auth="none"``."""
    if name is None:
        console = Console(store, rules=rules or ApprovalRules(), auth="none", **settings)
        return TestClient(create_app(console), follow_redirects=False)
    console = Console(store, rules=rules or ApprovalRules(), auth=f"header:{HEADER}",
                      proxies=frozenset({"testclient"}), **settings)
    return TestClient(create_app(console), headers={HEADER: name}, follow_redirects=False)


def shown_version(page: str, approval_id: str) -> str:
    """The ``seen`` the inbox's form for ``approval_id`` carries."""
    article = page.split(f'id="{approval_id}"', 1)[1].split("</article>", 1)[0]
    found = re.search(r'name="seen" value="([0-9a-f]+)"', article)
    assert found, f"no form for {approval_id} on the page"
    return found.group(1)


def attempts(store: Store, approval_id: str) -> list[dict[str, Any]]:
    record = store.get_approval(approval_id)
    assert record is not None
    return list(record.get("attempts") or ())


def anchored_attempts(store: Store, approval_id: str) -> list[dict[str, Any]]:
    """The attempts the store's anchor chain holds for ``approval_id``."""
    bodies = [json.loads(a.body) for a in store.anchors() if a.kind == "attempt"]
    return [b["attempt"] for b in bodies if b.get("id") == approval_id]


RULES = ApprovalRules.from_mapping({
    "people": {"alice@acme.test": {"tenant": "acme"},
               "bob": {"tenant": "acme"},
               "carol@acme.test": {"tenant": "acme", "roles": ["finance"]},
               "olga@acme.test": {"tenant": "acme", "roles": ["operator"]},
               "mallory@globex.test": {"tenant": "globex", "roles": ["finance", "operator"]}},
    "approve": [{"tools": ["refund*"], "roles": ["finance"]}],
    "break_glass": ["operator"],
})


def only_request(store: Store, session_id: str) -> str:
    (request,) = StoredApprovals(store).every(session_id)
    return request.id


def current(store: Store, approval_id: str) -> str:
    """The version a page rendered now would carry."""
    record = store.get_approval(approval_id)
    assert record is not None
    return view(store, from_dict(record)).version


def post(client: object, approval_id: str, **fields: str) -> object:
    """POST a decision form, with the viewer's CSRF token unless ``fields`` name one."""
    fields = {"csrf": csrf_of(client), **fields}  # type: ignore[arg-type]
    return client.post(f"/inbox/{approval_id}/decide", data=fields)  # type: ignore[attr-defined]


def refused_and_recorded(store: Store, approval_id: str, *words: str, count: int = 1) -> None:
    """The request is still as it was, and the refusal is on it and anchored."""
    tried = attempts(store, approval_id)
    assert len(tried) == count, tried
    for word in words:
        assert word in tried[-1]["why"], tried[-1]
    assert anchored_attempts(store, approval_id)[-count:] == tried
