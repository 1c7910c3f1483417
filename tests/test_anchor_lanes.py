"""A PostgreSQL store keeps its anchors in lanes, and an attacker who works lane by lane is
caught: a whole lane's anchors deleted with its sessions, one lane's tail cut, an anchor moved to
another lane, two lanes relabelled, an anchor put outside the store's lanes, the lane count
changed. A store from before lanes (schema 6) is migrated, lane 0 continuing its chain, and still
verifies. Sessions are placed in chosen lanes by holding every other lane's row, as a busy
writer would (a transaction takes the first lane nobody holds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit_helpers import Raw, pg_database
from test_audit_tamper import verify
from tether import Agent, ReAct, ScriptedModel
from tether.store.anchor_chain import lane_genesis
from tether.store.opening import open_store
from tether.store.postgres_schema import ANCHOR_LANES


@pytest.fixture
def url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    monkeypatch.delenv("TETHER_AUDIT_KEY", raising=False)
    with pg_database() as made:
        open_store(made).close()  # created with its lanes
        yield made


def run_in_lane(url: str, lane: int | None) -> str:
    """One short session whose anchors go to ``lane`` (every other lane held meanwhile)."""
    holder = Raw(url)
    try:
        if lane is not None:
            holder._run("BEGIN")
            holder._run("SELECT lane FROM tether.anchor_lanes WHERE lane <> ? FOR UPDATE", lane)
        agent = Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), store=url)
        result = agent.run("go")
        assert result.stop_reason == "finished"
        if lane is not None:
            holder._run("COMMIT")
    finally:
        holder.close()
    return result.session_id


def anchors(url: str) -> list[dict[str, Any]]:
    raw = Raw(url)
    try:
        return raw.anchors()
    finally:
        raw.close()


def sql(url: str, statement: str, *args: Any) -> None:
    raw = Raw(url)
    try:
        raw._run(statement, *args)
    finally:
        raw.close()


def delete_session(url: str, sid: str) -> None:
    for table in ("events", "sessions"):
        sql(url, f"DELETE FROM tether.{table} WHERE session_id = ?", sid)


def test_sessions_in_two_lanes_verify_and_witness_each_other(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = run_in_lane(url, 3), run_in_lane(url, 5)
    rows = anchors(url)
    assert {(r["session_id"], r["lane"]) for r in rows} == {(first, 3), (second, 5)}
    witnessed = [r["body"]["witness"] for r in rows if r["lane"] == 5]
    assert witnessed[0][3] == 2 and len(witnessed[0]) == ANCHOR_LANES  # start and end of first
    code, out = verify(capsys, "--store", url)
    assert code == 0 and f"({ANCHOR_LANES} lanes)" in out, out


def test_a_whole_lane_deleted_with_its_sessions_is_detected(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_in_lane(url, 3)
    run_in_lane(url, 5)
    delete_session(url, first)
    sql(url, "DELETE FROM tether.anchors WHERE lane = 3")
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "saw 2 anchors in lane 3, which holds 0: that lane's tail was cut" in out, out


def test_one_lanes_tail_cut_is_detected(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    run_in_lane(url, 3)
    last = run_in_lane(url, 3)
    run_in_lane(url, 5)
    delete_session(url, last)
    sql(url, "DELETE FROM tether.anchors WHERE session_id = ?", last)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "saw 4 anchors in lane 3, which holds 2" in out, out


def test_an_anchor_moved_to_another_lane_is_detected(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_in_lane(url, 3)
    run_in_lane(url, 5)
    moved = next(r["seq"] for r in anchors(url) if r["session_id"] == first)
    sql(url, "UPDATE tether.anchors SET lane = 5 WHERE seq = ?", moved)
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "the anchor chain in lane 3 breaks" in out and "in lane 5 breaks" in out, out


def test_two_lanes_relabelled_are_detected(url: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    run_in_lane(url, 3)
    run_in_lane(url, 5)
    sql(url, "UPDATE tether.anchors SET lane = 8 - lane")  # 3 <-> 5
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "in lane 3 breaks" in out and "in lane 5 breaks" in out, out


def test_an_anchor_outside_the_stores_lanes_and_a_changed_lane_count_are_detected(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_in_lane(url, 0)
    run_in_lane(url, 2)
    sql(url, "UPDATE tether.anchors SET lane = 99 WHERE session_id = ?", first)
    code, out = verify(capsys, "--store", url)
    assert code == 1 and "is in lane 99, and the store keeps lanes 0 to 15" in out, out
    sql(url, "UPDATE tether.anchors SET lane = 0 WHERE session_id = ?", first)
    assert verify(capsys, "--store", url)[0] == 0
    sql(url, "UPDATE tether.meta SET value = '1' WHERE key = 'anchor_lanes'")
    code, out = verify(capsys, "--store", url)
    assert code == 1, out
    assert "is in lane 2, and the store keeps lanes 0 to 0" in out, out
    assert f"saw {ANCHOR_LANES} lanes, and the store keeps 1" in out, out


def test_a_writer_holding_a_lane_does_not_stop_another(url: str) -> None:
    holder = Raw(url)
    try:  # a transaction that holds every lane but one, until its commit
        holder._run("BEGIN")
        holder._run("SELECT lane FROM tether.anchor_lanes WHERE lane <> 7 FOR UPDATE")
        sid = run_in_lane(url, None)  # did not wait: it took the free lane
        holder._run("COMMIT")
    finally:
        holder.close()
    assert {r["lane"] for r in anchors(url) if r["session_id"] == sid} == {7}


def test_a_store_from_before_lanes_migrates_and_verifies(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sql(url, "UPDATE tether.meta SET value = '1' WHERE key = 'anchor_lanes'")
    old = run_in_lane(url, None)  # one lane: the single chain of before
    assert all("witness" not in r["body"] and r["lane"] == 0 for r in anchors(url))
    for statement in ("DROP TABLE tether.anchor_lanes", "ALTER TABLE tether.anchors DROP "
                      "COLUMN lane", "DELETE FROM tether.meta WHERE key = 'anchor_lanes'",
                      "UPDATE tether.meta SET value = '6' WHERE key = 'schema_version'"):
        sql(url, statement)  # now as a tether before lanes left it
    open_store(url).close()  # opening it migrates it
    new = run_in_lane(url, 4)
    rows = anchors(url)
    assert [r["lane"] for r in rows if r["session_id"] == old] == [0, 0]
    assert [r["lane"] for r in rows if r["session_id"] == new] == [4, 4]
    raw = Raw(url)
    try:
        lanes = dict(raw._run("SELECT lane, length FROM tether.anchor_lanes"))
        genesis = raw._run("SELECT hash FROM tether.anchor_lanes WHERE lane = 9")[0][0]
    finally:
        raw.close()
    assert lanes[0] == 2 and lanes[4] == 2 and len(lanes) == ANCHOR_LANES
    assert genesis == lane_genesis(9) != lane_genesis(0)
    code, out = verify(capsys, "--store", url)
    assert code == 0, out
    delete_session(url, old)  # and the old chain still catches what it caught
    code, out = verify(capsys, "--store", url)
    assert code == 1 and f"session {old}: deleted:" in out, out


def test_a_body_filed_under_another_session_is_detected(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = run_in_lane(url, 1), run_in_lane(url, 1)
    body = json.dumps(anchors(url)[0]["body"])
    assert first in body
    sql(url, "UPDATE tether.anchors SET session_id = ? WHERE session_id = ?", second, first)
    code, out = verify(capsys, "--store", url)
    assert code == 1 and "filed under another session" in out, out
