"""The pieces under the audit commands: tamper diagnosis on event lists, the export format, times,
and the timeline's handling of events it does not know."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from datetime import UTC, datetime

import pytest

from tether.cli.common import STORE_HELP, parse_time
from tether.journal.chain import Journal
from tether.journal.tamper import Break, diagnose
from tether.journal.views.export import ExportFormatError, read_jsonl, write_jsonl
from tether.journal.views.timeline import excerpt, timeline
from tether.store.base import DEFAULT_URL
from tether.store.sqlite import path_of
from tether.types import Event


def chain(n: int = 6, session_id: str = "s1") -> list[Event]:
    journal = Journal(session_id)
    journal.append("session.start", {"task": "t", "agent": "a", "subject": {}})
    for i in range(n - 1):
        journal.append("step", {"i": i})
    return journal.events()


def test_an_intact_chain_has_no_break_and_the_index_catches_tails() -> None:
    events = chain()
    assert diagnose("s1", events) is None
    assert diagnose("s1", events, recorded=6) is None
    assert diagnose("s1", [], recorded=None) is None
    cut = diagnose("s1", events[:4], recorded=6)
    assert cut == Break("s1", 5, "missing", cut.detail if cut else "")
    assert cut is not None and "the last 2 were deleted" in cut.detail
    grown = diagnose("s1", events, recorded=5)
    assert grown is not None and (grown.seq, grown.kind) == (6, "inserted")
    assert str(grown).startswith("session s1: seq 6: inserted: ")


def test_lines_out_of_order_or_doubled_in_a_file() -> None:
    events = chain()
    swapped = [events[0], events[2], events[1], *events[3:]]
    found = diagnose("s1", swapped)
    assert found is not None and (found.seq, found.kind) == (2, "reordered")
    assert "seq 3 is stored before seq 2" in found.detail
    doubled = [*events[:3], events[2], *events[3:]]
    found = diagnose("s1", doubled)
    assert found is not None and (found.seq, found.kind) == (4, "inserted")
    assert "a second event claims seq 3" in found.detail
    gap = [*events[:2], *events[4:]]
    found = diagnose("s1", gap)
    assert found is not None and (found.seq, found.kind, found.detail) == (
        3, "missing", "seqs 3-4 not stored; the chain jumps to seq 5")


def test_edits_of_each_field_are_named() -> None:
    events = chain()
    for change, words in [({"data": {"i": 99}}, "content"), ({"type": "other"}, "content"),
                          ({"timestamp": 1.0}, "content"), ({"hash": "0" * 64}, "stored hash"),
                          ({"prev_hash": "0" * 64}, "prev_hash field")]:
        tampered = list(events)
        tampered[2] = dataclasses.replace(events[2], **change)  # type: ignore[arg-type]
        found = diagnose("s1", tampered)
        assert found is not None and (found.seq, found.kind) == (3, "edited"), change
        assert words in found.detail, (change, found.detail)


def test_export_round_trip_and_format_errors() -> None:
    events = chain(3) + chain(2, "s2")
    out = io.StringIO()
    assert write_jsonl(events, out) == 5
    sessions = read_jsonl(io.StringIO(out.getvalue() + "\n"))
    assert list(sessions) == ["s1", "s2"] and sessions["s1"] == events[:3]
    line = json.loads(out.getvalue().splitlines()[0])
    for bad, message in [
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({**line, "seq": "1"}), "seq must be an integer"),
        (json.dumps({**line, "seq": True}), "seq must be an integer"),
        (json.dumps({**line, "data": []}), "data must be an object"),
        (json.dumps({k: v for k, v in line.items() if k != "hash"}), "missing hash"),
        ("{not json", "not JSON"),
    ]:
        with pytest.raises(ExportFormatError, match=message):
            read_jsonl([bad], "f.jsonl")


def test_times_are_ages_or_iso_dates_in_utc() -> None:
    now = 1_000_000.0
    assert parse_time("30d", now=now) == now - 30 * 86400
    assert parse_time("12h", now=now) == now - 12 * 3600
    assert parse_time("90m", now=now) == now - 5400
    assert parse_time("2w", now=now) == now - 14 * 86400
    assert parse_time("1.5s", now=now) == now - 1.5
    assert parse_time("2025-01-31") == datetime(2025, 1, 31, tzinfo=UTC).timestamp()
    assert parse_time("2025-01-31T12:00:00Z") == datetime(2025, 1, 31, 12,
                                                          tzinfo=UTC).timestamp()
    assert parse_time("2025-01-31T12:00:00+02:00") == datetime(2025, 1, 31, 10,
                                                               tzinfo=UTC).timestamp()
    with pytest.raises(argparse.ArgumentTypeError, match="give an age like 30d"):
        parse_time("soon")
    assert path_of("sqlite:///rel/t.db") == "rel/t.db"
    assert path_of("sqlite:////abs/t.db?synchronous=full") == "/abs/t.db"
    assert path_of("sqlite://") == ""
    assert f"else {DEFAULT_URL})" in STORE_HELP


def test_timeline_shows_unknown_events_and_open_sessions() -> None:
    journal = Journal("s1")
    journal.append("session.start", {"task": "t", "agent": "a", "subject": {}})
    journal.append("custom.thing", {"why": "x" * 300})
    lines = timeline(journal.events())
    assert lines[0] == "    1  start: t"
    assert lines[1].startswith("    2  custom.thing: {\"why\": \"xxx") and lines[1].endswith("…")
    assert lines[-1] == "spend: not recorded (the session has neither ended nor paused)"
    assert excerpt("a\n  b\tc") == "a b c" and len(excerpt("y" * 500, 20)) == 20


def test_timeline_renders_gateway_calls_and_sub_agent_charges() -> None:
    journal = Journal("s1")
    journal.append("session.start", {"task": "t", "agent": "a", "subject": {}})
    journal.append("client.call", {"call": {"id": "k1", "name": "pay", "arguments": {"b": 2,
                                                                                     "a": 1}}})
    journal.append("subagent.charge", {"call_id": "k1", "input_tokens": 10, "output_tokens": 5,
                                       "cost_usd": "0.01", "steps": 2, "tool_calls": 1})
    lines = timeline(journal.events())
    assert lines[1] == "    2  client call (no model asked): pay(a=1, b=2) [k1]"
    assert lines[2] == ("    3  sub-agent of k1 charged: 15 tokens, $0.01, 2 steps, 1 tool "
                        "calls")
