"""An approval across the rounds of one call (a caller answered in rounds: MCP 2026-07-28).

A call that asks its caller for input ends, and comes again with the answer as a new call. The
gateway carries the approval that admitted it to that next call — a new single-use approval of
exactly that call, decided ``carried`` — so one approval admits one completed call. A crash
between the carried request's two writes (made, then decided) leaves it undecided, saying where
it comes from, and the next round waits for a person: it fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tether import Decision, Effect, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import StoredApprovals
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.sqlite import SQLiteStore
from tether.tools.base import ToolContext
from tether.tools.caller import Elicited, InputNeeded

greeted: list[str] = []


class Rounds:
    """A caller that answers in rounds: the first ask of a call is answered on the next."""

    def __init__(self) -> None:
        self.answer: str | None = None
        self.asked = False

    async def log(self, level: Any, message: str, *, logger: str | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        return None

    async def sample(self, prompt: str, *, max_tokens: int, system_prompt: str | None = None,
                     key: str | None = None) -> str:
        raise NotImplementedError

    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     key: str | None = None) -> Elicited:
        if self.answer is None:
            self.asked = True
            raise InputNeeded("answered on the next round")
        return Elicited("accept", {"name": self.answer})


@tool(side_effect=True)
async def greet(context: ToolContext) -> str:
    """Greet the user by the name they give."""
    answer = await context.caller.elicit("Your name?", {"type": "object", "properties": {
        "name": {"type": "string"}}})
    greeted.append(str(answer.content["name"]))
    return f"Hello, {answer.content['name']}!"


class NeedsAPerson:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "greeting needs a person", "desk")


def gateway(store: SQLiteStore) -> Gateway:
    return Gateway([greet], policy=NeedsAPerson(), client="ide", store=store)


async def approved_round(store: SQLiteStore) -> tuple[Gateway, str]:
    """A first call held, approved by a person; the approval's id."""
    first = gateway(store)
    held = await first.call("greet", {})
    assert held.status == "denied" and "Approval required" in held.content
    (request,) = first.approvals.pending(first.id)
    first.approvals.approve(request.id, approver="maria")
    return first, request.id


async def test_an_approval_carries_to_the_next_round_and_is_used_once(tmp_path: Path) -> None:
    greeted.clear()
    store = SQLiteStore(tmp_path / "t.db")
    door, first = await approved_round(store)
    caller = Rounds()
    asking = await door.call("greet", {}, caller=caller)
    assert asking.status == "error" and caller.asked and greeted == []
    caller.answer, caller.asked = "Ada", False
    done = await door.call("greet", {}, caller=caller)  # the next round, no person asked
    assert done.status == "ok" and greeted == ["Ada"]
    again = await door.call("greet", {}, caller=caller)
    assert again.status == "denied" and greeted == ["Ada"]  # one approval, one completed call
    records = {r["id"]: r for r in store.list_approvals()}
    (carried,) = [r for r in records.values() if r.get("approver_auth") == "carried"]
    assert records[first]["status"] == "used" and carried["status"] == "used"
    assert carried["approver"] == "maria" and first in carried["note"]
    store.close()


async def test_a_call_that_does_not_ask_carries_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    door, _ = await approved_round(store)
    caller = Rounds()
    caller.answer = "Bo"  # answered at once: the call completes in one round
    assert (await door.call("greet", {}, caller=caller)).status == "ok"
    assert not [r for r in store.list_approvals() if r.get("approver_auth") == "carried"]
    assert (await door.call("greet", {}, caller=caller)).status == "denied"
    store.close()


async def test_a_crash_between_the_carried_requests_two_writes_fails_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    greeted.clear()
    store = SQLiteStore(tmp_path / "t.db")
    door, first = await approved_round(store)

    def crash(self: StoredApprovals, *args: Any, **kwargs: Any) -> Any:
        raise SystemExit("killed between the two writes")

    monkeypatch.setattr(StoredApprovals, "approve", crash)
    with pytest.raises(SystemExit):
        await door.call("greet", {}, caller=Rounds())
    monkeypatch.undo()
    restarted = gateway(store)  # another process on the same store
    caller = Rounds()
    caller.answer = "Cy"
    waiting = await restarted.call("greet", {}, caller=caller)
    assert waiting.status == "denied" and greeted == []
    orphans = [r for r in store.list_approvals(status="pending")
               if r.get("note") == f"to be carried from {first}"]
    assert len(orphans) == 1  # undecided, saying where it comes from, for a person to decide
    store.close()
