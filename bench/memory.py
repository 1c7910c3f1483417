"""What conversation memory costs: python bench/memory.py [--turns 10,100] [--searched 100,1000]

Memory adds nothing to a step: a thread is read once, when a session starts (its earlier turns
kept by the store, checked against the journals), and named in the start by reference
(``bench/thread_growth.py`` measures how that grows with the thread). So this measures, on a
SQLite store in a scratch directory:

- starting a one-step session on a thread of N earlier turns, as a ratio to the same session
  without a thread (wall time, one run, interleaved: only ratios are compared);
- a recall (``ConversationStore.search``) over M turns of one user: the BM25 index is built
  from the journals per search;
- forgetting a user with M sessions (``ConversationStore.forget``): erasure record, then each
  session's events rewritten.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tether import Agent, ReAct, ScriptedModel
from tether.knowledge import ConversationStore
from tether.store.sqlite import SQLiteStore

WORDS = ("refund", "order", "invoice", "shipping", "delay", "passport", "flight", "hotel",
         "booking", "payment", "card", "address", "password", "account", "email", "weather",
         "meeting", "lunch")


def said(i: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12)) + f" number {i}"


def chat(store: SQLiteStore) -> Agent:
    return Agent(model=ScriptedModel(lambda r: "noted: " + r.messages[-1].content[:60]),
                 reasoning=ReAct(), store=store)


def fill(store: SQLiteStore, user: str, thread: str, turns: int) -> None:
    agent = chat(store)
    for i in range(turns):
        agent.run(said(i), user_id=user, tenant_id="acme", thread=thread)


def continuing(scratch: Path, turns: int, repeats: int = 20) -> tuple[float, float]:
    store = SQLiteStore(scratch / f"continue-{turns}.db")
    fill(store, "ada", "long", turns)
    agent = chat(store)
    plain = threaded = 0.0
    for _ in range(repeats):  # interleaved, so both see the same machine
        t = time.perf_counter()
        agent.run("one more question", user_id="bob", tenant_id="acme")
        plain += time.perf_counter() - t
        t = time.perf_counter()
        agent.run("one more question", user_id="ada", tenant_id="acme", thread="long")
        threaded += time.perf_counter() - t
    store.close()
    return plain / repeats, threaded / repeats


def searching(scratch: Path, turns: int, repeats: int = 5) -> tuple[float, float]:
    store = SQLiteStore(scratch / f"search-{turns}.db")
    for t in range(10):  # ten threads
        fill(store, "ada", f"t{t}", turns // 10)
    memory = ConversationStore(store)
    start = time.perf_counter()
    for _ in range(repeats):
        found = memory.search("passport refund", tenant_id="acme", user_id="ada")
    searched = (time.perf_counter() - start) / repeats
    assert found
    start = time.perf_counter()
    erasure = memory.forget(tenant_id="acme", user_id="ada")
    forgotten = time.perf_counter() - start
    assert len(erasure.sessions) == turns
    store.close()
    return searched, forgotten


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="10,100")
    parser.add_argument("--searched", default="100,1000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for n in (int(x) for x in args.turns.split(",")):
            plain, threaded = continuing(Path(scratch), n)
            print(f"start a session on a thread of {n:>4} turns: {threaded * 1000:7.1f} ms, "
                  f"{threaded / plain:5.1f}x one without a thread ({plain * 1000:.1f} ms)")
        for m in (int(x) for x in args.searched.split(",")):
            searched, forgotten = searching(Path(scratch), m)
            print(f"recall over {m:>5} turns: {searched * 1000:7.1f} ms per search; "
                  f"forget their user: {forgotten * 1000:7.1f} ms "
                  f"({forgotten / m * 1000:.2f} ms per session)")


if __name__ == "__main__":
    main()
