"""Truncation and out-of-chain edits are detected: what a session's own hash chain cannot show.

On SQLite and PostgreSQL, someone with database access deletes a whole session, cuts a session's
tail and fixes its index row to match, or flips an approval to approved in the approvals table;
`tether audit verify` catches each through the store-wide anchor chain. An exported file whose
tail is cut, or whose session was still running, fails `verify --file`. With an audit key kept
outside the database, even an anchor chain rewritten to match is caught."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit_helpers import Raw, store_url
from test_audit_tamper import populate, verify
from tether.journal.chain import Journal
from tether.journal.views.export import write_jsonl
from tether.store.opening import open_store


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("TETHER_AUDIT_KEY", raising=False)
    with store_url(request.param, tmp_path) as made:
        yield made


def _sql(raw: Raw, statement: str, *args: object) -> list[tuple[object, ...]]:
    return raw._run(statement.replace("{s}", "tether." if raw.pg else ""), *args)


def _delete_session(raw: Raw, sid: str) -> None:
    _sql(raw, f"DELETE FROM {raw.events} WHERE {raw.session}", sid)
    _sql(raw, "DELETE FROM {s}approvals WHERE session_id = ?", sid)
    _sql(raw, "DELETE FROM {s}sessions WHERE session_id = ?", sid)


def test_a_deleted_session_is_detected(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    finished, paused = populate(url)
    assert verify(capsys, "--store", url)[0] == 0
    raw = Raw(url)
    try:
        _delete_session(raw, finished)
    finally:
        raw.close()
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"BROKEN  session {finished}: deleted:" in out
    assert f"ok      {paused}" in out


def test_a_cut_tail_with_a_fixed_index_row_is_detected(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    finished, _ = populate(url)
    raw = Raw(url)
    try:
        n = raw.count(finished)
        for seq in range(n - 2, n + 1):
            raw.delete(finished, seq)
        _sql(raw, "UPDATE {s}sessions SET events = ?, last_type = 'tool.result' "
                  "WHERE session_id = ?", n - 3, finished)
    finally:
        raw.close()
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"ok      {finished}  {n - 3} events" in out  # its own chain and index agree...
    assert f"BROKEN  session {finished}: cut:" in out  # ...the anchor chain does not


def flip_approval(url: str, sid: str) -> None:
    """Approve a session's pending request in the approvals table, as maria, outside tether."""
    raw = Raw(url)
    try:
        ((record,),) = _sql(raw, "SELECT record FROM {s}approvals WHERE session_id = ?", sid)
        forged = {**json.loads(str(record)), "status": "approved", "approver": "maria",
                  "note": "looks fine", "decided_at": 1.0}
        _sql(raw, "UPDATE {s}approvals SET status = 'approved', record = ? WHERE "
                  "session_id = ?", json.dumps(forged), sid)
    finally:
        raw.close()


def test_an_approval_flipped_in_the_table_is_detected(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, paused = populate(url)
    flip_approval(url, paused)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"BROKEN  session {paused}: approval:" in out and "decided outside tether" in out


def test_a_rewritten_anchor_chain_is_caught_only_with_the_audit_key(
        url: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_AUDIT_KEY", "kept-in-a-vault-not-in-the-database")
    finished, _ = populate(url)
    assert verify(capsys, "--store", url)[0] == 0
    raw = Raw(url)
    try:  # delete a session, then rebuild every anchor lane without it (no key to sign)
        _delete_session(raw, finished)
        raw.rewrite_anchors([{**row, "mac": None} for row in raw.anchors()
                             if row["session_id"] != finished])
    finally:
        raw.close()
    monkeypatch.delenv("TETHER_AUDIT_KEY")
    code, out = verify(capsys, "--store", url)
    assert code == 0, out  # without the key, a consistent rewrite verifies...
    monkeypatch.setenv("TETHER_AUDIT_KEY", "kept-in-a-vault-not-in-the-database")
    code, out = verify(capsys, "--store", url)
    assert code == 1 and "unsigned:" in out, out  # ...with it, it does not


def test_a_pruned_session_is_not_reported_as_deleted(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    populate(url)
    store = open_store(url)
    try:
        assert store.prune(time.time() + 10) == 2
    finally:
        store.close()
    code, out = verify(capsys, "--store", url)
    assert code == 0, out


def test_a_cut_export_and_one_of_a_running_session_fail_verification(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    finished, _ = populate(url)
    path = tmp_path / "export.jsonl"
    assert verify(capsys, "--store", url)[0] == 0
    from tether.cli import main

    assert main(["audit", "export", "--session", finished, "--store", url, "-o",
                 str(path)]) == 0
    lines = path.read_text().splitlines()
    assert verify(capsys, "--file", str(path))[0] == 0
    path.write_text("\n".join(lines[:-4]) + "\n")  # the tail and the trailer cut off
    code, out = verify(capsys, "--file", str(path))
    assert code == 1 and "no trailer" in out, out
    path.write_text("\n".join([*lines[:-4], lines[-1]]) + "\n")  # the trailer kept
    code, out = verify(capsys, "--file", str(path))
    assert code == 1 and "were cut off or added" in out, out
    journal = Journal("still-running")
    journal.append("session.start", {"task": "t"})
    journal.append("step", {"i": 1})
    running = io.StringIO()
    write_jsonl(journal.events(), running)
    path.write_text(running.getvalue())
    code, out = verify(capsys, "--file", str(path))
    assert code == 1 and "neither ended nor paused" in out, out
