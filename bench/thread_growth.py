"""A thread's cost as it grows (issue 50, goal 3): python bench/thread_growth.py
[--turns 10,100,1000] [--chars 200] [--no-valgrind]

Goal: a thread of N turns stores O(N) text, and starting a session on a thread of 1,000 turns
costs at most 2x starting one on a thread of 10. Two figures, both deterministic:

- **bytes stored** by a thread of N turns of ``--chars``-character questions: every journal's
  event text (the JSON each hash covers) plus what the store keeps of the thread's turns
  (``tether.store.turn_chain``: text, digest, link), read from a ``MemoryStore`` (the same
  content the SQLite and PostgreSQL stores hold in their rows);
- **instructions to start a session** on a thread of N turns: one one-step session
  (``agent.run(task, thread=...)`` with a scripted model) on a SQLite store holding the thread:
  it joins, reads and checks the history, journals its start, sends the history to the model
  (the first request journals it as a count), ends and keeps its turn. Counted under valgrind's
  cachegrind for 2 and 12 sessions in a child process; the difference / 10 is one session, so
  start-up and imports cancel out. That is a process serving the thread (a chat server, a
  worker): its agent remembers the history it checked (``tether.runtime.lifecycle.thread_memo``);
- **instructions of the first session on the thread in a fresh process** (``cold``): 1 session
  in the child minus none (both children first run one session on another thread, so imports
  and first calls cancel out): the whole history is read and checked.

``measure()`` returns both as a ``ThreadGrowth`` for ``bench/goals.py``. The script uses the
public API only, so it runs against an older tether too (``PYTHONPATH=<its src>``) for a
before/after in one window.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from instructions import counted

from tether import Agent, ReAct, ScriptedModel
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore

TURNS = (10, 100, 1000)
CHARS = 200
FEW, MANY = 2, 12  # sessions counted in the two valgrind runs
WHO = {"user_id": "ada", "tenant_id": "acme", "thread": "long"}

CHILD = """
import sys
from tether import Agent, ReAct, ScriptedModel
from tether.store.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
agent = Agent(model=ScriptedModel(lambda request: "noted"), reasoning=ReAct(), store=store)
agent.run("first", user_id="ada", tenant_id="acme", thread="another")  # imports, first calls
for i in range(int(sys.argv[2])):
    agent.run(f"one more question {i}", user_id="ada", tenant_id="acme", thread="long")
store.close()
"""


# --breakdown: the part of a session that reads and checks the history (this tether only)
READING = """
import sys
from tether.runtime.lifecycle.thread import thread_history
from tether.store.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
for i in range(int(sys.argv[2])):
    thread_history(store, "acme", "ada", "long")
store.close()
"""


@dataclass(frozen=True, slots=True)
class ThreadGrowth:
    """Bytes stored by a thread of N turns (by N), the instructions one session costs on a
    thread of N turns (by N; empty without valgrind), and the start cost ratio of the largest
    N to the smallest."""

    stored: dict[int, int]
    start: dict[int, float]
    cold: dict[int, float]

    @property
    def start_ratio(self) -> float | None:
        if not self.start:
            return None
        return self.start[max(self.start)] / self.start[min(self.start)]

    @property
    def cold_ratio(self) -> float | None:
        if not self.cold:
            return None
        return self.cold[max(self.cold)] / self.cold[min(self.cold)]

    @property
    def bytes_per_turn(self) -> dict[int, float]:
        return {n: b / n for n, b in self.stored.items()}


def question(i: int, chars: int) -> str:
    head = f"question {i}: "
    return head + "x" * max(0, chars - len(head))


def fill(agent: Agent, turns: int, chars: int) -> None:
    for i in range(turns):
        agent.run(question(i, chars), **WHO)


def chat(store: MemoryStore | SQLiteStore) -> Agent:
    return Agent(model=ScriptedModel(lambda request: "noted: " + request.messages[-1].content),
                 reasoning=ReAct(), store=store)


def stored_bytes(store: MemoryStore) -> int:
    """Every journal's event text, and the thread's kept turns (if this tether keeps them)."""
    journals = sum(len(e.json_text) for sid in list(store._events)
                   for e in store.read(sid))
    kept = getattr(store, "thread_turns", None)
    turns = kept("acme", "ada", "long") if kept is not None else []
    return journals + sum(len(t.turn or "") + len(t.digest) + len(t.link) for t in turns)


def bytes_stored(turns: tuple[int, ...] = TURNS, chars: int = CHARS) -> dict[int, int]:
    found = {}
    for n in turns:
        store = MemoryStore()
        fill(chat(store), n, chars)
        found[n] = stored_bytes(store)
    return found


def snapshot(base: Path, copy: Path) -> None:
    """A consistent copy of a SQLite file, its WAL included (copying the file alone may catch a
    background checkpoint halfway)."""
    with contextlib.closing(sqlite3.connect(base)) as source, \
            contextlib.closing(sqlite3.connect(copy)) as target:
        source.backup(target)


def start_instructions(turns: int, chars: int = CHARS, child: str = CHILD,
                       counts: tuple[int, int] = (FEW, MANY)) -> float:
    """Instructions one one-step session costs on a SQLite thread of ``turns`` turns (with
    ``child=READING``: one reading of its history, checked), from runs of ``counts`` sessions
    ((0, 1): the first in a fresh process)."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "thread.db"
        store = SQLiteStore(base)
        fill(chat(store), turns, chars)
        store.close()
        found = []
        for sessions in counts:
            copy = Path(scratch) / f"copy-{sessions}.db"
            snapshot(base, copy)
            found.append(counted(child, str(copy), str(sessions)))
    return (found[1] - found[0]) / (counts[1] - counts[0])


def measure(turns: tuple[int, ...] = TURNS, chars: int = CHARS,
            valgrind: bool = True) -> ThreadGrowth:
    """Both figures at each N of ``turns`` (instructions only with valgrind installed)."""
    start, cold = {}, {}
    if valgrind and shutil.which("valgrind") is not None:
        start = {n: start_instructions(n, chars) for n in turns}
        cold = {n: start_instructions(n, chars, counts=(0, 1)) for n in turns}
    return ThreadGrowth(bytes_stored(turns, chars), start, cold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default=",".join(map(str, TURNS)))
    parser.add_argument("--chars", type=int, default=CHARS)
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--breakdown", action="store_true",
                        help="also count one reading of the history alone (thread_history)")
    args = parser.parse_args()
    turns = tuple(int(n) for n in args.turns.split(","))
    growth = measure(turns, args.chars, not args.no_valgrind)
    print(f"python {sys.version.split()[0]}, {args.chars}-character questions")
    print(f"  {'turns':>6} {'bytes stored':>14} {'per turn':>10} {'one session (k instr)':>22} "
          f"{'first in a process':>19}")
    for n in turns:
        start, cold = growth.start.get(n), growth.cold.get(n)
        print(f"  {n:>6} {growth.stored[n]:>14,} {growth.bytes_per_turn[n]:>10,.0f} "
              f"{'' if start is None else f'{start / 1000:,.1f}':>22} "
              f"{'' if cold is None else f'{cold / 1000:,.1f}':>19}")
    if growth.start_ratio is not None and growth.cold_ratio is not None:
        print(f"  start cost, {max(turns)} turns vs {min(turns)}: {growth.start_ratio:.2f}x "
              f"(the first session in a fresh process: {growth.cold_ratio:.2f}x)")
    if args.breakdown:
        for n in turns:
            reading = start_instructions(n, args.chars, READING)
            print(f"  reading and checking the history of {n} turns: {reading / 1000:,.1f} k "
                  "instructions")


if __name__ == "__main__":
    main()
