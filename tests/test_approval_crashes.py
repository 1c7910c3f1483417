"""Approved calls run exactly once across crashes and concurrent workers; a live session has one
owner. Real processes, killed (``os._exit``, no cleanup) right after each durable point between
approve and result, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import approval_crash_app
from audit_helpers import store_url
from tether.journal.chain import verify_chain
from tether.store.opening import open_store

APP = approval_crash_app.__file__


def _app(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, APP, *argv], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def _paused_and_approved(url: str, effects: Path) -> str:
    started = _app("run", url, str(effects))
    sid, reason = started.stdout.split()
    assert reason == "needs_approval", started.stderr
    assert _app("approve", url).returncode == 0
    return sid


def _transfers(effects: Path) -> int:
    return len(effects.read_text().splitlines()) if effects.exists() else 0


def _events(url: str, sid: str) -> list[tuple[str, dict[str, object]]]:
    store = open_store(url)
    try:
        stored = store.read(sid)
    finally:
        store.close()
    assert verify_chain(stored) is None
    return [(e.type, dict(e.data)) for e in stored]


@pytest.mark.parametrize(("point", "ran_before", "then"), [
    ("grant", 0, "finished"),
    ("consume", 0, "finished"),
    ("start", 0, "uncertain_effect"),
    ("effect", 1, "uncertain_effect"),
    ("result", 1, "finished"),
])
def test_an_approved_call_runs_exactly_once_whatever_the_crash(
        url: str, tmp_path: Path, point: str, ran_before: int, then: str) -> None:
    effects = tmp_path / "effects.txt"
    sid = _paused_and_approved(url, effects)
    crashed = _app("resume", url, str(effects), sid, point)
    assert crashed.returncode == 9, crashed.stderr
    assert _transfers(effects) == ran_before
    resumed = _app("resume", url, str(effects), sid)
    assert resumed.stdout.strip() == then, resumed.stderr
    if then == "uncertain_effect":  # an operator, who can see whether the transfer happened
        agent = approval_crash_app.build(url, str(effects))
        action = "skip" if _transfers(effects) else "retry"
        agent.load(sid).settle("t1", action, operator="ops", note="checked the bank")
        assert _app("resume", url, str(effects), sid).stdout.strip() == "finished"
    assert _transfers(effects) == 1
    events = _events(url, sid)
    assert [t for t, d in events if t == "tool.result" and d["call_id"] == "t1"] == \
        ["tool.result"]
    grants = [d for t, d in events if t == "approval.granted"]
    assert len(grants) == 1 and grants[0]["approver"] == "maria"
    assert not [d for t, d in events if t == "approval.refused"]


def test_two_workers_resuming_at_once_run_the_call_once(url: str, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    sid = _paused_and_approved(url, effects)
    release = tmp_path / "release"  # the worker that runs the call holds it until then
    env = {**os.environ, "CRASH_APP_RELEASE": str(release)}
    workers = [subprocess.Popen([sys.executable, APP, "resume", url, str(effects), sid],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while all(w.poll() is None for w in workers):  # one of them is turned away
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        release.touch()
    outputs = sorted(w.communicate(timeout=60)[0].strip() for w in workers)
    assert outputs[0].startswith("busy") and "is running in" in outputs[0], outputs
    assert outputs[1] == "finished", outputs
    assert _transfers(effects) == 1


def test_a_live_session_cannot_be_taken_over(url: str, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    sid = _paused_and_approved(url, effects)
    release = tmp_path / "release"  # the live worker holds its call until then
    live = subprocess.Popen([sys.executable, APP, "resume", url, str(effects), sid],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CRASH_APP_RELEASE": str(release)})
    try:
        deadline = time.monotonic() + 20
        while not any(t == "tool.started" for t, _ in _events(url, sid)):
            assert time.monotonic() < deadline and live.poll() is None
            time.sleep(0.1)
        second = _app("resume", url, str(effects), sid)
        assert second.stdout.startswith("busy"), second.stdout + second.stderr
        assert "lease expires in" in second.stdout
    finally:
        release.touch()
        out, _ = live.communicate(timeout=60)
    assert out.strip() == "finished"
    assert _transfers(effects) == 1
