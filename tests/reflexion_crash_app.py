"""A Reflexion agent (self-critique, three attempts) whose process dies once, inside the model
call of one phase: ``run DB MARKER PHASE:ATTEMPT`` (``attempt``, ``critique`` or ``reflect``,
e.g. ``critique:1``) prints the session id and dies there; the test resumes it with ``build``.

The model is a function of what it is sent, so the resuming process answers as the dead one
would have: attempt k answers ``answer k``, the critique passes only ``answer 3``, the
reflection after attempt k is ``reflection after k``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tether import Agent, ModelRequest, ScriptedModel
from tether.reasoning.reflexion import CRITIQUE_NOTE, Reflexion, SelfCritique

RETRIED = "Now try the task again"


def respond(request: ModelRequest, die_at: str, marker: Path) -> str:
    messages = request.messages
    attempt = 1 + sum(m.role == "user" and RETRIED in m.content for m in messages)
    last = messages[-1].content
    phase = ("critique" if CRITIQUE_NOTE in last else
             "reflect" if last.startswith("That attempt failed") else "attempt")
    if f"{phase}:{attempt}" == die_at and not marker.exists():
        marker.write_text("died")
        os._exit(9)
    if phase == "critique":
        judged = next(m.content for m in reversed(messages) if m.role == "assistant")
        return "PASS the answer is right" if judged == "answer 3" else f"FAIL {judged} is wrong"
    if phase == "reflect":
        return f"reflection after {attempt}"
    return f"answer {attempt}"


def build(db: str, marker: str, die_at: str = "") -> Agent:
    model = ScriptedModel(lambda request: respond(request, die_at, Path(marker)))
    return Agent(model=model, reasoning=Reflexion(evaluator=SelfCritique(), max_attempts=3),
                 store=f"sqlite:///{db}")


if __name__ == "__main__":
    command, db, marker, die_at = sys.argv[1:5]
    session = build(db, marker, die_at).session("Name the third answer.")
    print(session.id, flush=True)
    session.run()
