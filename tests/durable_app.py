"""A small agent used by the durability tests from separate processes.

``python tests/durable_app.py run DB EFFECTS N`` starts a session that appends N effects to the
EFFECTS file through a side-effecting tool, printing the session id first; ``resume DB EFFECTS ID``
continues it; ``approve DB`` approves every pending approval; ``settle DB EFFECTS ID`` settles
interrupted calls the way an operator would (looking at the effects file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tether import (
    Agent,
    Decision,
    Effect,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.policy import Action, Context, Resource, Subject


def build(db: str, effects: str, n: int = 0, *, approve_big: bool = False) -> Agent:
    @tool(side_effect=True)
    def append_effect(n: int) -> str:
        """Append one effect line to the effects file."""
        time.sleep(0.01)
        with open(effects, "a") as fh:
            fh.write(f"effect-{n}\n")
            fh.flush()
        time.sleep(0.01)
        return f"appended effect-{n}"

    def respond(request: ModelRequest) -> ModelResponse | str:
        done = sum(1 for m in request.messages if m.role == "tool")
        time.sleep(0.005)
        if done < n:
            return ModelResponse(tool_calls=(ToolCall(f"c{done}", "append_effect", {"n": done}),))
        return f"appended {n} effects"

    class BigNeedsApproval:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if approve_big and action.arguments.get("n") == 1:
                return Decision(Effect.REQUIRE_APPROVAL, "effect 1 needs a person", "p")
            return Decision(Effect.ALLOW, "ok", "p")

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[append_effect],
                 policy=BigNeedsApproval(), store=f"sqlite:///{db}", name="durable")


def main(argv: list[str]) -> None:
    command, db = argv[0], argv[1]
    if command == "run":
        effects, n = argv[2], int(argv[3])
        agent = build(db, effects, n, approve_big=len(argv) > 4)
        session = agent.session("append effects")
        print(session.id, flush=True)
        result = session.run()
        print(result.stop_reason.value, flush=True)
    elif command == "resume":
        effects, session_id = argv[2], argv[3]
        n = int(argv[4]) if len(argv) > 4 else 0
        result = build(db, effects, n).resume(session_id)
        print(result.stop_reason.value, flush=True)
    elif command == "approve":
        agent = build(db, "/dev/null")
        for request in agent.approval_store.pending():
            agent.approval_store.approve(request.id, approver="ops", note="from another process")
            print(request.id, flush=True)
    elif command == "settle":
        effects, session_id = argv[2], argv[3]
        agent = build(db, effects)
        session = agent.load(session_id)
        done = Path(effects).read_text().split() if Path(effects).exists() else []
        for call_id in sorted(session._state.started - set(session._state.results)):
            n = int(call_id[1:])
            action = "skip" if f"effect-{n}" in done else "retry"
            session.settle(call_id, action, operator="ops", note="checked the file")
            print(call_id, action, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
