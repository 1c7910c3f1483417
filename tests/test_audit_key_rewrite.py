"""With ``TETHER_AUDIT_KEY`` kept outside the database, a rewrite of the whole database is
detected: someone edits an event, recomputes that session's hash chain, fixes the anchored heads
and rebuilds the anchor chain to match (keeping the MAC column filled). Without the key such a
rewrite verifies — which is why the key is kept elsewhere; with it, ``audit verify`` fails."""

from __future__ import annotations

from typing import Any

import pytest

from audit_helpers import Raw
from test_audit_anchors import _sql, url  # noqa: F401 (url: the per-backend store fixture)
from test_audit_tamper import populate, verify
from tether.cli import main
from tether.journal.chain import GENESIS, canonical_text, seal

KEY = "kept-in-a-vault-not-in-the-database"


def _rewrite_session(raw: Raw, sid: str, edit: Any) -> dict[int, str]:
    """Apply ``edit`` to each event's data and re-chain the session; its new hashes by seq."""
    hashes: dict[int, str] = {}
    prev = GENESIS
    for seq in range(1, raw.count(sid) + 1):
        row = raw.row(sid, seq)
        data = edit(row["type"], row["data"])
        event = seal(prev, sid, (seq, row["type"], row["ts"], data))
        raw._run(f"UPDATE {raw.events} SET data = ?, prev_hash = ?, hash = ? "
                 f"WHERE {raw.session} AND seq = ?", canonical_text(data), prev, event.hash,
                 sid, seq)
        prev = hashes[seq] = event.hash
    return hashes


def _rewrite_anchors(raw: Raw, sid: str, hashes: dict[int, str]) -> None:
    """Rebuild every anchor lane over the new heads, each row keeping the MAC it had."""
    rows = raw.anchors()
    for row in rows:
        if row["kind"] == "head" and row["session_id"] == sid:
            row["body"]["head"] = hashes[row["body"]["seq"]]
    raw.rewrite_anchors(rows)


def test_a_rewrite_of_the_whole_database_is_caught_with_the_audit_key(
        url: str, capsys: pytest.CaptureFixture[str],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_AUDIT_KEY", KEY)
    finished, _ = populate(url)
    code, out = verify(capsys, "--store", url)
    assert code == 0 and "signed and checked with the audit key" in out, out

    def edit(type: str, data: dict[str, Any]) -> dict[str, Any]:
        if type == "session.start":
            data["task"] = "REWRITTEN TASK"
        return data

    raw = Raw(url)
    try:
        _rewrite_anchors(raw, finished, _rewrite_session(raw, finished, edit))
    finally:
        raw.close()
    monkeypatch.delenv("TETHER_AUDIT_KEY")
    code, out = verify(capsys, "--store", url)
    assert code == 0, out  # the rewrite is consistent: every chain and anchor holds
    assert main(["audit", "show", finished, "--store", url]) == 0
    assert "REWRITTEN TASK" in capsys.readouterr().out
    monkeypatch.setenv("TETHER_AUDIT_KEY", KEY)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"BROKEN  session {finished}: unsigned:" in out, out
    monkeypatch.setenv("TETHER_AUDIT_KEY", "a-guessed-key")
    code, out = verify(capsys, "--store", url)
    assert code == 1 and "unsigned:" in out  # a wrong key holds nothing up either
