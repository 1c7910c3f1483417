"""The SQLite store's WAL checkpoints run off the writer's path and its log stays bounded: a
background thread copies the log into the database file while commits go on; the writer's own
checkpoint, raised to a backstop, still bounds the log under a load that never pauses; a store
closed (or a file removed) under a running checkpoint leaves no error behind; what was committed
is all there when the file is opened again."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import tether.store.sqlite as sqlite_store
import tether.store.sqlite_checkpoint as checkpoint
from tether.journal.chain import Journal, verify_chain
from tether.store.sqlite import SQLiteStore

PAGE = 4096


def write_steps(store: SQLiteStore, steps: int, session: str = "s1") -> Journal:
    journal = Journal(session, store=store)
    journal.append("session.start", {"subject": {"tenant_id": "t"}, "agent": "a"})
    for i in range(steps):
        for kind in ("model.request", "model.response", "tool.decision", "tool.result"):
            journal.append(kind, {"step": i, "text": "x" * 300})
        journal.flush()
    return journal


def wait_for(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_log_is_copied_back_in_the_background(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "EVERY_COMMITS", 10)
    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    before = path.stat().st_size
    journal = write_steps(store, 60)  # ~300 log pages: far below the writer's own backstop

    def copied() -> bool:
        # a checkpoint may have begun before the last commits (one runs at a time, and a
        # loaded machine starts its thread late): go on committing, so that one is due again
        journal.append("tool.result", {"text": "x" * 300})
        journal.flush()
        return path.stat().st_size > before + 20 * PAGE

    # the database file itself grew: someone other than the writer copied pages into it
    assert wait_for(copied)
    store.close()


def test_without_the_background_checkpoints_the_writer_leaves_the_file_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control for the test above: the copy was the checkpointer's doing."""
    monkeypatch.setattr(checkpoint.Checkpointer, "committed", lambda self: None)
    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    before = path.stat().st_size
    write_steps(store, 60)
    time.sleep(0.2)
    assert path.stat().st_size <= before + 5 * PAGE
    store.close()


def test_the_backstop_bounds_the_log_under_a_load_that_never_pauses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_store, "BACKSTOP_PAGES", 50)
    monkeypatch.setattr(checkpoint, "EVERY_COMMITS", 10**9)  # no help from the background
    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    write_steps(store, 400)  # ~2,000 log pages written in all
    wal = Path(f"{path}-wal").stat().st_size
    assert wal < 4 * 50 * PAGE, wal  # the log starts over instead of growing
    store.close()


def test_what_was_committed_is_all_there_when_opened_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "EVERY_COMMITS", 3)
    path = tmp_path / "t.db"
    store = SQLiteStore(path)
    journal = write_steps(store, 40)
    store.close()
    again = SQLiteStore(path)
    events = again.read("s1")
    assert events == journal.events() and verify_chain(events) is None
    again.close()


def test_a_store_closed_or_a_file_removed_under_a_checkpoint_leaves_no_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "EVERY_COMMITS", 1)
    errors: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    started = threading.Event()
    real_connect = checkpoint.sqlite3.connect

    def slow_connect(*args: Any, **kwargs: Any) -> Any:
        started.set()
        time.sleep(0.1)  # the store closes and its files go meanwhile
        return real_connect(*args, **kwargs)

    directory = tmp_path / "gone"
    directory.mkdir()
    store = SQLiteStore(directory / "t.db")
    monkeypatch.setattr(checkpoint.sqlite3, "connect", slow_connect)
    write_steps(store, 1)
    assert started.wait(5)
    store.close()
    for name in os.listdir(directory):
        os.remove(directory / name)
    directory.rmdir()
    assert wait_for(lambda: not [t for t in threading.enumerate()
                                 if t.name == "tether-sqlite-checkpoint"])
    assert errors == []
    store.close()  # closing twice is harmless
