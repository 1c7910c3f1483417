"""SQLite on a really full disk (a small tmpfs, filled by the run's own tool): the run stops
with StoreFull — naming the cause and how to resume, not ``OperationalError`` — the store
opens read-only for audit while the disk is still full (reads and verify work, every write is
refused with the same clear error), and once space is freed, resume surfaces the call that was
in flight as uncertain: its effect happened, its result never reached the journal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from full_disk_app import build, fill
from tether import StopReason
from tether.journal.chain import Journal, verify_chain
from tether.store.base import StoreFull
from tether.store.sqlite import SQLiteStore

APP = str(Path(__file__).parent / "full_disk_app.py")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs of the test's own, unmounted afterwards whatever happens."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs: {done.stderr}")  # CI runs as root: it must run
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_stops_the_run_resumably_audit_still_reads_and_resume_finds_the_call(
        small_disk: Path) -> None:
    db, filler = small_disk / "t.db", small_disk / "fill"
    run = subprocess.run([sys.executable, APP, str(db), str(filler)], capture_output=True,
                         text=True, timeout=120)
    session_id, raised = run.stdout.strip().splitlines()
    assert run.returncode == 3, run.stderr
    assert raised.startswith("StoreFull: ") and "disk is full" in raised
    assert f"session {session_id} stopped at its last stored step and is resumable" in raised
    assert f"tether resume {session_id}" in raised and "space is freed" in raised
    assert "cannot rollback" not in raised + run.stderr

    audit = SQLiteStore(db)  # the disk is still full
    try:
        events = audit.read(session_id)
        assert verify_chain(events) is None
        assert events[-1].type == "tool.started" and audit.anchors()
        assert [s.session_id for s in audit.sessions()] == [session_id]
        more = Journal(session_id, store=audit, history=events)
        more.append("step", {"after": "full"})
        with pytest.raises(StoreFull, match="disk is full"):
            more.flush()
        with pytest.raises(StoreFull):
            audit.put_approval({"id": "a1", "session_id": session_id, "status": "pending"})
        assert audit.read(session_id) == events  # nothing half-written
    finally:
        audit.close()
    verified = subprocess.run([sys.executable, "-m", "tether", "audit", "verify", "--store",
                               f"sqlite:///{db}"], capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr

    filler.unlink()  # space is freed
    result = build(str(db), str(filler)).resume(session_id)
    assert result.stop_reason is StopReason.UNCERTAIN_EFFECT
    assert "call_1" in (result.stop_detail or "")
    assert not filler.exists()  # the effect was not repeated by the resume


def test_a_store_closed_before_the_disk_filled_opens_read_only_for_audit(
        small_disk: Path) -> None:
    db = small_disk / "t.db"
    store = SQLiteStore(db)
    journal = Journal("s1", store=store)
    journal.append("session.start", {"agent": "a", "subject": {}})
    journal.append("step", {"n": 1})
    journal.flush()
    store.close()  # checkpointed: no -wal, no -shm left
    fill(small_disk / "fill")
    audit = SQLiteStore(db)
    try:
        assert audit.read_only
        assert verify_chain(audit.read("s1")) is None and len(audit.read("s1")) == 2
        more = Journal("s1", store=audit, history=audit.read("s1"))
        more.append("step", {"n": 2})
        with pytest.raises(StoreFull, match="opened read-only, for audit, because its disk"):
            more.flush()
    finally:
        audit.close()
    (small_disk / "fill").unlink()
    again = SQLiteStore(db)
    try:
        assert not again.read_only
        more = Journal("s1", store=again, history=again.read("s1"))
        more.append("step", {"n": 2})
        more.flush()
        assert verify_chain(again.read("s1")) is None and len(again.read("s1")) == 3
    finally:
        again.close()


def test_tether_run_stopped_by_a_full_disk_says_so_and_how_to_resume(
        small_disk: Path, tmp_path: Path) -> None:
    db, filler = small_disk / "t.db", small_disk / "fill"
    recipe = tmp_path / "recipe.py"
    recipe.write_text(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                      "from full_disk_app import build\n\n\n"
                      f"def agent():\n    return build({str(db)!r}, {str(filler)!r})\n")
    run = subprocess.run([sys.executable, "-m", "tether", "run", f"{recipe}:agent",
                          "archive the q3 report", "--store", f"sqlite:///{db}"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: the store sqlite:///{db} is unavailable: the disk is full")
    assert "is resumable" in last and "tether resume " in last
    assert "Traceback" not in run.stderr


def test_a_new_store_on_a_full_disk_is_refused_with_the_cause(small_disk: Path) -> None:
    fill(small_disk / "fill")
    with pytest.raises(StoreFull, match=r"disk is full .*a new store cannot be created there"):
        SQLiteStore(small_disk / "new.db")
