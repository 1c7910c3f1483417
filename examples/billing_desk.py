"""A billing desk whose sessions outlive the process that starts them.

Run ``python examples/billing_desk.py``: a scripted agent (no model costs) looks an order up and
pays its two invoices under ``policies/billing.yaml``. Paying INV-1 (250 EUR) needs a person, so
the session pauses, durably, in the store named by ``$TETHER_STORE`` (default
``sqlite:///tether.db``), and the process exits, printing the commands that decide and continue
it from any shell (the store named in each, so they work in a new shell too):

    tether approvals approve apr_... --store sqlite:///tether.db
    tether resume SESSION_ID --agent examples/billing_desk.py:agent --store sqlite:///tether.db
    tether audit show SESSION_ID --store sqlite:///tether.db

``agent`` has no store of its own: a command that names it (``tether run``, ``tether resume``)
gives it the command's store (``--store``, else ``$TETHER_STORE``); ``desk()`` is the same recipe
on ``$TETHER_STORE``, read when it is called. Importing this file reads no environment and opens
nothing.

The approved payment runs exactly once, in whichever process resumes the session.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import load_policy

PLAN: list[tuple[str, dict[str, Any]]] = [("lookup_order", {"order": "A1"}),
                                          ("pay", {"invoice": "INV-1", "amount": 250}),
                                          ("pay", {"invoice": "INV-2", "amount": 40})]


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"order {order}: invoices INV-1 (250 EUR) and INV-2 (40 EUR) are open"


@tool(side_effect=True)
def pay(invoice: str, amount: int) -> str:
    """Pay an invoice."""
    return f"paid {invoice}: {amount} EUR"


def plan(request: ModelRequest) -> ModelResponse | str:
    """The scripted model: the next step of PLAN, then the answer."""
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < len(PLAN):
        name, arguments = PLAN[done]
        return ModelResponse(tool_calls=(ToolCall(f"call_{done}", name, arguments),))
    return "Paid INV-1 and INV-2 for order A1."


agent = Agent(model=ScriptedModel(plan), reasoning=ReAct(), tools=[lookup_order, pay],
              policy=load_policy(Path(__file__).parent / "policies" / "billing.yaml"),
              name="billing-desk")


def desk(url: str | None = None) -> Agent:
    """The desk journaling to ``url``, else ``$TETHER_STORE``, else ``sqlite:///tether.db``
    (read when called, not at import), its approvals kept in that store too."""
    from tether.store import open_store

    return agent.with_store(open_store(url or store_url()))


def store_url() -> str:
    return os.environ.get("TETHER_STORE") or "sqlite:///tether.db"


def main() -> None:
    url = store_url()
    session = desk(url).session("Pay the open invoices of order A1", user_id="u-7",
                               tenant_id="acme", roles=["clerk"])
    result = session.run()
    print(f"session {session.id}: {result.stop_reason}")
    recipe = f"{os.path.relpath(__file__)}:agent"  # as named from where this was started
    for request in session.pending_approvals():
        print(f"waiting: {request.id} {request.tool} {dict(request.arguments)}")
        print(f"next: tether approvals approve {request.id} --store {url}")
    if session.paused:
        print(f"next: tether resume {session.id} --agent {recipe} --store {url}")


if __name__ == "__main__":
    main()
