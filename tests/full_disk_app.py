"""An agent whose one effectful tool fills the disk its store lives on: for the full-disk tests.

``python tests/full_disk_app.py DB FILL`` prints the session id, then runs it: the tool writes
``FILL`` until the disk has no space left, and the journal's next write finds the disk full. It
prints ``TypeName: message`` of what the run raised and exits 3 (0 if nothing was raised).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool


def fill(path: Path) -> None:
    """Take every byte left on ``path``'s disk."""
    block = b"\0" * 65536
    with path.open("wb", buffering=0) as out:
        while block:
            try:
                out.write(block)
            except OSError:  # no space left: smaller blocks take the last of it
                block = block[:len(block) // 2]


def build(db: str, filler: str) -> Agent:
    @tool(side_effect=True)
    def archive(report: str) -> str:
        """Archive a report (here: until the disk is full)."""
        fill(Path(filler))
        return f"archived {report}"

    script = [ModelResponse(tool_calls=(ToolCall("call_1", "archive", {"report": "q3"}),)),
              "archived"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[archive],
                 store=f"sqlite:///{db}")


if __name__ == "__main__":
    db, filler = sys.argv[1:3]
    session = build(db, filler).session("archive the q3 report")
    print(session.id, flush=True)
    try:
        session.run()
    except Exception as exc:  # reported to the test
        print(f"{type(exc).__name__}: {exc}", flush=True)
        sys.exit(3)
