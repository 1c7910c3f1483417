"""A side-effecting call declared ``idempotent=True`` that a crash interrupted is never repeated
silently: unapproved, it runs again on resume as a journaled re-run (``effect.rerun``, shown by
``tether audit show``); approved, it waits for an operator like any other side effect, since a
person approved one run of it. Real processes killed mid-effect (``os._exit``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import approval_crash_app
import crash_app
from tether.journal.chain import verify_chain
from tether.store.sqlite import SQLiteStore


def _run(app: str, *argv: str, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, app, *argv], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


def test_an_idempotent_call_runs_again_as_a_journaled_re_run(tmp_path: Path) -> None:
    db, marker = str(tmp_path / "j.db"), str(tmp_path / "marker")
    died = _run(crash_app.__file__, "run", db, marker, "idempotent")
    assert died.returncode == 9
    sid = died.stdout.split()[0]
    resumed = _run(crash_app.__file__, "resume", db, marker, "idempotent", sid)
    assert resumed.stdout.startswith("finished charged o-1 (2 attempts)"), resumed.stderr
    events = SQLiteStore(db).read(sid)
    assert verify_chain(events) is None
    kinds = [(e.type, e.data.get("call_id")) for e in events
             if e.type in ("tool.started", "effect.rerun", "tool.result")]
    assert kinds == [("tool.started", "call_1"), ("effect.rerun", "call_1"),
                     ("tool.started", "call_1"), ("tool.result", "call_1")]
    (rerun,) = [e.data for e in events if e.type == "effect.rerun"]
    assert rerun["tool"] == "charge" and "idempotent" in rerun["why"]
    shown = subprocess.run([sys.executable, "-m", "tether", "audit", "show", sid, "--store",
                            f"sqlite:///{db}"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if "call_1" in x and "again" in x)
    assert "charge" in line and "idempotent" in line


def test_an_approved_idempotent_call_is_not_run_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, url = approval_crash_app.__file__, f"sqlite:///{tmp_path / 'j.db'}"
    effects = tmp_path / "effects.txt"
    env = {"CRASH_APP_IDEMPOTENT": "1"}
    monkeypatch.setenv("CRASH_APP_IDEMPOTENT", "1")  # the recipe built here too
    started = _run(app, "run", url, str(effects), env=env)
    sid, reason = started.stdout.split()
    assert reason == "needs_approval", started.stderr
    assert _run(app, "approve", url).returncode == 0
    crashed = _run(app, "resume", url, str(effects), sid, "effect", env=env)
    assert crashed.returncode == 9, crashed.stderr
    resumed = _run(app, "resume", url, str(effects), sid, env=env)
    assert resumed.stdout.strip() == "uncertain_effect", resumed.stdout + resumed.stderr
    assert effects.read_text().splitlines() == ["transfer 250"]  # not "ran 500 / ran 500"
    agent = approval_crash_app.build(url, str(effects))
    agent.load(sid).settle("t1", "skip", operator="ops", note="the bank shows it")
    assert _run(app, "resume", url, str(effects), sid, env=env).stdout.strip() == "finished"
    assert effects.read_text().splitlines() == ["transfer 250"]
    events = SQLiteStore(tmp_path / "j.db").read(sid)
    assert not [e for e in events if e.type == "effect.rerun"]
