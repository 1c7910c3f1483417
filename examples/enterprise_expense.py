"""An expense desk governed by a YAML policy: one scenario per effect.

Run it with ``python examples/enterprise_expense.py``. Each scenario is a scripted agent (no
model costs) calling the desk's tools; the policy in ``enterprise_expense.yaml`` decides each
call before it runs. The output shows what the model was told, what actually ran, and what the
journal kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import load_policy

POLICY = load_policy(Path(__file__).with_suffix(".yaml"))
LEDGER: list[dict[str, Any]] = []  # what the tools really did, for the demo's eyes only


@tool
def lookup_policy(topic: str) -> str:
    """Look up the company's expense policy on a topic."""
    return f"Policy on {topic}: receipts required above 25 EUR."


@tool(side_effect=True)
def submit_expense(employee: str, amount: int, category: str, notes: str = "") -> str:
    """File an expense claim."""
    LEDGER.append({"submit": employee, "amount": amount, "category": category, "notes": notes})
    return f"claim filed for {employee}: {amount} EUR ({category})"


@tool(side_effect=True, egress=True)
def reimburse(employee: str, amount: int, iban: str) -> dict[str, Any]:
    """Pay an employee back to their bank account."""
    LEDGER.append({"reimburse": employee, "amount": amount, "iban": iban})
    return {"status": "paid", "employee": employee, "amount": amount, "iban": iban}


@tool(side_effect=True, risk="critical")
def delete_ledger_entry(entry_id: str) -> str:
    """Delete an entry from the ledger."""
    LEDGER.append({"deleted": entry_id})
    return "deleted"


@tool(tags={"expensive"})
def audit_search(query: str) -> str:
    """Full-text search over every expense ever filed."""
    return f"full audit results for {query!r}"


@tool
def cached_search(query: str) -> str:
    """Search the cached expense index."""
    return f"cached index results for {query!r}"


TOOLS = [lookup_policy, submit_expense, reimburse, delete_ledger_entry, audit_search,
         cached_search]


def agent_calling(name: str, args: dict[str, Any]) -> Agent:
    turn = ModelResponse(tool_calls=(ToolCall("call_1", name, args),))
    return Agent(model=ScriptedModel([turn, "Done."]), reasoning=ReAct(), tools=TOOLS,
                 policy=POLICY, name="expense-desk")


def scenario(name: str, args: dict[str, Any], roles: tuple[str, ...] = ("clerk",),
             approve_as: str | None = None) -> dict[str, Any]:
    """Run one call through the desk; returns what happened, for printing and for tests."""
    LEDGER.clear()
    agent = agent_calling(name, args)
    session = agent.session(f"please {name}", user_id="u-17", roles=roles)
    result = session.run()
    paused_for = [r.to_dict() for r in session.pending_approvals()]
    if approve_as and paused_for:
        agent.approvals.approve(paused_for[0]["id"], approver=approve_as, note="checked receipt")
        result = session.resume()
    decisions = [e.data["decision"] for e in session.replay() if e.type == "tool.decision"]
    return {
        "effects": [d["effect"] for d in decisions],
        "rules": [d["policy_id"] for d in decisions],
        "model_saw": result.trajectory.steps[0].results[0].content,
        "ran": list(LEDGER),
        "paused_for": paused_for,
        "journal": json.dumps([e.data for e in session.replay()]),
        "stop_reason": result.stop_reason.value,
        "verified": session.verify() is None,
    }


SCENARIOS: dict[str, dict[str, Any]] = {
    "allow": {"name": "lookup_policy", "args": {"topic": "meals"}},
    "deny": {"name": "delete_ledger_entry", "args": {"entry_id": "E-1"}},
    "require_approval": {"name": "reimburse", "approve_as": "maria (manager)",
                         "args": {"employee": "sam", "amount": 900,
                                  "iban": "DE89370400440532013000"}},
    "partial_allow": {"name": "submit_expense",
                      "args": {"employee": "sam", "amount": 42, "category": "meals",
                               "notes": "dinner with my doctor about my diagnosis"}},
    "mask": {"name": "reimburse",
             "args": {"employee": "sam", "amount": 120, "iban": "DE89370400440532013000"}},
    "degrade": {"name": "audit_search", "args": {"query": "taxi"}},
}


def main() -> None:
    for effect, spec in SCENARIOS.items():
        outcome = scenario(**spec)
        print(f"== {effect}: {spec['name']}({spec['args']})")
        print(f"   decided:   {outcome['effects']} by {outcome['rules']}")
        if outcome["paused_for"]:
            shown = outcome["paused_for"][0]["arguments"]
            print(f"   paused:    approval asked with {shown}; approved, resumed")
        print(f"   model saw: {outcome['model_saw'][:110]}")
        print(f"   ran:       {outcome['ran']}")
        print(f"   outcome:   {outcome['stop_reason']}, journal verified: {outcome['verified']}")


if __name__ == "__main__":
    main()
