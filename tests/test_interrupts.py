"""An interrupted ``tether run`` (SIGINT, SIGTERM, SIGHUP) is never worse than ``kill -9``: the
session pauses resumably, a side effect in flight is left uncertain for an operator exactly as
after a crash, one line on stderr says what happened and the exact command that continues, and
``tether settle`` / ``tether resume`` then finish the work without repeating the effect. Real
processes, signalled at each point of a side-effecting call (``interrupt_app.py``)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import interrupt_app
from tether.journal.chain import verify_chain
from tether.runtime.record.state import fold
from tether.store.sqlite import SQLiteStore
from tether.types import Event

RECIPE = f"{interrupt_app.__file__}:agent"
TASK = "write ran 500 to the ledger"


def _env(where: Path, at: str = "") -> dict[str, str]:
    env = {**os.environ, "INTERRUPT_DIR": str(where)}
    env.pop("INTERRUPT_AT", None)
    if at:
        env["INTERRUPT_AT"] = at
    return env


def _tether(where: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tether", *argv], capture_output=True,
                          text=True, timeout=120, env=_env(where))


def _started(where: Path, store: str, at: str, *argv: str) -> subprocess.Popen[str]:
    """A ``tether run`` (or the command ``argv``) that has reached ``at`` and waits there."""
    command = argv or ("run", RECIPE, TASK, "--store", store)
    return _waiting(where, at, "-m", "tether", *command)


STARTED: list[subprocess.Popen[str]] = []  # killed after each test, whatever it asserted


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)


def _waiting(where: Path, at: str, *argv: str) -> subprocess.Popen[str]:
    """``python ARGV`` once it has reached ``at`` and waits there."""
    (where / "ready").unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(where, at))
    STARTED.append(proc)
    deadline = time.monotonic() + 90
    while not (where / "ready").exists():  # written by the tool at the point
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"the run never reached {at!r}: {out}\n{err}")
        time.sleep(0.02)
    return proc


def _stored(db: Path) -> tuple[str, list[Event]]:
    store = SQLiteStore(db)
    try:
        (info,) = store.sessions()
        return info.session_id, store.read(info.session_id)
    finally:
        store.close()


def _effects(where: Path) -> list[str]:
    path = where / "effects.txt"
    return path.read_text().splitlines() if path.exists() else []


def _uncertain(events: list[Event]) -> set[str]:
    state = fold(events)
    return state.started - set(state.results)


def _commands(line: str) -> list[list[str]]:
    """The commands a line quotes in backticks, as argv."""
    return [shlex.split(c) for c in re.findall(r"`([^`]+)`", line)]


POINTS = [("before", "interrupted", set(), 0), ("start", "uncertain_effect", {"call_1"}, 0),
          ("during", "uncertain_effect", {"call_1"}, 1)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: s.name)
@pytest.mark.parametrize(("at", "reason", "uncertain", "written"), POINTS,
                         ids=[p[0] for p in POINTS])
def test_a_signal_pauses_the_run_and_settle_then_resume_finish_it_once(
        tmp_path: Path, sig: signal.Signals, at: str, reason: str, uncertain: set[str],
        written: int) -> None:
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    proc = _started(tmp_path, store, at)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    sid, events = _stored(db)
    assert verify_chain(events) is None
    assert events[-1].type == "session.paused", [e.type for e in events][-4:]
    assert not [e for e in events if e.type == "session.end"]
    assert events[-1].data["reason"] == reason
    assert sig.name in events[-1].data["detail"]
    assert _uncertain(events) == uncertain
    assert _effects(tmp_path) == ["ran 500"] * written
    if sig is signal.SIGINT:  # what audit says of the pause
        shown = _tether(tmp_path, "audit", "show", sid, "--store", store).stdout
        status = next(x for x in shown.splitlines() if x.strip().startswith("status:"))
        assert f"paused ({reason})" in status
        assert ("interrupted calls call_1" in status) if uncertain else \
            (f"tether resume {sid}" in status and "settle" not in status), status
        paused = [x for x in shown.splitlines() if "paused:" in x][-1]
        assert ("uncertain, to settle: call_1" in paused) == bool(uncertain), paused
    line = lines[0]
    assert sig.name in line and sid in line
    commands = _commands(line)
    assert commands[-1][:3] == ["tether", "resume", sid], line
    if uncertain:  # the effect is the operator's to settle, as after a crash
        assert commands[0][:4] == ["tether", "settle", sid, "call_1"], line
        action = "skip" if written else "retry"
        settle = [action if a == "retry|skip" else "ops" if a == "NAME" else a
                  for a in commands[0][1:]]
        settled = _tether(tmp_path, *settle)
        assert settled.returncode == 0, settled.stderr
    else:
        assert len(commands) == 1, line
    resumed = _tether(tmp_path, *commands[-1][1:])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "stop reason: finished" in resumed.stdout
    _, events = _stored(db)
    assert events[-1].type == "session.end" and events[-1].data["reason"] == "finished"
    assert verify_chain(events) is None
    assert _effects(tmp_path) == ["ran 500"]  # once, whatever the point


def test_an_interrupted_effect_waits_for_an_operator_exactly_as_after_kill_9(
        tmp_path: Path) -> None:
    outputs = []
    for sig in (signal.SIGKILL, signal.SIGINT):
        where = tmp_path / sig.name
        where.mkdir()
        store = f"sqlite:///{where / 'runs.db'}"
        proc = _started(where, store, "during")
        proc.send_signal(sig)
        proc.communicate(timeout=60)
        sid, events = _stored(where / "runs.db")
        assert _uncertain(events) == {"call_1"}
        resumed = _tether(where, "resume", sid, "--agent", RECIPE, "--store", store)
        outputs.append(resumed.stdout.replace(sid, "SID").replace(store, "STORE"))
        _, events = _stored(where / "runs.db")
        assert events[-1].type == "session.paused"
        assert events[-1].data["reason"] == "uncertain_effect"
        assert _effects(where) == ["ran 500"]  # not repeated by the resume
    killed, interrupted = outputs
    assert "stop reason: uncertain_effect" in killed
    assert [line for line in killed.splitlines() if line.startswith("interrupted:")] == \
        [line for line in interrupted.splitlines() if line.startswith("interrupted:")] != []


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_second_signal_while_pausing_leaves_the_journal_consistent(
        tmp_path: Path, second: signal.Signals) -> None:
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    proc = _started(tmp_path, store, "during")
    proc.send_signal(signal.SIGINT)
    proc.send_signal(second)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    # whichever the process handled first paused it (a process's threads may take them in
    # either order)
    assert proc.returncode in (128 + signal.SIGINT, 128 + second)
    assert len(err.strip().splitlines()) == 1, err
    verified = _tether(tmp_path, "audit", "verify", "--store", store)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    _, events = _stored(db)
    assert events[-1].type == "session.paused"
    assert _uncertain(events) == {"call_1"}


def test_signals_inside_the_pause_write_change_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    monkeypatch.setenv("INTERRUPT_HOLD_PAUSE", store)  # read by the recipe in the child
    proc = _started(tmp_path, store, "during")
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    while not (tmp_path / "pausing").exists():  # the pause is being written, and held
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    for again in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # inside the pause's write
        proc.send_signal(again)
    (tmp_path / "go").write_text("")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert _tether(tmp_path, "audit", "verify", "--store", store).returncode == 0
    _, events = _stored(db)
    assert [e.type for e in events].count("session.paused") == 1
    assert events[-1].type == "session.paused" and _uncertain(events) == {"call_1"}


def test_settle_on_an_ended_session_is_refused_and_appends_nothing(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    ran = _tether(tmp_path, "run", RECIPE, TASK, "--store", store)
    assert ran.returncode == 0, ran.stderr
    sid, before = _stored(db)
    assert before[-1].type == "session.end"
    settled = _tether(tmp_path, "settle", sid, "call_1", "retry", "--operator", "ops",
                      "--agent", RECIPE, "--store", store)
    assert settled.returncode == 1
    assert "ended" in settled.stderr and "nothing to settle" in settled.stderr, settled.stderr
    assert "tether resume" not in settled.stdout + settled.stderr
    _, after = _stored(db)
    assert [e.hash for e in after] == [e.hash for e in before]


def test_settle_on_a_session_that_ended_mid_effect_is_refused(tmp_path: Path) -> None:
    """A journal an earlier tether ended as ``cancelled`` with a call in flight (or any ended
    session): the call has no result, but the session runs nothing more."""
    from tether.journal.chain import Journal

    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    proc = _started(tmp_path, store, "during")
    proc.kill()
    proc.communicate(timeout=60)
    sid, events = _stored(db)
    sqlite = SQLiteStore(db)
    journal = Journal(sid, store=sqlite, history=events)
    journal.append("session.end", {"reason": "cancelled", "detail": "the run was cancelled",
                                   "answer": "", "notice": "[tether] The run was cancelled.",
                                   "spend": {}})
    journal.flush()
    sqlite.close()
    sid, before = _stored(db)
    assert _uncertain(before) == {"call_1"}
    settled = _tether(tmp_path, "settle", sid, "call_1", "skip", "--operator", "ops",
                      "--agent", RECIPE, "--store", store)
    assert settled.returncode == 1
    assert "ended (cancelled)" in settled.stderr and "nothing to settle" in settled.stderr, \
        settled.stderr
    assert "tether resume" not in settled.stdout + settled.stderr
    _, after = _stored(db)
    assert [e.hash for e in after] == [e.hash for e in before]


def test_a_resumed_run_interrupted_again_pauses_again_and_a_retry_is_not_reused(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    proc = _started(tmp_path, store, "start")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    sid, _ = _stored(db)
    settle = ("settle", sid, "call_1", "retry", "--operator", "ops", "--agent", RECIPE,
              "--store", store)
    assert _tether(tmp_path, *settle).returncode == 0
    resume = ("resume", sid, "--agent", RECIPE, "--store", store)
    proc = _started(tmp_path, store, "during", *resume)  # the retry writes, then hangs
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"tether settle {sid} call_1" in err
    _, events = _stored(db)
    assert events[-1].type == "session.paused"
    assert events[-1].data["reason"] == "uncertain_effect"
    assert _effects(tmp_path) == ["ran 500"]
    again = _tether(tmp_path, *resume)  # the operator's retry was used: it is not run again
    assert "stop reason: uncertain_effect" in again.stdout, again.stdout + again.stderr
    assert _effects(tmp_path) == ["ran 500"]
    skip = ("settle", sid, "call_1", "skip", *settle[4:])
    assert _tether(tmp_path, *skip).returncode == 0
    assert "stop reason: finished" in _tether(tmp_path, *resume).stdout
    assert _effects(tmp_path) == ["ran 500"]


def test_ctrl_c_at_session_run_in_python_pauses_then_raises_keyboard_interrupt(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    proc = _waiting(tmp_path, "during", interrupt_app.__file__, store)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert out.split() == ["KeyboardInterrupt", "True", "session.paused", "uncertain_effect"], \
        out + err
    _, events = _stored(tmp_path / "runs.db")
    assert verify_chain(events) is None and _uncertain(events) == {"call_1"}


def test_a_third_signal_ends_a_run_whose_loop_is_held_as_kill_9_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERRUPT_INLINE", "1")  # slow_write holds the event loop's thread
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    proc = _started(tmp_path, store, "during")
    # the pause cannot begin: the loop is held (distinct signals: the same one twice may be
    # delivered once)
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc.send_signal(sig)
    with pytest.raises(subprocess.TimeoutExpired):  # it waits, as promised, for the pause
        proc.communicate(timeout=1)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGHUP
    assert "Traceback" not in err and "kill -9" in err, err
    sid, events = _stored(db)
    assert verify_chain(events) is None and _uncertain(events) == {"call_1"}
    (said,) = _commands(err)  # the command it printed works as printed: recipe, store named
    assert said == ["tether", "resume", sid, "--agent", RECIPE, "--store", store]
    resumed = _tether(tmp_path, *said[1:])
    assert "stop reason: uncertain_effect" in resumed.stdout, resumed.stdout + resumed.stderr
    assert _effects(tmp_path) == ["ran 500"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_interrupted_run_pauses_on_every_store(tmp_path: Path, backend: str) -> None:
    from audit_helpers import store_url
    from tether.store.opening import open_store

    with store_url(backend, tmp_path) as url:
        proc = _started(tmp_path, url, "during")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGINT, err
        store = open_store(url)
        try:
            (info,) = store.sessions()
            events = store.read(info.session_id)
        finally:
            store.close()
        assert verify_chain(events) is None
        assert events[-1].type == "session.paused" and _uncertain(events) == {"call_1"}
        sid = info.session_id
        common = ("--agent", RECIPE, "--store", url)
        assert _tether(tmp_path, "settle", sid, "call_1", "skip", "--operator", "ops",
                       *common).returncode == 0
        resumed = _tether(tmp_path, "resume", sid, *common)
        assert "stop reason: finished" in resumed.stdout, resumed.stdout + resumed.stderr
    assert _effects(tmp_path) == ["ran 500"]


LATE = """
import os, signal, sys
from tether.cli.interrupts import Interrupts
with Interrupts(process_exits={exits}) as interrupts:
    os.kill(os.getpid(), signal.SIGINT)  # the first signal: pauses (here: only noted)
assert interrupts.signal is signal.SIGINT
os.kill(os.getpid(), signal.SIGTERM)  # a second one, on the way out
print("alive", flush=True)
"""


@pytest.mark.parametrize("exits", [True, False])
def test_a_signal_on_the_way_out_of_a_paused_command_line_is_ignored(exits: bool) -> None:
    """A command line a signal paused ignores later signals until its process exits (they may
    come late on a loaded machine); called in-process, the handlers are put back as found."""
    done = subprocess.run([sys.executable, "-c", LATE.format(exits=exits)], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    if exits:
        assert done.returncode == 0 and done.stdout == "alive\n", done.stderr
    else:
        assert done.returncode == -signal.SIGTERM and "alive" not in done.stdout
