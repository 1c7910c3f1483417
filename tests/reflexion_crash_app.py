"""A Reflexion agent (self-critique, three attempts) whose process dies once, inside the model
call of one phase: ``run DB MARKER PHASE:ATTEMPT`` (``attempt``, ``critique`` or ``reflect``,
e.g. ``critique:1``; with ``graded``, also ``tool:N``) prints the session id and dies there; the
test resumes it with ``build``.

The model is a function of what it is sent, so the resuming process answers as the dead one
would have: attempt k answers ``answer k``, the critique passes only ``answer 3``, the
reflection after attempt k is ``reflection after k``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tether import Agent, ModelRequest, ModelResponse, ScriptedModel, ToolCall, tool
from tether.reasoning.graders import all_of, called, contains
from tether.reasoning.reflexion import (
    CRITIQUE_NOTE,
    Evaluator,
    GraderCheck,
    Reflexion,
    SelfCritique,
)

RETRIED = "Now try the task again"


def respond(request: ModelRequest, die_at: str, marker: Path,
            looks_up: bool = False) -> ModelResponse | str:
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
    if looks_up and not any(m.role == "tool" and m.content == f"fact {attempt}"
                            for m in messages):
        return ModelResponse(tool_calls=(ToolCall("", "lookup", {"n": attempt}),))
    return f"answer {attempt}"


def build(db: str, marker: str, die_at: str = "", graded: bool = False) -> Agent:
    """``graded``: each attempt looks a fact up first (``tool:N`` dies inside attempt N's
    lookup), and a grader passes only an attempt that looked fact 3 up and answered 3."""
    died = Path(marker)

    @tool
    def lookup(n: int) -> str:
        """Look fact n up."""
        if die_at == f"tool:{n}" and not died.exists():
            died.write_text("died")
            os._exit(9)
        return f"fact {n}"

    model = ScriptedModel(lambda request: respond(request, die_at, died, graded))
    evaluator: Evaluator = GraderCheck(all_of(called("lookup", n=3), contains("answer 3"))) \
        if graded else SelfCritique()
    return Agent(model=model, reasoning=Reflexion(evaluator=evaluator, max_attempts=3),
                 tools=[lookup] if graded else [], store=f"sqlite:///{db}")


if __name__ == "__main__":
    command, db, marker, die_at = sys.argv[1:5]
    graded = sys.argv[5:] == ["graded"]
    session = build(db, marker, die_at, graded).session("Name the third answer.")
    print(session.id, flush=True)
    session.run()
