"""Durability with real processes: pause here, approve there, resume elsewhere; SIGKILL anywhere
and each completed effect happens exactly once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tether.journal.chain import verify_chain
from tether.store.base import Store
from tether.store.sqlite import SQLiteStore

APP = str(Path(__file__).with_name("durable_app.py"))


def app(*args: str, timeout: float = 30) -> list[str]:
    out = subprocess.run([sys.executable, APP, *args], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_paused_in_one_process_approved_in_another_resumed_in_a_third(tmp_path: Path) -> None:
    db, effects = str(tmp_path / "j.db"), str(tmp_path / "effects.txt")
    session_id, reason = app("run", db, effects, "3", "approve-big")
    assert reason == "needs_approval"
    assert Path(effects).read_text().split() == ["effect-0"]
    approved = app("approve", db)
    assert len(approved) == 1
    assert app("resume", db, effects, session_id, "3") == ["finished"]
    assert Path(effects).read_text().split() == ["effect-0", "effect-1", "effect-2"]
    events = SQLiteStore(db).read(session_id)
    assert verify_chain(events) is None
    granted = [e.data for e in events if e.type == "approval.granted"]
    assert granted[0]["approver"] == "ops" and granted[0]["note"] == "from another process"
    with pytest.raises(AssertionError, match="not paused"):
        app("resume", db, effects, session_id, "3")


def run_until_killed(db: str, effects: str, n: int, delay: float) -> str:
    proc = subprocess.Popen([sys.executable, APP, "run", db, effects, str(n)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    session_id = proc.stdout.readline().strip()
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return session_id


def test_sigkill_at_many_points_then_resume_gives_each_effect_exactly_once(
        tmp_path: Path) -> None:
    rng = random.Random(7)
    n = 6
    for attempt in range(12):
        db = str(tmp_path / f"j{attempt}.db")
        effects = str(tmp_path / f"effects{attempt}.txt")
        session_id = run_until_killed(db, effects, n, rng.uniform(0.0, 0.18))
        for _ in range(n + 2):  # resume (and settle, as an operator would) until finished
            events = SQLiteStore(db).read(session_id)
            if not events:  # killed before the first commit: nothing happened, start over
                assert not Path(effects).exists()
                break
            if events[-1].type == "session.end":
                break
            last_pause = [e for e in events if e.type == "session.paused"]
            if last_pause and events[-1].type == "session.paused" and \
                    last_pause[-1].data["reason"] == "uncertain_effect":
                app("settle", db, effects, session_id)
            app("resume", db, effects, session_id, str(n))
        events = SQLiteStore(db).read(session_id)
        if not events:
            continue
        assert events[-1].type == "session.end", [e.type for e in events][-5:]
        assert verify_chain(events) is None
        lines = Path(effects).read_text().split()
        assert sorted(lines) == [f"effect-{i}" for i in range(n)], (attempt, lines)


CRASH = str(Path(__file__).with_name("crash_app.py"))


def crash(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, CRASH, *args], capture_output=True, text=True,
                          timeout=30)


def test_an_interrupted_idempotent_call_is_retried_on_resume(tmp_path: Path) -> None:
    db, marker = str(tmp_path / "j.db"), str(tmp_path / "marker")
    died = crash("run", db, marker, "idempotent")
    assert died.returncode == 9
    session_id = died.stdout.split()[0]
    resumed = crash("resume", db, marker, "idempotent", session_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("finished charged o-1 (2 attempts)")


def test_an_interrupted_side_effect_waits_for_an_operator(tmp_path: Path) -> None:
    db, marker = str(tmp_path / "j.db"), str(tmp_path / "marker")
    session_id = crash("run", db, marker, "effectful").stdout.split()[0]
    resumed = crash("resume", db, marker, "effectful", session_id)
    assert resumed.stdout.startswith("uncertain_effect"), resumed.stdout + resumed.stderr
    assert Path(marker).read_text().split() == ["o-1"]  # not repeated
    sys.path.insert(0, str(Path(__file__).parent))
    from crash_app import build

    agent = build(db, marker, "effectful")
    session = agent.load(session_id)
    session.settle("call_1", "skip", operator="ops", note="the charge went through")
    result = session.resume()
    assert result.stop_reason.value == "finished"
    assert "operator chose to skip" in result.trajectory.steps[0].results[0].content
    assert Path(marker).read_text().split() == ["o-1"]
    assert verify_chain(SQLiteStore(db).read(session_id)) is None


def test_two_tenants_with_identical_calls_never_share_a_result(tmp_path: Path) -> None:
    db = str(tmp_path / "j.db")
    first = crash("run", db, str(tmp_path / "m1"), "idempotent", "tenant-a").stdout.split()[0]
    second = crash("run", db, str(tmp_path / "m2"), "idempotent", "tenant-b").stdout.split()[0]
    # both sessions died in the same call id with the same arguments; each resumes on its own
    out_b = crash("resume", db, str(tmp_path / "m2"), "idempotent", second).stdout
    assert out_b.startswith("finished charged o-1 (2 attempts)")
    store = SQLiteStore(db)
    results_a = [e for e in store.read(first) if e.type == "tool.result"]
    assert results_a == []  # tenant b's result did not land in tenant a's ledger
    out_a = crash("resume", db, str(tmp_path / "m1"), "idempotent", first).stdout
    assert out_a.startswith("finished charged o-1 (2 attempts)")
    tenants = {i.session_id: i.tenant_id for i in store.sessions()}
    assert tenants == {first: "tenant-a", second: "tenant-b"}


def test_a_model_call_lost_in_a_crash_is_charged_at_its_reservation(tmp_path: Path) -> None:
    app_path = str(Path(__file__).with_name("lost_call_app.py"))
    db, marker = str(tmp_path / "j.db"), str(tmp_path / "billed")
    died = subprocess.run([sys.executable, app_path, "run", db, marker], capture_output=True,
                          text=True, timeout=30)
    assert died.returncode == 9
    session_id = died.stdout.split()[0]
    out = subprocess.run([sys.executable, app_path, "resume", db, marker, session_id],
                         capture_output=True, text=True, timeout=30).stdout.split()
    assert out[0] == "finished" and int(out[1]) == 2  # the lost call counts as a step
    events = SQLiteStore(db).read(session_id)
    (lost,) = [e.data for e in events if e.type == "model.lost"]
    request = next(e.data for e in events if e.type == "model.request")
    assert lost["input_tokens"] == request["reserved_input"]
    assert lost["output_tokens"] == request["max_output_tokens"]
    assert int(out[2]) >= lost["input_tokens"] + lost["output_tokens"]
    assert int(out[2]) <= 2000
    assert verify_chain(events) is None


def test_a_lease_left_by_a_killed_process_of_this_host_is_taken_at_once(
        store: Store) -> None:
    """What a fleet's recovery rests on: the worker restarted after a kill -9 takes each of its
    sessions at once, instead of every recovered session waiting out the lease's ttl (60 s), and
    a live process's lease is still refused."""
    from tether.journal.chain import Journal
    from tether.store.base import SessionBusy, lease_holder

    journal = Journal("s1", store=store)
    journal.append("session.start", {"agent": "a", "subject": {}})
    journal.flush()
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        host, _pid, _nonce = lease_holder().split(":")
        store.acquire("s1", f"{host}:{killed.pid}:a1b2c3d4", 60)  # a worker, on this host
        with pytest.raises(SessionBusy):  # its process lives: the lease holds for its ttl
            store.acquire("s1", lease_holder(), 60)
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
    assert store.acquire("s1", lease_holder(), 60).token == 2  # gone: at once, not in 60 s
