"""An agent whose tool kills its own process mid-call, once: for the resume tests.

``python tests/crash_app.py run DB MARKER idempotent|effectful [TENANT]`` prints the session id
and dies inside the tool on the first call; ``resume DB MARKER KIND SESSION`` continues it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool


def build(db: str, marker: str, kind: str) -> Agent:
    @tool(side_effect=True, idempotent=kind == "idempotent")
    def charge(order: str) -> str:
        """Charge an order (dies the first time, mid-call)."""
        path = Path(marker)
        first = not path.exists()
        with path.open("a") as fh:
            fh.write(f"{order}\n")
        if first:
            os._exit(9)
        return f"charged {order} ({len(path.read_text().split())} attempts)"

    script = [ModelResponse(tool_calls=(ToolCall("call_1", "charge", {"order": "o-1"}),)),
              "charged"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[charge],
                 store=f"sqlite:///{db}")


if __name__ == "__main__":
    command, db, marker, kind = sys.argv[1:5]
    agent = build(db, marker, kind)
    if command == "run":
        tenant = sys.argv[5] if len(sys.argv) > 5 else None
        session = agent.session("charge o-1", tenant_id=tenant)
        print(session.id, flush=True)
        session.run()
    else:
        result = agent.resume(sys.argv[5])
        results = result.trajectory.steps[0].results
        print(result.stop_reason.value, results[0].content if results else "", flush=True)
