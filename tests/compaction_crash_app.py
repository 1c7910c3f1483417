"""A compacting agent whose process dies once: right after a compaction (``after``: at the
model call that follows it) or during the summary call (``during``).
``run DB OUT after|during`` / ``resume DB OUT ID``; every main request is appended to OUT."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tether import (
    Agent,
    Compaction,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.models.base import compacted_turns


@tool
def lookup(n: int) -> str:
    """Look up record n."""
    return f"record {n}: " + "x" * 400


def build(db: str, out: str, where: str) -> Agent:
    marker = Path(out + ".died")
    script = [ModelResponse(tool_calls=(ToolCall(f"c{i}", "lookup", {"n": i}),))
              for i in range(8)] + ["done"]

    def respond(request: ModelRequest) -> ModelResponse | str:
        messages = request.messages
        earlier = compacted_turns(messages[2]) if len(messages) > 2 else 0
        die = where == "after" and earlier > 0 and not marker.exists()
        with open(out, "a") as f:
            f.write(json.dumps({"died": die, "messages": [m.to_dict() for m in messages]})
                    + "\n")
        if die:
            marker.write_text("died")
            os._exit(9)
        return script[earlier + sum(m.role == "assistant" for m in messages)]

    def summarise(request: ModelRequest) -> str:
        if where == "during" and not marker.exists():
            marker.write_text("died")
            os._exit(9)
        return "records 0-5 looked up"

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[lookup],
                 store=f"sqlite:///{db}",
                 compaction=Compaction(context_window=1200, keep_last=2,
                                       model=ScriptedModel(summarise, name="summariser")))


if __name__ == "__main__":
    command, db, out = sys.argv[1:4]
    if command == "run":
        agent = build(db, out, sys.argv[4])
        session = agent.session("look up the records")
        print(session.id, flush=True)
        session.run()
    else:
        result = build(db, out, "").resume(sys.argv[4])
        print(result.stop_reason.value, result.spend.steps, flush=True)
