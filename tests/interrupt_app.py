"""A recipe for ``tether run`` / ``tether resume`` that stops where a test wants to signal it.

The model asks, in one turn, for ``peek`` (read-only) and then ``slow_write`` (a side effect,
run alone after ``peek``), then answers. ``INTERRUPT_DIR`` holds ``effects.txt`` (one line per
real write) and ``ready`` (written when the run reaches the point named by ``INTERRUPT_AT``, where
it then waits until the process is signalled or killed):

- ``before``: inside ``peek``, before the side-effecting call started;
- ``start``: inside ``slow_write`` (``tool.started`` is durable), before it writes;
- ``during``: inside ``slow_write``, after it wrote, before it returns;
- unset: nothing waits (a resume).

``slow_write`` runs on a worker thread (a plain function), ``peek`` on the event loop (async).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool


def _here() -> Path:
    return Path(os.environ["INTERRUPT_DIR"])


def _ready() -> None:
    (_here() / "ready").write_text(os.environ.get("INTERRUPT_AT", ""))


@tool(timeout=600)
async def peek() -> str:
    """Look at the ledger (read-only)."""
    if os.environ.get("INTERRUPT_AT") == "before":
        _ready()
        await asyncio.Event().wait()  # until the run is interrupted
    return "the ledger is empty"


@tool(side_effect=True, timeout=600)
def slow_write(text: str) -> str:
    """Write a line to the ledger (slowly)."""
    at = os.environ.get("INTERRUPT_AT")
    if at == "start":
        _ready()
        threading.Event().wait()  # until the process ends: the write never happens
    with (_here() / "effects.txt").open("a") as fh:
        fh.write(f"{text}\n")
    if at == "during":
        _ready()
        threading.Event().wait()  # the write happened; the result never arrives
    return f"wrote {text}"


def agent() -> Agent:
    script = [ModelResponse(tool_calls=(ToolCall("call_0", "peek", {}),
                                        ToolCall("call_1", "slow_write", {"text": "ran 500"}))),
              "wrote it"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[peek, slow_write],
                 name="ledger")
