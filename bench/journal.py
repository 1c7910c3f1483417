"""Cost of durability, measured (not asserted): python bench/journal.py

Prints:
  1. per-step overhead of a store: median µs per step of a scripted 20-tool-call run with
     ``Agent(store=...)`` against the same agent without one (target <= 100 µs for SQLite): an
     in-memory store (the cost of sealing events), SQLite with the default
     ``synchronous=NORMAL``, with ``?synchronous=full``, and — an experiment, not a setting
     tether offers — with WAL auto-checkpoints off the hot path; then how many transactions a
     step takes and what each costs;
  2. events verified per second: ``verify_chain`` over one stored 100,000-event session, and
     read + verify together (what ``tether audit verify`` does per session);
  3. time to restore (read, verify, fold) and to resume (restore, run the approved call, finish) a
     1,000-event session paused for approval;
  4. PostgreSQL appends per second with 8 concurrent writer processes, each its own session and
     all on one session (conflicts retried), one 4-event step per append.

PostgreSQL: ``$TETHER_BENCH_PG`` (default postgresql://postgres@127.0.0.1:5432/test); the run uses
a scratch schema and drops it. Without a server that part is skipped.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from tether import Agent, Budget, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall
from tether.journal.chain import Journal, seal, verify_chain
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.base import ConflictError, Store, StoreError
from tether.store.sqlite import SQLiteStore
from tether.tools import Calculator
from tether.types import Event

PG_URL = os.environ.get("TETHER_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
BUDGET = Budget(max_tokens=10_000_000, max_cost_usd=Decimal("10"), max_steps=1000,
                max_tool_calls=1000, max_seconds=600)


class Policy:
    """Allow everything but the tool that needs a person."""

    policy_id = "bench"
    reads_provenance = False  # undeclared, its reads' origins would be worked out (policy.reads)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "approve_me":
            return Decision(Effect.REQUIRE_APPROVAL, "a person decides", self.policy_id)
        return Decision(Effect.ALLOW, "ok", self.policy_id)


def calc_agent(calls: int, store: str | None = None, *, then_approval: bool = False) -> Agent:
    from tether import tool

    @tool
    def approve_me(what: str) -> str:
        """Something a person must approve."""
        return f"done: {what}"

    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "calculator", {"expression": f"{i} * 3"}),))
        for i in range(calls)]
    if then_approval:
        script.append(ModelResponse(tool_calls=(ToolCall("last", "approve_me",
                                                         {"what": "the report"}),)))
    script.append("done")
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[Calculator(), approve_me],
                 policy=Policy(), store=store, budget=BUDGET)


# -- 1. per-step overhead -------------------------------------------------------------------------

def per_step_us(agents: dict[str, Agent], rounds: int) -> dict[str, tuple[float, float]]:
    """Median and fastest µs per step of each agent, run in interleaved rounds so drift hits all
    alike (the fastest run is the figure least moved by a noisy neighbour)."""
    samples: dict[str, list[float]] = {name: [] for name in agents}
    for _ in range(rounds):
        for name, agent in agents.items():
            start = time.perf_counter()
            result = agent.run("compute")
            samples[name].append((time.perf_counter() - start) / len(result.trajectory.steps)
                                 * 1e6)
            assert result.stop_reason == "finished", result.stop_reason
    return {name: (statistics.median(values), min(values)) for name, values in samples.items()}


class Counting:
    """Counts a store's appends (one per transaction) and the time they take."""

    def __init__(self, store: Store) -> None:
        self.store, self.calls, self.seconds = store, 0, 0.0
        self._append = store.append

    def __enter__(self) -> Counting:
        def append(session_id: str, events: Sequence[Event],
                   data_json: Sequence[str] | None = None) -> None:
            start = time.perf_counter()
            self._append(session_id, events, data_json)
            self.seconds += time.perf_counter() - start
            self.calls += 1

        self.store.append = append  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store.append


def overhead(tmp: Path, rounds: int) -> None:
    agents = {
        "no store": calc_agent(20),
        "memory://": calc_agent(20, "memory://"),
        "SQLite (NORMAL)": calc_agent(20, f"sqlite:///{tmp / 'normal.db'}"),
        "SQLite (FULL)": calc_agent(20, f"sqlite:///{tmp / 'full.db'}?synchronous=full"),
        "SQLite, no autocheckpoint": calc_agent(20, f"sqlite:///{tmp / 'nockpt.db'}"),
    }
    nockpt = agents["SQLite, no autocheckpoint"].journal_store
    assert isinstance(nockpt, SQLiteStore)
    nockpt._db.execute("PRAGMA wal_autocheckpoint=0")  # experiment: checkpoints off the hot path
    per_step_us(agents, 5)  # warm up
    figures = per_step_us(agents, rounds)
    base, fastest_base = figures["no store"]
    print(f"1. per step, 20-tool-call run (21 steps), median of {rounds} interleaved runs "
          "(and the fastest run):")
    for name, (value, fastest) in figures.items():
        extra = (f"   ({fastest:.1f})" if name == "no store" else
                 f"   overhead {value - base:7.1f} µs/step ({fastest - fastest_base:.1f})")
        print(f"   {name:<26} {value:8.1f} µs/step{extra}")
    normal = agents["SQLite (NORMAL)"]
    store = normal.journal_store
    assert store is not None
    with Counting(store) as counted:
        steps = sum(len(normal.run("compute").trajectory.steps) for _ in range(rounds))
    print(f"   SQLite (NORMAL): {counted.calls / steps:.2f} transactions per step, "
          f"{counted.seconds / counted.calls * 1e6:.0f} µs each   target <= 100 µs/step overall")


# -- 2. verification throughput -------------------------------------------------------------------

def big_session(store: Store, session_id: str, events: int) -> None:
    journal = Journal(session_id, store=store)
    journal.append("session.start", {"task": "bulk", "agent": "bench", "subject": {}})
    for i in range(events - 1):
        if i % 2:
            journal.append("tool.result", {"call_id": f"c{i}", "tool": "calculator",
                                           "content": f"{i * 3}", "status": "ok"})
        else:
            journal.append("tool.decision", {
                "call_id": f"c{i}", "tool": "calculator", "arguments": {"expression": f"{i} * 3"},
                "decision": {"effect": "allow", "reason": "ok", "policy_id": "bench"},
                "signature": f"calculator:{i:024x}", "charged": True,
                "resource": {"name": "calculator", "tags": [], "risk": "low",
                             "side_effect": False, "egress": False, "output_trust": "trusted",
                             "owner": None, "idempotent": False},
                "context": {"step": i, "tainted": False,
                            "spend": {"tokens": i * 40, "cost_usd": "0", "steps": i,
                                      "tool_calls": i, "seconds": i / 1000}}})
        if i % 500 == 0:
            journal.flush()
    journal.flush()


def verification(tmp: Path, events: int) -> None:
    store = SQLiteStore(tmp / "big.db")
    big_session(store, "big", events)
    start = time.perf_counter()
    stored = store.read("big")
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    assert verify_chain(stored) is None
    verify_s = time.perf_counter() - start
    store.close()
    print(f"2. verify one stored {events:,}-event session (SQLite): verify_chain "
          f"{events / verify_s:,.0f} events/s; read + verify {events / (read_s + verify_s):,.0f} "
          f"events/s ({read_s:.2f} s read, {verify_s:.2f} s verify)")


# -- 3. restore and resume ------------------------------------------------------------------------

def restore_and_resume(tmp: Path, reps: int) -> None:
    source = tmp / "resume.db"
    url = f"sqlite:///{source}"
    calls = 248  # 4 events per step: ~1,000 events before the pause
    session = calc_agent(calls, url, then_approval=True).session("compute, then ask")
    assert session.run().stop_reason == "needs_approval"
    count = len(session.replay())
    recipe = calc_agent(calls, url, then_approval=True)
    loads = []
    for _ in range(reps):
        start = time.perf_counter()
        recipe.load(session.id)
        loads.append(time.perf_counter() - start)
    resumes = []
    for rep in range(reps):
        copy = tmp / f"resume-{rep}.db"
        with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)  # a copy that includes what is still in the WAL
        agent = calc_agent(calls, f"sqlite:///{copy}", then_approval=True)
        for request in agent.approval_store.pending(session.id):
            agent.approval_store.approve(request.id, approver="bench")
        start = time.perf_counter()
        result = agent.resume(session.id)
        resumes.append(time.perf_counter() - start)
        assert result.stop_reason == "finished", result.stop_reason
        assert isinstance(agent.approval_store, StoredApprovals)
        agent.approval_store.store.close()
    print(f"3. a {count:,}-event session paused for approval (SQLite), median of {reps}: "
          f"restore (read + verify + fold) {statistics.median(loads) * 1000:.1f} ms; resume to "
          f"the end (restore, approved call, final turn) {statistics.median(resumes) * 1000:.1f} "
          "ms")


# -- 4. PostgreSQL concurrent appends -------------------------------------------------------------

STEP: list[tuple[str, dict[str, Any]]] = [
    ("model.request", {"step": 1, "new": [{"role": "tool", "content": "42"}]}),
    ("model.response", {"step": 1, "cost_usd": "0", "response": {"text": "", "tool_calls": []}}),
    ("tool.decision", {"call_id": "c", "tool": "calculator", "decision": {"effect": "allow"}}),
    ("tool.result", {"call_id": "c", "tool": "calculator", "content": "42", "status": "ok"}),
]


def _step(prev: Event | None, session_id: str) -> list[Event]:
    seq, digest = (prev.seq, prev.hash) if prev else (0, "0" * 64)
    out = []
    for kind, data in STEP:
        seq += 1
        event = seal(digest, session_id, (seq, kind, time.time(), data))
        out.append(event)
        digest = event.hash
    return out


def pg_writer(schema: str, session_id: str, start_at: float, seconds: float,
              results: mp.Queue) -> None:  # type: ignore[type-arg]
    from tether.store.postgres import PostgresStore

    store = PostgresStore(PG_URL, schema=schema, min_size=1, max_size=1)
    stored = store.read(session_id)
    tail = stored[-1] if stored else None
    done = conflicts = 0
    while time.time() < start_at:
        time.sleep(0.001)
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        step = _step(tail, session_id)
        try:
            store.append(session_id, step)
        except ConflictError:
            conflicts += 1
            newer = store.read(session_id, after_seq=tail.seq if tail else 0)
            tail = newer[-1] if newer else tail
            continue
        tail = step[-1]
        done += 1
    results.put((done, conflicts, time.perf_counter() - began))
    store.close()


def postgres(writers: int, seconds: float) -> None:
    try:
        from tether.store.postgres import PostgresStore

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = PostgresStore(PG_URL, schema=schema)
    except (StoreError, ImportError) as exc:
        print(f"4. PostgreSQL skipped: {exc}")
        return
    ctx = mp.get_context("spawn")
    try:
        for label, shared in (("each its own session", False), ("all on one session", True)):
            results: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
            start_at = time.time() + 2.0
            procs = [ctx.Process(target=pg_writer, args=(
                schema, "shared" if shared else f"w{i}-{label[:4]}", start_at, seconds, results))
                for i in range(writers)]
            for p in procs:
                p.start()
            outcomes = [results.get(timeout=seconds + 60) for _ in procs]
            for p in procs:
                p.join()
            appends = sum(o[0] for o in outcomes)
            conflicts = sum(o[1] for o in outcomes)
            wall = max(o[2] for o in outcomes)
            if shared:
                assert verify_chain(admin.read("shared")) is None
            print(f"4. PostgreSQL, {writers} writer processes, {label}: {appends / wall:,.0f} "
                  f"appends/s ({appends / wall * len(STEP):,.0f} events/s, {len(STEP)}-event "
                  f"steps, {seconds:.0f} s)" + (f"; {conflicts:,} conflicts retried, chain "
                                                "verifies" if shared else ""))
    finally:
        with admin._pool.connection() as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200,
                        help="interleaved runs of each variant for the per-step figures")
    parser.add_argument("--events", type=int, default=100_000, help="events for verification")
    parser.add_argument("--reps", type=int, default=10, help="repetitions of restore/resume")
    parser.add_argument("--seconds", type=float, default=5.0, help="PostgreSQL run length")
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}")
    with tempfile.TemporaryDirectory() as tmp:
        overhead(Path(tmp), args.rounds)
        verification(Path(tmp), args.events)
        restore_and_resume(Path(tmp), args.reps)
    postgres(args.writers, args.seconds)


if __name__ == "__main__":
    main()
