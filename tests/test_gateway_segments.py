"""A gateway's journal rolls into linked segments that verify as one chain, and a deleted,
swapped or relinked segment is reported — by ``check_segments`` and ``tether audit verify``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tether import Decision, Effect, tool
from tether.cli import main
from tether.journal.chain import GENESIS, seal, verify_chain
from tether.journal.segments import check_segments
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore
from tether.types import Event

effects: list[str] = []


@tool
def echo(n: int) -> str:
    """Say the number back."""
    return f"n={n}"


@tool(side_effect=True)
def pay(invoice: str) -> str:
    """Pay an invoice."""
    effects.append(invoice)
    return f"paid {invoice}"


class PaymentsNeedAPerson:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "pay":
            return Decision(Effect.REQUIRE_APPROVAL, "payments need a person", "pay")
        return Decision(Effect.ALLOW, "ok", "pay")


async def rolled(store: SQLiteStore, calls: int = 10, every: int = 3) -> tuple[Gateway,
                                                                                list[str]]:
    """A gateway that rolled its journal every ``every`` calls; its segments' ids in order."""
    gateway = Gateway([echo], policy=PaymentsNeedAPerson(), client="c", store=store,
                      roll_calls=every)
    ids = [gateway.id]
    for i in range(calls):
        await gateway.call("echo", {"n": i})
        if gateway.id != ids[-1]:
            ids.append(gateway.id)
    gateway.close()
    return gateway, ids


def segments_of(store: SQLiteStore, ids: Sequence[str]) -> dict[str, list[Event]]:
    return {sid: store.read(sid) for sid in ids}


async def test_the_journal_rolls_by_count_into_linked_segments(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    gateway, ids = await rolled(store)
    assert len(ids) == 4 and gateway.segment == 4  # calls 1-3, 4-6, 7-9, 10
    sessions = segments_of(store, ids)
    for number, sid in enumerate(ids, start=1):
        events = sessions[sid]
        assert verify_chain(events) is None  # each segment verifies on its own
        link = events[0].data["segment"]
        assert link["number"] == number
        if number > 1:
            before = sessions[ids[number - 2]]
            assert link["previous"] == {"session_id": ids[number - 2], "events": len(before),
                                        "head": before[-1].hash}
            assert before[-1].type == "session.end" and before[-1].data["next"] == sid
        calls = [e for e in events if e.type == "client.call"]
        assert len(calls) == (3 if number < 4 else 1)
    assert "next" not in sessions[ids[-1]][-1].data  # the last one ended: closed, not rolled
    assert check_segments(sessions) == []
    # the budget spans the segments: the last end records all ten calls
    assert sessions[ids[-1]][-1].data["spend"]["tool_calls"] == 10
    store.close()


async def test_the_journal_rolls_by_age() -> None:
    now = [0.0]
    gateway = Gateway([echo], policy=PaymentsNeedAPerson(), client="c", roll_seconds=60.0,
                      clock=lambda: now[0], store=MemoryStore())
    first = gateway.id
    await gateway.call("echo", {"n": 1})
    now[0] = 59.0
    await gateway.call("echo", {"n": 2})
    assert gateway.id == first
    now[0] = 60.0
    await gateway.call("echo", {"n": 3})
    assert gateway.id != first and gateway.segment == 2


async def test_off_means_one_session_without_links(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([echo], policy=PaymentsNeedAPerson(), client="c", store=store)
    first = gateway.id
    for i in range(50):
        await gateway.call("echo", {"n": i})
    assert gateway.id == first
    events = store.read(first)
    assert "segment" not in events[0].data
    store.close()


@pytest.mark.parametrize(("bad", "message"), [
    ({"roll_calls": 0, "store": MemoryStore()}, "roll_calls must be at least 1"),
    ({"roll_seconds": 0.0, "store": MemoryStore()}, "roll_seconds must be more than 0"),
    ({"roll_calls": 5}, "needs a store"),  # a rolled-over segment would be lost
])
def test_a_roll_must_be_positive_and_stored(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Gateway([echo], policy=PaymentsNeedAPerson(), **bad)


async def rolled_store(path: Path) -> tuple[str, list[str]]:
    """A store at ``path`` holding a rolled journal (closed): its URL and the segments' ids."""
    store = SQLiteStore(path)
    _, ids = await rolled(store)
    store.close()
    return f"sqlite:///{path}", ids


async def test_audit_verify_checks_the_segments_as_one_chain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = await rolled_store(tmp_path / "g.db")
    assert main(["audit", "verify", "--store", url]) == 0
    assert "segments: 4 linked, 0 findings" in capsys.readouterr().out
    # an attacker removes the second segment, its index row and all
    db = sqlite3.connect(tmp_path / "g.db", isolation_level=None)
    (key,) = db.execute("SELECT key FROM sessions WHERE session_id = ?", (ids[1],)).fetchone()
    db.execute("DELETE FROM events WHERE session_key = ?", (key,))
    db.execute("DELETE FROM sessions WHERE key = ?", (key,))
    db.close()
    assert main(["audit", "verify", "--store", url]) == 1
    out = capsys.readouterr().out
    assert f"session {ids[0]}: segment: it rolled into segment session {ids[1]}" in out
    assert f"session {ids[2]}: segment: segment 3 continues session {ids[1]}" in out
    assert "the segment before it was deleted" in out
    # one segment verified alone still has its links checked, against the store
    assert main(["audit", "verify", "--store", url, "--session", ids[2]]) == 1
    assert "the segment before it was deleted" in capsys.readouterr().out


async def test_audit_verify_reports_two_segments_swapped_in_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = await rolled_store(tmp_path / "g.db")
    db = sqlite3.connect(tmp_path / "g.db", isolation_level=None)
    swap = "UPDATE sessions SET session_id = ? WHERE session_id = ?"
    db.execute(swap, ("swapping", ids[1]))
    db.execute(swap, (ids[1], ids[2]))
    db.execute(swap, (ids[2], "swapping"))
    db.close()
    assert main(["audit", "verify", "--store", url]) == 1
    out = capsys.readouterr().out
    assert f"BROKEN  {ids[1]}" in out and f"BROKEN  {ids[2]}" in out  # their own chains
    assert f"session {ids[3]}: segment: segment 4: session {ids[2]} no longer ends" in out


async def test_audit_verify_reports_an_edited_link_in_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = await rolled_store(tmp_path / "g.db")
    db = sqlite3.connect(tmp_path / "g.db", isolation_level=None)
    (key,) = db.execute("SELECT key FROM sessions WHERE session_id = ?", (ids[2],)).fetchone()
    (text,) = db.execute("SELECT data FROM events WHERE session_key = ? AND seq = 1",
                         (key,)).fetchone()
    data = json.loads(text)
    data["segment"]["previous"]["session_id"] = ids[0]  # skip a segment
    db.execute("UPDATE events SET data = ? WHERE session_key = ? AND seq = 1",
               (json.dumps(data), key))
    db.close()
    assert main(["audit", "verify", "--store", url]) == 1
    out = capsys.readouterr().out
    assert f"BROKEN  {ids[2]}  seq 1: edited" in out  # its own chain
    assert f"session {ids[1]}: segment: its next segment, session {ids[2]}, does not link " \
        "back to it" in out
    assert f"session {ids[2]}: segment: segment 3: session {ids[0]} is not segment 2" in out


async def test_an_exported_journal_verifies_its_segments_offline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = await rolled_store(tmp_path / "g.db")
    export = tmp_path / "journal.jsonl"
    assert main(["audit", "export", "--store", url, "-o", str(export)]) == 0
    capsys.readouterr()
    assert main(["audit", "verify", "--file", str(export)]) == 0
    assert "segments: 4 linked, 0 findings" in capsys.readouterr().out
    assert main(["audit", "verify", "--file", str(export), "--session", ids[2]]) == 0
    kept = [line for line in export.read_text().splitlines()
            if json.loads(line).get("session_id") != ids[1]
            and json.loads(line).get("trailer", {}).get("session_id") != ids[1]]
    export.write_text("\n".join(kept) + "\n")
    assert main(["audit", "verify", "--file", str(export)]) == 1
    assert "the segment before it was deleted" in capsys.readouterr().out


# -- hostile edits by someone who can recompute a segment's own chain ---------------------------

def resealed(events: Sequence[Event], first: dict[str, Any] | None = None,
             last: dict[str, Any] | None = None) -> list[Event]:
    """``events`` with the first and/or last event's data replaced, every hash recomputed:
    the segment's own chain holds again."""
    out: list[Event] = []
    prev = GENESIS
    for i, e in enumerate(events):
        data = first if i == 0 and first is not None else (
            last if i == len(events) - 1 and last is not None else e.data)
        sealed = seal(prev, e.session_id, (e.seq, e.type, e.timestamp, dict(data)))
        out.append(sealed)
        prev = sealed.hash
    return out


async def test_two_swapped_segments_are_reported_even_with_their_chains_recomputed(
        tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    _, ids = await rolled(store, calls=12)  # five segments
    s = segments_of(store, ids)
    a, b, c, d = ids[:4]
    # present the chain as a, c, b, d: c and b relinked, each segment re-hashed
    s[c] = resealed(s[c], first={**s[c][0].data, "segment": {
        **s[c][0].data["segment"], "number": 2, "previous": {
            "session_id": a, "events": len(s[a]), "head": s[a][-1].hash}}})
    s[c] = resealed(s[c], last={**s[c][-1].data, "next": b})
    s[b] = resealed(s[b], first={**s[b][0].data, "segment": {
        **s[b][0].data["segment"], "number": 3, "previous": {
            "session_id": c, "events": len(s[c]), "head": s[c][-1].hash}}})
    s[b] = resealed(s[b], last={**s[b][-1].data, "next": d})
    assert all(verify_chain(events) is None for events in s.values())
    findings = check_segments(s)
    assert any(f.session_id == c and f"session {a} does not name this session" in f.detail
               for f in findings)
    assert any(f.session_id == d and "no longer ends with the head" in f.detail
               for f in findings)
    store.close()


async def test_an_edited_link_is_reported_even_with_the_chain_recomputed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    _, ids = await rolled(store)
    s = segments_of(store, ids)
    middle = ids[2]
    link = s[middle][0].data["segment"]
    s[middle] = resealed(s[middle], first={**s[middle][0].data, "segment": {
        **link, "previous": {**link["previous"], "head": "0" * 64}}})
    assert verify_chain(s[middle]) is None
    (finding,) = [f for f in check_segments(s) if f.session_id == middle]
    assert "no longer ends with the head this segment links to" in finding.detail
    # and the next segment, which links to the head the middle one had, sees it changed
    assert any(f.session_id == ids[3] for f in check_segments(s))
    # a middle segment made to look like the first: its predecessor still names it
    s[middle] = resealed(s[middle], first={**s[middle][0].data, "segment": {"number": 1}})
    assert any(f.session_id == ids[1] and "does not link back to it" in f.detail
               for f in check_segments(s))
    # a link that is not one
    s[middle] = resealed(s[middle], first={**s[middle][0].data, "segment": {"number": "2"}})
    assert any(f.session_id == middle and "malformed" in f.detail for f in check_segments(s))
    store.close()


async def test_a_segment_cut_short_breaks_the_next_link(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    _, ids = await rolled(store)
    s = segments_of(store, ids)
    s[ids[1]] = s[ids[1]][:-2]
    assert verify_chain(s[ids[1]]) is None  # a cut tail still chains
    assert any(f.session_id == ids[2] and "no longer ends with the head" in f.detail
               for f in check_segments(s))
    store.close()


# -- approvals across a roll ---------------------------------------------------------------------

async def test_an_approval_pending_across_a_roll_stays_pending_and_is_used_once(
        tmp_path: Path) -> None:
    effects.clear()
    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([pay, echo], policy=PaymentsNeedAPerson(), client="ide", store=store,
                      roll_calls=2)
    asked = await gateway.call("pay", {"invoice": "INV-1"})
    assert asked.status == "denied" and "Approval required" in asked.content
    first = gateway.id
    (request,) = gateway.approvals.pending(first)
    for i in range(3):  # the journal rolls on while the request waits
        await gateway.call("echo", {"n": i})
    assert gateway.id != first and gateway.segment >= 2
    assert [r.id for r in gateway.approvals.pending(first)] == [request.id]  # durable, pending
    gateway.approvals.approve(request.id, approver="maria")
    paid = await gateway.call("pay", {"invoice": "INV-1"})
    assert paid.status == "ok" and effects == ["INV-1"]
    again = await gateway.call("pay", {"invoice": "INV-1"})  # single use, in any segment
    assert again.status == "denied" and effects == ["INV-1"]
    used = gateway.approvals.get(request.id)
    assert used is not None and used.status == "used"
    # the segment that used it records the approval it used, and verifies
    gateway.close()
    events = store.read(used.used_by.split("/")[0])
    assert any(e.type == "approval.granted" and e.data["approval_id"] == request.id
               for e in events)
    assert verify_chain(events) is None
    store.close()


# -- the MCP server's clients --------------------------------------------------------------------

async def test_an_mcp_clients_journal_rolls_as_the_server_is_told(tmp_path: Path) -> None:
    from tether.serve.clients import ClientGateways, Governance

    store = SQLiteStore(tmp_path / "g.db")
    gateways = ClientGateways([echo], Governance(PaymentsNeedAPerson(), store, roll_calls=2))
    outcomes = [await gateways.call("stdio", "echo", {"n": i}) for i in range(5)]
    sessions = [o.session_id for o in outcomes]  # what the client sees in tether/session
    assert sessions[0] == sessions[1] != sessions[2] == sessions[3] != sessions[4]
    (gateway,) = gateways.gateways
    gateway.close()
    linked = {sid: store.read(sid) for sid in dict.fromkeys(sessions)}
    assert [e[0].data["segment"]["number"] for e in linked.values()] == [1, 2, 3]
    assert check_segments(linked) == []
    store.close()


@pytest.mark.parametrize("flag", [["--roll-calls", "0"], ["--roll-after", "-1"]])
def test_the_cli_refuses_a_roll_that_is_not_positive(
        flag: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "examples/mcp_notes.py:tools", *flag]) == 2
    assert f"argument {flag[0]}: expected a" in capsys.readouterr().err


# -- what is not a deletion ----------------------------------------------------------------------

async def test_segments_pruned_by_the_store_are_not_reported_and_deleted_ones_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = await rolled_store(tmp_path / "g.db")
    store = SQLiteStore(tmp_path / "g.db")
    first_end, second_end = (store.read(sid)[-1].timestamp for sid in ids[:2])
    assert store.prune((first_end + second_end) / 2) == 1  # the oldest segment, anchored
    store.close()
    assert main(["audit", "verify", "--store", url]) == 0
    assert "segments: 3 linked, 0 findings" in capsys.readouterr().out
    # the next oldest, deleted outside tether: reported
    db = sqlite3.connect(tmp_path / "g.db", isolation_level=None)
    (key,) = db.execute("SELECT key FROM sessions WHERE session_id = ?", (ids[1],)).fetchone()
    db.execute("DELETE FROM events WHERE session_key = ?", (key,))
    db.execute("DELETE FROM sessions WHERE key = ?", (key,))
    db.close()
    assert main(["audit", "verify", "--store", url]) == 1
    assert f"segment 3 continues session {ids[1]}" in capsys.readouterr().out


async def test_an_export_of_some_segments_is_a_selection_not_a_deletion(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, ids = await rolled_store(tmp_path / "g.db")
    one = tmp_path / "one.jsonl"
    assert main(["audit", "export", "--store", url, "--session", ids[2], "-o", str(one)]) == 0
    capsys.readouterr()
    assert main(["audit", "verify", "--file", str(one)]) == 0
    assert "segments: 1 linked, 0 findings" in capsys.readouterr().out


async def test_every_store_keeps_a_rolled_gateway_whole(store: Store) -> None:
    """Memory, SQLite and PostgreSQL (its commits awaited on the loop): the segments link up,
    each verifies, the journal reads what it let go of back from the store, and an approval
    asked for in one segment is used once in a later one."""
    effects.clear()
    gateway = Gateway([pay, echo], policy=PaymentsNeedAPerson(), client="ide", store=store,
                      roll_calls=4)
    ids = [gateway.id]
    await gateway.call("pay", {"invoice": "INV-9"})
    (request,) = gateway.approvals.pending(gateway.id)
    for i in range(9):
        await gateway.call("echo", {"n": i})
        if gateway.id != ids[-1]:
            ids.append(gateway.id)
    assert gateway.journal.events() == store.read(gateway.id)
    gateway.approvals.approve(request.id, approver="maria")
    assert (await gateway.call("pay", {"invoice": "INV-9"})).status == "ok"
    assert (await gateway.call("pay", {"invoice": "INV-9"})).status == "denied"
    assert effects == ["INV-9"]
    gateway.close()
    sessions = {sid: store.read(sid) for sid in dict.fromkeys([*ids, gateway.id])}
    assert len(sessions) >= 3
    assert all(verify_chain(events) is None for events in sessions.values())
    assert check_segments(sessions) == []


async def test_a_subscriber_hears_every_segment_of_a_rolled_journal(tmp_path: Path) -> None:
    """What subscribed to a gateway's journal (telemetry, a live view) keeps hearing it across a
    roll: every event of every segment, each once, in order."""
    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([echo], policy=PaymentsNeedAPerson(), client="c", store=store,
                      roll_calls=2)
    heard: list[tuple[str, int, str]] = []
    gateway.journal.bus.subscribe(lambda e: heard.append((e.session_id, e.seq, e.type)))
    ids = [gateway.id]
    for i in range(7):
        await gateway.call("echo", {"n": i})
        if gateway.id != ids[-1]:
            ids.append(gateway.id)
    gateway.close()
    assert len(ids) == 4
    stored = [(sid, e.seq, e.type) for sid in ids for e in store.read(sid)]
    assert heard == stored
    store.close()
