"""Tamper evidence end to end: edit, delete, reorder and insert events with raw SQL in SQLite and
PostgreSQL, and `tether audit verify` names the session, the seq and what was done — every time.
An export verifies offline, and an edited export is caught too."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import audit_app
from audit_helpers import Raw, store_url
from tether.cli import main
from tether.journal.chain import seal
from tether.runtime.approvals.requests import StoredApprovals
from tether.store.opening import open_store

Mutation = Callable[[Raw, str, int], None]


def forged(raw: Raw, sid: str, after: int, seq: int, *, valid: bool) -> dict[str, Any]:
    """An event an attacker makes up, linked to the stored event ``after``; with ``valid`` its
    hash is computed the way tether would (the attacker knows the algorithm)."""
    prev = raw.row(sid, after)
    data = {"approval_id": "apr_forged", "call_id": "c1", "tool": "pay", "approver": "mallory",
            "note": "", "charged": True}
    ts = prev["ts"] + 0.001
    digest = seal(prev["hash"], sid, (seq, "approval.granted", ts, data)).hash if valid \
        else "f" * 64
    return {"type": "approval.granted", "ts": ts, "data": data, "prev_hash": prev["hash"],
            "hash": digest}


def edit_data(raw: Raw, sid: str, n: int) -> None:
    row = raw.row(sid, 8)  # the decision that asked for approval: make it look allowed
    row["data"]["decision"]["effect"] = "allow"
    raw.set(sid, 8, "data", row["data"])


def edit_last(raw: Raw, sid: str, n: int) -> None:
    row = raw.row(sid, n)
    row["data"]["answer"] = "Paid nothing."
    raw.set(sid, n, "data", row["data"])


def delete_renumbered(raw: Raw, sid: str, n: int) -> None:
    raw.delete(sid, 12)
    for seq in range(13, n + 1):
        raw.renumber(sid, seq, seq - 1)


def insert_forged(raw: Raw, sid: str, n: int, *, valid: bool) -> None:
    row = forged(raw, sid, 8, 9, valid=valid)
    raw.shift_up(sid, 9)
    raw.insert(sid, 9, row)


def delete_all(raw: Raw, sid: str, n: int) -> None:
    for seq in range(1, n + 1):
        raw.delete(sid, seq)


# name -> (mutation, expected kind, expected seq as a function of the session's length n)
MUTATIONS: dict[str, tuple[Mutation, str, Callable[[int], int], str]] = {
    "edit data": (edit_data, "edited", lambda n: 8, "content"),
    "edit type": (lambda r, s, n: r.set(s, 5, "type", "tool.error"), "edited", lambda n: 5,
                  "content"),
    "edit timestamp": (lambda r, s, n: r.set(s, 3, "ts", r.row(s, 3)["ts"] - 60), "edited",
                       lambda n: 3, "content"),
    "edit hash": (lambda r, s, n: r.set(s, 10, "hash", "0" * 64), "edited", lambda n: 10,
                  "stored hash was changed"),
    "edit prev_hash": (lambda r, s, n: r.set(s, 6, "prev_hash", "1" * 64), "edited",
                       lambda n: 6, "prev_hash field"),
    "edit last event": (edit_last, "edited", lambda n: n, "last event"),
    "delete middle": (lambda r, s, n: r.delete(s, 12), "missing", lambda n: 12, "seq 12"),
    "delete first": (lambda r, s, n: r.delete(s, 1), "missing", lambda n: 1, "seq 1"),
    "delete last": (lambda r, s, n: r.delete(s, n), "missing", lambda n: n, "index records"),
    "delete all": (delete_all, "missing", lambda n: 1, "none are stored"),
    "delete and renumber": (delete_renumbered, "missing", lambda n: 12, "not stored"),
    "swap distant seqs": (lambda r, s, n: r.swap(s, 8, 14), "reordered", lambda n: 8,
                          "links after"),
    "swap adjacent seqs": (lambda r, s, n: r.swap(s, 13, 14), "reordered", lambda n: 13,
                           "links after"),
    "insert forged": (lambda r, s, n: insert_forged(r, s, n, valid=False), "inserted",
                      lambda n: 9, "slipped"),
    "insert with a valid hash": (lambda r, s, n: insert_forged(r, s, n, valid=True),
                                 "inserted", lambda n: 9, "slipped"),
    "append with a valid hash": (lambda r, s, n: r.insert(s, n + 1, forged(r, s, n, n + 1,
                                                                              valid=True)),
                                 "inserted", lambda n: n + 1, "index records"),
}


def populate(url: str) -> tuple[str, str]:
    """Two real sessions: one paused, approved and finished (23 events, one of them the
    fingerprint of its masked account), one paused."""
    finished, _ = audit_app.start(url)
    paused, _ = audit_app.start(url)
    store = open_store(url)
    approvals = StoredApprovals(store)
    for request in approvals.pending(finished):
        approvals.approve(request.id, approver="maria", note="checked")
    result = audit_app.build(url).resume(finished)
    assert result.stop_reason == "finished"
    store.close()
    return finished, paused


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    with store_url(request.param, tmp_path) as made:
        yield made


def verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["audit", "verify", *args])
    return code, capsys.readouterr().out


def test_an_untampered_store_verifies(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    finished, paused = populate(url)
    code, out = verify(capsys, "--store", url)
    assert code == 0, out
    assert f"ok      {finished}  23 events  head " in out
    assert f"ok      {paused}  10 events" in out
    assert "2 sessions checked, 0 broken" in out


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_verify_catches_every_mutation(name: str, url: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    finished, paused = populate(url)
    mutate, kind, seq_of, words = MUTATIONS[name]
    raw = Raw(url)
    n = raw.count(finished)
    try:
        mutate(raw, finished, n)
    finally:
        raw.close()
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    line = next(ln for ln in out.splitlines() if ln.startswith("BROKEN"))
    assert line.startswith(f"BROKEN  {finished}  seq {seq_of(n)}: {kind}: "), line
    assert words in line, line
    assert f"ok      {paused}" in out  # the other session is untouched and says so
    assert "2 sessions checked, 1 broken" in out
    code, out = verify(capsys, "--store", url, "--session", finished)
    assert code == 1 and f"seq {seq_of(n)}: {kind}" in out
    code, out = verify(capsys, "--store", url, "--session", paused)
    assert code == 0, out


def test_a_tampered_session_is_not_resumed_from_the_cli(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, paused = populate(url)
    raw = Raw(url)
    try:
        edit_data(raw, paused, 10)
    finally:
        raw.close()
    code = main(["resume", paused, "--agent", f"{audit_app.__file__}:agent", "--store", url])
    err = capsys.readouterr().err
    assert code == 1
    assert "hash chain breaks at event 8" in err and "tether audit verify" in err


# -- exports ------------------------------------------------------------------------------------

@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[Path, str, str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    finished, paused = populate(url)
    path = tmp_path / "export.jsonl"
    assert main(["audit", "export", "--format", "jsonl", "--store", url, "-o", str(path)]) == 0
    assert "exported 33 events of 2 sessions" in capsys.readouterr().err
    return path, finished, paused


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_export_lines_carry_everything_needed_to_verify(
        exported: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, finished, paused = exported
    lines = lines_of(path)
    assert len(lines) == 35 and [line for line in lines if "trailer" in line] == [
        {"trailer": {"session_id": finished, "count": 23, "head": lines[22]["hash"]}},
        {"trailer": {"session_id": paused, "count": 10, "head": lines[33]["hash"]}}]
    assert set(lines[0]) == {"seq", "type", "session_id", "timestamp", "data", "prev_hash",
                             "hash"}
    assert lines[0]["type"] == "session.start" and lines[0]["prev_hash"] == "0" * 64
    code, out = verify(capsys, "--file", str(path))
    assert code == 0, out
    assert f"ok      {finished}  23 events" in out and f"ok      {paused}  10 events" in out


@pytest.mark.parametrize(("tamper", "expected"), [
    ("edit", "seq 4: edited:"),
    ("delete", "seq 7: missing:"),
    ("swap", "seq 9: reordered:"),
    ("timestamp", "seq 2: edited:"),
])
def test_a_tampered_export_is_caught_offline(
        tamper: str, expected: str, exported: tuple[Path, str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    path, finished, paused = exported
    lines = lines_of(path)
    if tamper == "edit":
        lines[3]["data"]["arguments"]["order"] = "B9"
    elif tamper == "delete":
        del lines[6]
    elif tamper == "swap":
        lines[8], lines[9] = lines[9], lines[8]
    else:
        lines[1]["timestamp"] = round(lines[1]["timestamp"], 2)
    write(path, lines)
    code, out = verify(capsys, "--file", str(path))
    assert code == 1
    assert f"BROKEN  {finished}  {expected}" in out, out
    assert f"ok      {paused}" in out


def test_an_unreadable_export_is_a_usage_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"seq": 1}\n')
    assert main(["audit", "verify", "--file", str(path)]) == 2
    assert "line 1: missing type, session_id" in capsys.readouterr().err
    assert main(["audit", "verify", "--file", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read the export" in capsys.readouterr().err
    assert main(["audit", "verify", "--file", str(path), "--store", "memory://"]) == 2
