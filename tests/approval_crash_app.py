"""An agent whose one transfer needs approval, run in processes that die on purpose.

``python tests/approval_crash_app.py run URL EFFECTS`` starts a session (it pauses for approval)
and prints its id; ``approve URL`` approves every pending request; ``resume URL EFFECTS SID
[POINT]`` resumes it and, with POINT, kills its own process (``os._exit``: no cleanup, like
``kill -9``) right after that point is durable:

- ``grant``: the ``approval.granted`` event is committed;
- ``consume``: the approval is marked used;
- ``start``: ``tool.started`` is committed (the transfer has not happened);
- ``effect``: the transfer happened (inside the tool), before its result is journaled;
- ``result``: the transfer's ``tool.result`` is committed.

It prints the stop reason, or ``busy ...`` when another worker holds the session. The transfer
appends a line to EFFECTS, so a test counts how often it really ran; with ``CRASH_APP_IDEMPOTENT``
set it is declared ``idempotent=True``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.base import SessionBusy, Store
from tether.store.opening import open_store
from tether.types import Event


class CrashingStore:
    """A real store that kills the process right after a chosen write is durable."""

    def __init__(self, inner: Store, point: str) -> None:
        self._inner, self._point = inner, point
        self.url = inner.url
        if hasattr(inner, "append_async"):  # PostgreSQL: appends go through its group commit
            self.append_async = self._append_async

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def append(self, session_id: str, events: Sequence[Event], *args: Any,
               **kwargs: Any) -> None:
        self._inner.append(session_id, events, *args, **kwargs)
        self._after(events)

    async def _append_async(self, session_id: str, events: Sequence[Event], *args: Any) -> None:
        await self._inner.append_async(session_id, events, *args)  # type: ignore[attr-defined]
        self._after(events)

    def _after(self, events: Sequence[Event]) -> None:
        kinds = {e.type for e in events}
        if (self._point == "grant" and "approval.granted" in kinds) or (
                self._point == "start" and "tool.started" in kinds) or (
                self._point == "result" and "tool.result" in kinds):
            os._exit(9)

    def update_approval(self, approval_id: str, expected_status: str,
                        changes: Mapping[str, Any]) -> bool:
        done = self._inner.update_approval(approval_id, expected_status, changes)
        if self._point == "consume" and changes.get("status") == "used":
            os._exit(9)
        return done


class NeedsApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "transfers need a person", "p")
        return Decision(Effect.ALLOW, "ok", "p")


def build(store: Any, effects: str, point: str = "", hold: float = 0.0,
          release: str = "") -> Agent:
    @tool(side_effect=True, idempotent=bool(os.environ.get("CRASH_APP_IDEMPOTENT")),
          timeout=90)
    def transfer(amount: int) -> str:
        """Move money."""
        time.sleep(hold)
        deadline = time.monotonic() + 60
        while release and not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.01)  # held until the test has seen what it waits for
        with open(effects, "a") as fh:
            fh.write(f"transfer {amount}\n")
        if point == "effect":
            os._exit(9)
        return f"moved {amount}"

    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("t1", "transfer",
                                                              {"amount": 250}),)), "moved it"])
    return Agent(model=model, reasoning=ReAct(), tools=[transfer], policy=NeedsApproval(),
                 store=store, name="treasury")


def main(argv: list[str]) -> None:
    command, url = argv[0], argv[1]
    if command == "approve":
        store = open_store(url)
        approvals = StoredApprovals(store)
        for request in approvals.pending():
            approvals.approve(request.id, approver="maria", note="ok")
        store.close()
        return
    effects = argv[2]
    if command == "run":
        session = build(url, effects).session("move 250")
        print(session.id, session.run().stop_reason.value, flush=True)
        return
    sid, point = argv[3], argv[4] if len(argv) > 4 else ""
    hold = float(os.environ.get("CRASH_APP_HOLD", "0"))
    store: Any = open_store(url)
    if point and point != "effect":
        store = CrashingStore(store, point)
    try:
        result = build(store, effects, point, hold,
                       os.environ.get("CRASH_APP_RELEASE", "")).resume(sid)
    except SessionBusy as busy:
        print("busy", busy, flush=True)
        return
    print(result.stop_reason.value, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
