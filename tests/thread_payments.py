"""A payment that waits for a person, on a thread: the tool and the policy the thread tests pause
a continuing session with (imported by those tests, and by the other process one of them
starts)."""

from __future__ import annotations

from typing import Any

from tether import Decision, Effect, tool


@tool(side_effect=True)
def pay(account: str) -> str:
    """Pay an account."""
    return f"paid {account}"


class PaymentsNeedApproval:
    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Any:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "payments need a human", "approvals")
        return Decision(Effect.ALLOW, "ok", "approvals")
