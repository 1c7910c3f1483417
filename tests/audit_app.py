"""An Agent recipe for the CLI tests: ``tether resume ID --agent tests/audit_app.py:agent``.

A billing agent under a YAML policy: it looks an order up, pays INV-1 (250, over the approval
limit), pays INV-2 (40; the policy masks its account number in the journal), then answers. The
``pay`` tool appends a line (invoice and account) to the file named by ``$AUDIT_APP_EFFECTS``, so
tests can count effects and see what each was paid with; with ``$AUDIT_APP_CRASH_ON`` set to an
invoice, the process dies (``os._exit``) right after that payment, leaving a started call with
no result — a crash mid-effect.

``agent`` has no store, so the CLI gives it the one named by ``--store``; ``build(url)`` makes
one with a store, for starting sessions. ``python tests/audit_app.py run URL`` starts a session
and prints its id and stop reason.
"""

from __future__ import annotations

import os
import sys

from tether import Agent, ModelRequest, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import YamlPolicy

POLICY_YAML = """\
version: 1
policy_id: billing
default: deny
rules:
  - id: big-payments-need-approval
    priority: 100
    effect: require_approval
    reason: payments over 100 need a person
    when: {tool: pay, args: {amount: {gt: 100}}}
  - id: account-numbers-stay-out-of-the-journal
    effect: mask
    reason: account numbers stay out of the journal
    fields: [account]
    mask_in: [journal]
    when: {tool: pay}
  - id: reading
    effect: allow
    when: {tool: lookup}
"""

STRICT_YAML = """\
version: 1
policy_id: strict
default: deny
rules:
  - id: no-payments-over-30
    priority: 100
    effect: deny
    reason: payments over 30 are frozen
    when: {tool: pay, args: {amount: {gt: 30}}}
  - id: reading
    effect: allow
    when: {tool: lookup}
"""

SCRIPT: list[tuple[str, dict[str, object]]] = [
    ("lookup", {"order": "A1"}),
    ("pay", {"invoice": "INV-1", "amount": 250, "account": "ACCT-111-222"}),
    ("pay", {"invoice": "INV-2", "amount": 40, "account": "ACCT-333-444"}),
]
ANSWER = "Paid INV-1 and INV-2 for order A1."


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: invoices INV-1 (250) and INV-2 (40) are open"


@tool(side_effect=True)
def pay(invoice: str, amount: int, account: str) -> str:
    """Pay an invoice from an account."""
    effects = os.environ.get("AUDIT_APP_EFFECTS")
    if effects:
        with open(effects, "a") as fh:
            fh.write(f"{invoice} {account}\n")
    if os.environ.get("AUDIT_APP_CRASH_ON") == invoice:
        os._exit(3)  # the effect happened; the process dies before its result is journaled
    return f"paid {invoice}: {amount}"


def respond(request: ModelRequest) -> ModelResponse | str:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < len(SCRIPT):
        name, arguments = SCRIPT[done]
        return ModelResponse(tool_calls=(ToolCall(f"c{done}", name, arguments),))
    return ANSWER


def build(store: str | None = None, policy_yaml: str = POLICY_YAML, *,
          keep_hidden_arguments: bool = False) -> Agent:
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[lookup, pay],
                 policy=YamlPolicy.from_string(policy_yaml, "billing.yaml"), name="billing",
                 store=store, keep_hidden_arguments=keep_hidden_arguments)


agent = build()


def start(store: str, *, tenant: str = "acme") -> tuple[str, str]:
    """Start a session in ``store``; returns its id and stop reason (``needs_approval``)."""
    session = build(store).session("Pay the open invoices of order A1", user_id="u-7",
                                   tenant_id=tenant, roles=["clerk"], context={"channel": "cli"})
    result = session.run()
    return session.id, result.stop_reason.value


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        print(*start(sys.argv[2]), flush=True)
