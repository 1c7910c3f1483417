"""An agent whose model process dies mid-call once: ``run DB MARKER`` / ``resume DB MARKER ID``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tether import Agent, Budget, ModelRequest, ReAct, ScriptedModel


def build(db: str, marker: str) -> Agent:
    def respond(request: ModelRequest) -> str:
        if not Path(marker).exists():
            Path(marker).write_text("billed once")
            os._exit(9)  # the provider billed the call; the answer never arrived
        return "the answer"

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), store=f"sqlite:///{db}",
                 budget=Budget(max_tokens=2000))


if __name__ == "__main__":
    command, db, marker = sys.argv[1:4]
    agent = build(db, marker)
    if command == "run":
        session = agent.session("answer me")
        print(session.id, flush=True)
        session.run()
    else:
        result = agent.resume(sys.argv[4])
        print(result.stop_reason.value, result.spend.steps, result.spend.tokens, flush=True)
