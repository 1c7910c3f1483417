"""A recipe for ``tether run`` / ``tether resume`` that stops where a test wants to signal it.

The model asks, in one turn, for ``peek`` (read-only) and then ``slow_write`` (a side effect,
run alone after ``peek``), then answers. ``INTERRUPT_DIR`` holds ``effects.txt`` (one line per
real write) and ``ready`` (written when the run reaches the point named by ``INTERRUPT_AT``, where
it then waits until the process is signalled or killed):

- ``before``: inside ``peek``, before the side-effecting call started;
- ``start``: inside ``slow_write`` (``tool.started`` is durable), before it writes;
- ``during``: inside ``slow_write``, after it wrote, before it returns;
- unset: nothing waits (a resume).

``slow_write`` runs on a worker thread (a plain function) — on the event loop's thread, holding
it, with ``INTERRUPT_INLINE`` set — and ``peek`` on the event loop (async).
With ``INTERRUPT_HOLD_PAUSE`` set to the store's URL, the recipe writes its journal there through
a store that, as it writes the pause, creates ``pausing`` and holds until ``go`` exists: a test
signals the process again inside the pause.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.store.base import Store
from tether.store.opening import open_store
from tether.types import Event


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


@tool(side_effect=True, timeout=600, inline=bool(os.environ.get("INTERRUPT_INLINE")))
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


class HoldingStore:
    """A real store that holds inside the write of a pause until the test says go."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.url = inner.url

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def append(self, session_id: str, events: Sequence[Event], *args: Any) -> None:
        if any(e.type == "session.paused" for e in events):
            (_here() / "pausing").write_text("")
            while not (_here() / "go").exists():  # the test signals the process meanwhile
                time.sleep(0.01)
        self._inner.append(session_id, events, *args)


def agent() -> Agent:
    script = [ModelResponse(tool_calls=(ToolCall("call_0", "peek", {}),
                                        ToolCall("call_1", "slow_write", {"text": "ran 500"}))),
              "wrote it"]
    held = os.environ.get("INTERRUPT_HOLD_PAUSE")
    store: Any = HoldingStore(open_store(held)) if held else None
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[peek, slow_write],
                 name="ledger", store=store)


if __name__ == "__main__":  # ``python interrupt_app.py STORE``: session.run() from Python
    import sys

    session = agent().with_store(open_store(sys.argv[1])).session("write ran 500")
    try:
        session.run()
    except KeyboardInterrupt:  # Ctrl-C in a Python program: it raises, after the pause
        last = session.replay()[-1]
        print("KeyboardInterrupt", session.paused, last.type, last.data["reason"], flush=True)
