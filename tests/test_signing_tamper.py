"""Every tamper of the battery against a signed store (SQLite, PostgreSQL) and a signed export,
verified in a separate process that holds only the public keys: no audit key, no private key.

The store is checkpointed (signed by the operator, cosigned by a witness) after its sessions
were written; then someone with the database edits, deletes, reorders or cuts events, removes a
whole session, flips an approval, or cuts sessions together with their anchors (rewriting the
anchor chain to match and deleting the checkpoint rows) — and verify names it. Where no
witnessed checkpoint postdates the cut, the outcome is the one docs/guide/signing.md states: not
detected, and the assurance line says which anchors no checkpoint covers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import audit_app
from audit_helpers import Raw, store_url
from signing_helpers import Keys, make_keys, verify_outside, witness_thread
from test_audit_anchors import _delete_session, _sql, flip_approval
from test_audit_tamper import MUTATIONS, lines_of, populate, write
from tether.cli import main
from tether.journal.chain import seal


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("TETHER_AUDIT_KEY", raising=False)
    monkeypatch.delenv("TETHER_SIGNING_KEY", raising=False)
    with store_url(request.param, tmp_path) as made:
        yield made


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path)


@pytest.fixture
def witness(keys: Keys, tmp_path: Path) -> Iterator[str]:
    with witness_thread(keys, tmp_path / "witness-state.json") as where:
        yield where


def checkpoint(url: str, keys: Keys, witness: str) -> None:
    assert main(["audit", "checkpoint", "--store", url, "--key", keys.operator_key,
                 "--witness", witness]) == 0


def public(keys: Keys, witness: str | None = None) -> list[str]:
    given = ["--public-key", keys.operator_pub, "--witness-key", keys.witness_pub]
    return given if witness is None else [*given, "--witness", witness]


def test_a_signed_and_witnessed_store_verifies_with_public_keys_only(
        url: str, keys: Keys, witness: str) -> None:
    finished, paused = populate(url)
    checkpoint(url, keys, witness)
    code, out = verify_outside("--store", url, *public(keys, witness))
    assert code == 0, out
    assert f"ok      {finished}  23 events" in out and f"ok      {paused}  10 events" in out
    assert "assurance: witnessed at size" in out and "by witness.example/w1" in out
    assert "signed by operator key example.com/tether/prod" in out


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_event_tamper_is_caught_with_public_keys_only(
        name: str, url: str, keys: Keys, witness: str) -> None:
    finished, paused = populate(url)
    checkpoint(url, keys, witness)
    mutate, kind, seq_of, _ = MUTATIONS[name]
    raw = Raw(url)
    try:
        n = raw.count(finished)
        mutate(raw, finished, n)
    finally:
        raw.close()
    code, out = verify_outside("--store", url, *public(keys, witness))
    assert code == 1, out
    assert f"BROKEN  {finished}  seq {seq_of(n)}: {kind}: " in out, out
    assert f"ok      {paused}" in out


def _cut_with_anchors(url: str, sid: str, *, checkpoints: bool = True) -> None:
    """Delete a session, rebuild the anchor chain without it (every hash agreeing), and delete
    the checkpoint rows: the cut the audit key or a witness is for."""
    raw = Raw(url)
    try:
        _delete_session(raw, sid)
        raw.rewrite_anchors([{**row, "mac": None} for row in raw.anchors()
                             if row["session_id"] != sid])
        if checkpoints:
            _sql(raw, "DELETE FROM {s}checkpoints")
    finally:
        raw.close()


def test_a_whole_session_removed_with_its_anchors_is_caught_by_the_witness(
        url: str, keys: Keys, witness: str) -> None:
    _, paused = populate(url)
    checkpoint(url, keys, witness)
    _cut_with_anchors(url, paused)
    code, out = verify_outside("--store", url)
    assert code == 0, out  # the chain alone: a consistent rewrite verifies...
    assert "assurance: chain only" in out
    code, out = verify_outside("--store", url, *public(keys, witness))
    assert code == 1, out  # ...the witness's newest checkpoint does not
    assert "BROKEN  checkpoint: the witness at" in out and "anchors were cut" in out, out


def test_a_checkpoint_kept_in_the_store_catches_a_cut_without_the_witness(
        url: str, keys: Keys, witness: str) -> None:
    _, paused = populate(url)
    checkpoint(url, keys, witness)
    _cut_with_anchors(url, paused, checkpoints=False)
    code, out = verify_outside("--store", url, *public(keys))
    assert code == 1, out
    assert "BROKEN  checkpoint: the store's checkpoint 1:" in out, out


def test_a_cut_after_the_newest_checkpoint_is_not_detected_and_the_assurance_says_so(
        url: str, keys: Keys, witness: str) -> None:
    populate(url)
    checkpoint(url, keys, witness)
    newer, _ = audit_app.start(url)  # written after the checkpoint: no checkpoint covers it
    code, out = verify_outside("--store", url, *public(keys, witness))
    assert code == 0 and "; the 2 newest anchors: chain only" in out, out
    raw = Raw(url)
    try:  # the newest session and its anchors (the newest of their lanes) cut, nothing else
        _delete_session(raw, newer)
        _sql(raw, "DELETE FROM {s}anchors WHERE session_id = ?", newer)
    finally:
        raw.close()
    code, out = verify_outside("--store", url, *public(keys, witness))
    assert code == 0, out  # the stated outcome: what no checkpoint covers can be cut unseen
    assert "newest anchor" not in out and "signed by operator key" in out, out


def test_an_approval_flipped_in_the_table_is_caught_with_public_keys_only(
        url: str, keys: Keys, witness: str) -> None:
    _, paused = populate(url)
    checkpoint(url, keys, witness)
    flip_approval(url, paused)
    code, out = verify_outside("--store", url, *public(keys, witness))
    assert code == 1 and f"BROKEN  session {paused}: approval:" in out, out


def test_a_checkpoint_forged_in_the_store_is_caught(url: str, keys: Keys, witness: str,
                                                   tmp_path: Path) -> None:
    populate(url)
    checkpoint(url, keys, witness)
    raw = Raw(url)
    try:
        ((note,),) = _sql(raw, "SELECT note FROM {s}checkpoints")
        _sql(raw, "UPDATE {s}checkpoints SET note = ?", str(note).replace("\n6\n", "\n5\n")
             if "\n6\n" in str(note) else str(note).replace("tether-lanes", "tether-lanes 0"))
    finally:
        raw.close()
    code, out = verify_outside("--store", url, *public(keys))
    assert code == 1 and "BROKEN  checkpoint: the store's checkpoint 1:" in out, out


# -- a signed export ----------------------------------------------------------------------------

@pytest.fixture
def signed_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys: Keys,
                  capsys: pytest.CaptureFixture[str]) -> tuple[Path, str, str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    finished, paused = populate(url)
    path = tmp_path / "export.jsonl"
    monkeypatch.setenv("TETHER_SIGNING_KEY", keys.operator_key)
    assert main(["audit", "export", "--store", url, "-o", str(path)]) == 0
    monkeypatch.delenv("TETHER_SIGNING_KEY")
    capsys.readouterr()
    return path, finished, paused


def _rehash(lines: list[dict[str, Any]], sid: str) -> None:
    """Recompute a session's chain and trailer after an edit, as an attacker who knows the
    algorithm (and has no key) would."""
    prev = "0" * 64
    events = [ln for ln in lines if ln.get("session_id") == sid]
    for event in events:
        event["prev_hash"] = prev
        event["hash"] = prev = seal(prev, sid, (event["seq"], event["type"], event["timestamp"],
                                                event["data"])).hash
    for line in lines:
        if "trailer" in line and line["trailer"]["session_id"] == sid:
            line["trailer"].update(count=len(events), head=prev)


def _tamper(kind: str, lines: list[dict[str, Any]], finished: str) -> list[dict[str, Any]]:
    mine = [i for i, ln in enumerate(lines) if ln.get("session_id") == finished]
    if kind == "edit":
        lines[mine[3]]["data"]["arguments"]["order"] = "B9"
    elif kind == "delete":
        del lines[mine[6]]
    elif kind == "reorder":
        lines[mine[8]], lines[mine[9]] = lines[mine[9]], lines[mine[8]]
    elif kind == "truncate":  # cut back to its pause, the trailer fixed to match
        pause = next(i for i in mine if lines[i]["type"] == "session.paused")
        lines = [ln for i, ln in enumerate(lines) if i not in mine or i <= pause]
        _rehash(lines, finished)
    elif kind == "remove session":
        lines = [ln for ln in lines if ln.get("session_id", ln.get("trailer", {}).get(
            "session_id")) != finished]
    elif kind == "approval flip":  # the approver renamed, the chain recomputed to match
        granted = next(i for i in mine if lines[i]["type"] == "approval.granted")
        lines[granted]["data"]["approver"] = "mallory"
        _rehash(lines, finished)
    elif kind == "manifest cut":
        lines = lines[:-1]
    return lines


@pytest.mark.parametrize(("kind", "expected"), [
    ("edit", "seq 4: edited:"), ("delete", "seq 7: missing:"), ("reorder", "seq 9: reordered:"),
    ("truncate", "signed manifest says 23 events"), ("remove session", "it was removed"),
    ("approval flip", "signed manifest says 23 events"),
    ("manifest cut", "no manifest signed by"),
])
def test_every_tamper_of_a_signed_export_is_caught_with_the_public_key_only(
        kind: str, expected: str, signed_export: tuple[Path, str, str], keys: Keys) -> None:
    path, finished, paused = signed_export
    code, out = verify_outside("--file", str(path), "--public-key", keys.operator_pub)
    assert code == 0 and "assurance: signed by operator key" in out, out
    write(path, _tamper(kind, lines_of(path), finished))
    code, out = verify_outside("--file", str(path), "--public-key", keys.operator_pub)
    assert code == 1, out
    assert expected in out, out
    if kind not in ("manifest cut",):
        assert f"ok      {paused}" in out, out


def test_a_consistent_rewrite_of_an_export_passes_without_the_key(
        signed_export: tuple[Path, str, str]) -> None:
    path, finished, _ = signed_export
    write(path, _tamper("approval flip", lines_of(path), finished))
    code, out = verify_outside("--file", str(path))
    assert code == 0 and "assurance: chain and trailers only" in out, out
