"""The halt's fleet harness: sessions of two tenants calling a side-effecting tool turn after turn,
the tool writing evidence of each run outside the journal; and the check of the halt's guarantee.

``python tests/halt_fleet.py URL EVIDENCE SESSIONS STEPS`` runs SESSIONS sessions at once (even
ones of tenant ``a``, odd ones ``b``) on the store at URL, each ``pay`` writing a line
``SESSION CALL`` to the file EVIDENCE, and prints each session's id and stop reason at the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.journal.verify import verify_chain
from tether.runtime.chokepoint.halts import BOUND
from tether.store.halts import Halt
from tether.tools.base import ToolContext

Record = Callable[[str, str], None]  # (session id, call id): a side effect ran


def agent(store: Any, record: Record, name: str = "fleet", max_steps: int = 100) -> Agent:
    """An agent whose sessions, given the task ``pay N``, call ``pay`` (a side effect) two turns
    in three and on the last, ``look`` (read only) the others, N turns in all, then answer."""

    @tool(side_effect=True)
    async def pay(order: str, ctx: ToolContext) -> str:
        """Pay an order."""
        record(ctx.session_id, ctx.call_id)
        return "paid " + order

    @tool
    async def look(order: str) -> str:
        """Look an order up (read-only)."""
        return "seen " + order

    def script(request: Any) -> ModelResponse | str:
        steps = int(next(m.content for m in request.messages if m.role == "user").split()[1])
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if turn >= steps:
            return "done"
        which = "look" if turn % 3 == 2 and turn != steps - 1 else "pay"
        return ModelResponse(tool_calls=(ToolCall(f"c{turn}", which, {"order": f"o-{turn}"}),))

    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[pay, look], store=store,
                 name=name, budget=Budget(max_steps=max_steps))


def to_file(path: str | Path) -> Record:
    """A record that appends ``SESSION CALL`` lines to ``path`` (one write each, O_APPEND)."""
    def record(session_id: str, call_id: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{session_id} {call_id}\n".encode())
        finally:
            os.close(fd)
    return record


def from_file(path: str | Path) -> list[tuple[str, str]]:
    p = Path(path)
    text = p.read_text() if p.exists() else ""
    return [(a, b) for a, b in (line.split() for line in text.splitlines() if line.strip())]


def started(store: Any, session_ids: Collection[str]) -> set[tuple[str, str]]:
    """Every (session, call) whose ``tool.started`` the store holds now."""
    return {(sid, e.data["call_id"]) for sid in session_ids for e in store.read(sid)
            if e.type == "tool.started"}


def check(store: Any, halt: Halt, before: set[tuple[str, str]], ran: list[tuple[str, str]],
          reasons: Mapping[str, str]) -> None:
    """The halt's guarantee over one finished run: ``before`` is what the store held of starts
    just after the halt committed, ``ran`` the side effects' own evidence, ``reasons`` each
    session's stop reason."""
    covered = {sid for sid in reasons
               if halt.scope.covers(sid, *(store.session_owner(sid) or (None, None)))}
    for sid, call in ran:  # no side effect started after the halt's commit
        if sid in covered:
            assert (sid, call) in before, f"{sid} {call} started after {halt.id} committed"
    for sid, reason in reasons.items():
        events = store.read(sid)
        assert verify_chain(events) is None, f"{sid}: its journal does not verify"
        starts = [e.data["call_id"] for e in events if e.type == "tool.started"]
        results = {e.data["call_id"] for e in events if e.type == "tool.result"}
        # nothing lost: every side effect that ran is journaled, started and with its result,
        # once; and nothing journaled as started did not run
        assert sorted(starts) == sorted(c for s, c in ran if s == sid), sid
        assert set(starts) <= results, f"{sid}: a started call has no result"
        if sid not in covered:
            assert reason == "finished", f"{sid} (not covered) ended {reason}"
            continue
        halted = [e.data for e in events if e.type == "session.halted"]
        if reason == "halted":
            assert halted and halted[-1]["halt"]["id"] == halt.id, sid
            assert halted[-1]["halt"]["by"] == halt.by and halt.reason in \
                halted[-1]["halt"]["reason"]
            continue
        # finished: only within the stated bound (its last side effect began before the halt,
        # and its last model call within BOUND seconds of it)
        assert reason == "finished", f"{sid} (covered) ended {reason}"
        last = max(e.timestamp for e in events if e.type == "model.request")
        assert last <= halt.at + BOUND, f"{sid} asked the model {last - halt.at:.2f}s after"


if __name__ == "__main__":
    from tether.store.opening import open_store

    url, evidence, count, steps = sys.argv[1:5]
    opened = open_store(url)
    made = agent(opened, to_file(evidence))
    sessions = [made.session(f"pay {steps}", tenant_id="a" if i % 2 == 0 else "b")
                for i in range(int(count))]

    async def main() -> None:
        results = await asyncio.gather(*(s.arun() for s in sessions))
        for s, r in zip(sessions, results, strict=True):
            print(s.id, r.stop_reason.value, flush=True)

    asyncio.run(main())
    opened.close()
