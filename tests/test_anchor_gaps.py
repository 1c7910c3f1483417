"""What the anchor chain must report that no earlier test made it: anchors signed with another
key or carrying stale signatures, a session written into the tables with a valid chain of its own
and no anchor, and an approval whose approver, note, time or call hash was edited after its
decision was anchored. Each is done with raw SQL on SQLite and PostgreSQL, as someone with
database access (but not the audit key) would, and ``tether audit verify`` must say so."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit_helpers import Raw, store_url
from test_audit_anchors import _delete_session, _sql
from test_audit_tamper import populate, verify
from tether.journal.chain import GENESIS, seal
from tether.store.anchor_chain import ANCHOR_GENESIS, seal_anchor

AUDIT_KEY = "kept-in-a-vault-not-in-the-database"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AUDIT_APP_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("TETHER_AUDIT_KEY", raising=False)
    with store_url(request.param, tmp_path) as made:
        yield made


def _tampered(url: str, change: Any) -> None:
    raw = Raw(url)
    try:
        change(raw)
    finally:
        raw.close()


def _rechain(raw: Raw, *, drop: str = "", sign: Any = None) -> None:
    """Rebuild the whole anchor chain, without ``drop``'s anchors, each anchor's MAC given by
    ``sign(position, hash, old mac)`` — what someone without the audit key can do."""
    rows = _sql(raw, "SELECT kind, session_id, body, mac FROM {s}anchors ORDER BY seq")
    _sql(raw, "DELETE FROM {s}anchors")
    prev, position = ANCHOR_GENESIS, 0
    for kind, sid, body, mac in rows:
        if sid == drop:
            continue
        text, digest, _ = seal_anchor(prev, json.loads(str(body)), None)
        _sql(raw, "INSERT INTO {s}anchors (kind, session_id, body, prev, hash, mac) "
                  "VALUES (?, ?, ?, ?, ?, ?)", kind, sid, text, prev, digest,
             None if sign is None else sign(position, digest, mac))
        prev, position = digest, position + 1


def _mac(key: str, digest: str) -> str:
    return hmac.new(key.encode(), digest.encode(), "sha256").hexdigest()


# -- signatures: another key, or stale MACs, are reported with the audit key set ----------------

@pytest.fixture
def signed(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A store written with the audit key, verified clean with it."""
    monkeypatch.setenv("TETHER_AUDIT_KEY", AUDIT_KEY)
    return url, populate(url)[0]


def test_anchors_resigned_with_another_key_are_reported(
        signed: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Breaks it: verify checking only that each anchor has a MAC, not that the key made it."""
    url, finished = signed
    assert verify(capsys, "--store", url)[0] == 0
    _tampered(url, lambda raw: (_delete_session(raw, finished), _rechain(
        raw, drop=finished, sign=lambda _, digest, __: _mac("the-attackers-own-key", digest))))
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    anchors = out.count("unsigned: anchor ")  # every anchor: each was signed by the wrong key
    assert anchors >= 2 and out.count("is not signed by the audit key") == anchors, out
    assert f"anchor chain: {anchors} anchors, signed and checked with the audit key" in out


def test_anchors_with_stale_macs_are_reported(
        signed: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Breaks it: the same. The chain is rebuilt without a session, and every anchor keeps the
    MAC the one at its place had: genuine MACs, of hashes that are no longer there."""
    url, finished = signed

    def stale(raw: Raw) -> None:
        macs = [mac for (mac,) in _sql(raw, "SELECT mac FROM {s}anchors ORDER BY seq")]
        _delete_session(raw, finished)  # its start is the first anchor: every other one moves
        _rechain(raw, drop=finished, sign=lambda position, __, ___: macs[position])

    _tampered(url, stale)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "is not signed by the audit key" in out


def test_an_anchor_given_another_anchors_mac_is_reported(
        signed: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Breaks it: the same. Nothing else changes: only the first anchor's MAC is swapped for
    the second's (both made with the audit key)."""
    url, _ = signed

    def swap(raw: Raw) -> None:
        (first, one), (_, two) = _sql(raw, "SELECT seq, mac FROM {s}anchors ORDER BY seq")[:2]
        assert one and two and one != two
        _sql(raw, "UPDATE {s}anchors SET mac = ? WHERE seq = ?", two, first)

    _tampered(url, swap)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert out.count("BROKEN") == 1 and "unsigned: anchor 1 " in out


# -- a session written into the tables, with a valid chain and no anchor -------------------------

def _write_outside_tether(raw: Raw, sid: str) -> None:
    """A session of four correctly chained events, inserted row by row with plain SQL."""
    start = {"task": "wire the money", "agent": "billing", "system_prompt": "", "model": "m",
             "tools": [], "budget": {}, "context": {},
             "subject": {"user_id": "u-7", "tenant_id": "acme", "roles": []}}
    events, prev = [], GENESIS
    for seq in range(1, 5):
        kind, data = (("session.start", start) if seq == 1 else
                      ("session.end", {"reason": "finished"}) if seq == 4 else
                      ("session.note", {"text": str(seq)}))
        event = seal(prev, sid, (seq, kind, 1_700_000_000.0 + seq, data))
        events.append(event)
        prev = event.hash
    _sql(raw, "INSERT INTO {s}sessions (session_id, tenant_id, agent, created_at, updated_at, "
              "events, last_type) VALUES (?, 'acme', 'billing', ?, ?, 4, 'session.end')",
         sid, events[0].timestamp, events[-1].timestamp)
    for event in events:
        raw.insert(sid, event.seq, {"type": event.type, "ts": event.timestamp,
                                    "data": dict(event.data), "prev_hash": event.prev_hash,
                                    "hash": event.hash})


def test_a_session_with_a_valid_chain_and_no_anchor_is_reported(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Breaks it: verify not looking for stored sessions that no anchor records."""
    populate(url)
    _tampered(url, lambda raw: _write_outside_tether(raw, "slipped-in"))
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "ok      slipped-in  4 events" in out  # its own chain holds...
    assert "BROKEN  session slipped-in: unanchored: no anchor records this session's start" \
        in out  # ...and the anchor chain never heard of it
    assert out.count("BROKEN") == 1
    code, out = verify(capsys, "--store", url, "--session", "slipped-in")
    assert code == 1 and "unanchored" in out, out


def test_events_of_a_session_the_index_does_not_list_are_reported(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The same session with no row in the sessions table: only its events are stored (in
    SQLite they then carry a session key nothing names). Breaks it: verify reading only the
    sessions the index lists."""
    finished, paused = populate(url)

    def events_only(raw: Raw) -> None:
        _write_outside_tether(raw, "slipped-in")
        _sql(raw, "DELETE FROM {s}sessions WHERE session_id = ?", "slipped-in")

    _tampered(url, events_only)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"ok      {finished}" in out and f"ok      {paused}" in out
    named = "key " if url.startswith("sqlite") else "slipped-in"
    assert f"BROKEN  {named}" in out and "the store's index does not list" in out, out
    assert "1 broken" in out


def test_a_session_whose_anchors_were_cut_out_of_the_chain_is_reported(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Breaks it: the same. A real session, its anchors removed and the chain rebuilt."""
    finished, _ = populate(url)
    _tampered(url, lambda raw: _rechain(raw, drop=finished))
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"BROKEN  session {finished}: unanchored:" in out
    # its approval's decision went with its anchors: reported as decided outside tether
    assert f"BROKEN  session {finished}: approval:" in out


# -- an approval edited after its decision was anchored ----------------------------------------

EDITS: dict[str, Any] = {
    "approver": "mallory",
    "note": "approved by phone",
    "decided_at": lambda record: record["decided_at"] + 3600,
    "call_hash": lambda record: hashlib.sha256(b"another call").hexdigest(),
    "status": "denied",
}


@pytest.mark.parametrize("field", list(EDITS))
def test_an_approval_edited_after_its_anchored_decision_is_reported(
        field: str, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Breaks it: a field left out of the anchored decision, or out of verify's comparison."""
    finished, _ = populate(url)

    def edit(raw: Raw) -> None:
        ((approval_id, text),) = _sql(raw, "SELECT id, record FROM {s}approvals WHERE "
                                           "session_id = ?", finished)
        record = json.loads(str(text))
        assert record["status"] == "used" and record["approver"] == "maria"
        change = EDITS[field]
        record[field] = change(record) if callable(change) else change
        assert record[field] != json.loads(str(text))[field]
        _sql(raw, "UPDATE {s}approvals SET status = ?, record = ? WHERE id = ?",
             record["status"], json.dumps(record), approval_id)

    _tampered(url, edit)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert (f"BROKEN  session {finished}: approval: approval apr_" in out
            and f"differs from its anchored decision in {field}: it was changed outside "
                "tether" in out), out


def test_a_decided_approval_deleted_from_the_table_is_reported(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The approvals row of a decided approval is deleted; the session is left alone. Breaks
    it: verify comparing only the approval records that are still stored."""
    finished, _ = populate(url)
    _tampered(url, lambda raw: _sql(raw, "DELETE FROM {s}approvals WHERE session_id = ?",
                                    finished))
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert f"BROKEN  session {finished}: approval: approval apr_" in out
    assert "is no longer stored: it was deleted outside tether" in out
    assert out.count("BROKEN") == 1  # the paused session's pending approval is no decision

