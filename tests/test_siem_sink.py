"""SIEMSink on real runs: what it writes live is what `tether audit export --format ocsf` derives
from the store; it redacts, rotates, speaks RFC 5424 syslog over real loopback UDP and TCP
sockets, and a broken destination never fails a run — it is counted and warned about once."""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ocsf_schema import validate
from ocsf_sessions import SECRET, agent, run_all
from tether import StopReason
from tether.cli import main
from tether.observe.siem import SIEMSink
from tether.observe.syslog import SyslogTarget
from tether.store.opening import open_store
from tether.types import Event

from conftest import call

# <PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA MSG
RFC5424 = re.compile(r"<(\d{1,3})>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) tether (\d+) "
                     r"(\S{1,32}) - (\{.*\})", re.S)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def no_writer_left() -> bool:
    return not any(t.name == "tether-siem" for t in threading.enumerate())


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'journal.db'}"


def export(store: str, *argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", store,
                           "--format", "ocsf", *argv], capture_output=True, text=True,
                          timeout=120, check=True)
    assert "OCSF records" in done.stderr
    return done.stdout


@pytest.mark.parametrize("reads_store", [False, True], ids=["keeps-paused", "rereads-store"])
def test_live_records_equal_the_export_of_the_stored_sessions(tmp_path: Path, store: str,
                                                              reads_store: bool) -> None:
    out = tmp_path / "siem.jsonl"
    opened = open_store(store) if reads_store else None
    with SIEMSink(out, store=opened) as sink:
        run_all([sink], store)
        assert sink.flush(60)
        assert (sink.failures, sink.dropped) == (0, 0)
        assert not sink._view._sessions and not sink._seen  # every session ended: nothing kept
    if opened is not None:
        opened.close()
    assert no_writer_left()
    live = out.read_text()
    exported = export(store)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for record in lines(out):  # sessions interleave live (a sub-agent runs inside its parent)
        by_session.setdefault(record["metadata"]["correlation_uid"], []).append(record)
    again = [json.loads(line) for line in exported.splitlines()]
    assert [r for sid in dict.fromkeys(r["metadata"]["correlation_uid"] for r in again)
            for r in by_session[sid]] == again
    assert sorted(live.splitlines()) == sorted(exported.splitlines())  # byte for byte
    assert all(validate(r) == [] for r in again)
    assert SECRET not in live


def test_a_session_resumed_elsewhere_gets_its_actor_from_the_store(tmp_path: Path,
                                                                  store: str) -> None:
    first = agent([call("pay", {"account": "A", "amount": 1}), "paid"], [], store)
    session = first.session("pay", user_id="carol", tenant_id="acme")
    session.run()
    (request,) = session.pending_approvals()
    first.approvals.approve(request.id, approver="alice")
    out = tmp_path / "later.jsonl"
    with SIEMSink(out, store=open_store(store)) as sink:  # a new process's sink, mid-session
        later = agent([call("pay", {"account": "A", "amount": 1}), "paid"], [sink], store)
        assert later.resume(session.id).stop_reason is StopReason.FINISHED
        assert sink.flush(60)
    (granted,) = lines(out)
    assert granted["actor"]["user"]["name"] == "alice"
    assert granted["actor"]["app_name"] == "ops" and granted["metadata"]["tenant_uid"] == "acme"
    exported = [json.loads(x) for x in export(store).splitlines()]
    assert granted == exported[-1]


def test_configured_keys_are_masked_everywhere(tmp_path: Path, store: str) -> None:
    out = tmp_path / "siem.jsonl"
    with SIEMSink(out, redact_keys=["expression", "account"]) as sink:
        agent([call("calculator", {"expression": "6*7"}), "42"], [sink], store).run("x")
        assert sink.flush(60)
    (_, decision) = lines(out)
    assert decision["api"]["request"]["data"]["arguments"] == {"expression": "[masked]"}
    assert "6*7" not in out.read_text()
    exported = export(store, "--redact-key", "expression", "--redact-key", "account")
    assert [json.loads(x) for x in exported.splitlines()] == lines(out)


def test_the_file_rotates(tmp_path: Path) -> None:
    out = tmp_path / "siem.jsonl"
    with SIEMSink(out, max_bytes=3000, backup_count=50) as sink:
        for _ in range(3):
            agent([call("calculator", {"expression": "1+1"}), "2"], [sink]).run("x")
        assert sink.flush(60)
    files = sorted(tmp_path.glob("siem.jsonl*"))
    assert len(files) >= 3 and all(f.stat().st_size <= 3000 + 2000 for f in files)
    records = [r for f in files for r in lines(f)]
    assert len(records) == 6 and all(validate(r) == [] for r in records)


def _events() -> list[Event]:
    """A session's start and its one decision: the two events that make records."""
    events: list[Event] = []
    agent([call("calculator", {"expression": "1+1"}), "2"], [events.append]).run("x")
    return [e for e in events if e.type in ("session.start", "tool.decision")]


def test_udp_syslog_frames_are_rfc_5424() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(30)  # a bound on a lost datagram, not a wait for one
        port = server.getsockname()[1]
        with SIEMSink(syslog=f"udp://127.0.0.1:{port}") as sink:
            agent([call("calculator", {"expression": "6*7"}), "42"], [sink]).run("x")
            assert sink.flush(60) and sink.failures == 0
        frames = [server.recv(65535).decode("ascii") for _ in range(2)]
    assert no_writer_left()
    parsed = [RFC5424.fullmatch(f) for f in frames]
    assert all(parsed), frames
    start, decision = (m.groups() for m in parsed if m)
    assert start[4] == "session.start" and decision[4] == "tool.decision"
    assert int(decision[0]) == 13 * 8 + 6  # log audit, informational
    record = json.loads(decision[5])
    assert validate(record) == [] and record["api"]["operation"] == "calculator"


def _read_octet_counted(conn: socket.socket, count: int) -> list[bytes]:
    buffer, frames = b"", []
    while len(frames) < count:
        chunk = conn.recv(65536)
        assert chunk, "the sink closed the connection early"
        buffer += chunk
        while b" " in buffer:
            size, rest = buffer.split(b" ", 1)
            if len(rest) < int(size):
                break
            frames.append(rest[:int(size)])
            buffer = rest[int(size):]
    return frames


def test_tcp_syslog_uses_octet_counting() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(30)
        port = server.getsockname()[1]
        with SIEMSink(syslog=SyslogTarget("127.0.0.1", port, "tcp"),
                      redact_keys=["expression"]) as sink:
            for event in _events():
                sink(event)
            conn, _ = server.accept()
            with conn:
                conn.settimeout(30)
                frames = _read_octet_counted(conn, 2)
                assert sink.flush(60) and sink.failures == 0
    parsed = [RFC5424.fullmatch(f.decode("ascii")) for f in frames]
    assert all(parsed)
    record = json.loads(parsed[1].group(6))  # type: ignore[union-attr]
    assert record["api"]["request"]["data"]["arguments"]["expression"] == "[masked]"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("where", ["file", "syslog"])
def test_a_broken_destination_never_fails_the_run(tmp_path: Path, where: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    kwargs: dict[str, Any] = ({"output_path": blocker / "siem.jsonl"} if where == "file" else
                              {"syslog": f"tcp://127.0.0.1:{_closed_port()}"})
    caplog.set_level(logging.WARNING, logger="tether.observe")
    with SIEMSink(**kwargs) as sink:
        result = agent([call("calculator", {"expression": "1+1"}), "2"], [sink]).run("x")
        assert result.stop_reason is StopReason.FINISHED and result.answer == "2"
        assert sink.flush(60)
        assert sink.failures == 2
    warnings = [r for r in caplog.records if r.name == "tether.observe"]
    assert len(warnings) == 1 and "failures" in warnings[0].getMessage()
    assert no_writer_left()


def test_a_full_queue_drops_and_counts_instead_of_blocking(tmp_path: Path) -> None:
    release = threading.Event()
    entered = threading.Event()
    sink = SIEMSink(tmp_path / "siem.jsonl", queue_size=1)
    handle = sink._handle

    def slow(event: Event) -> None:
        entered.set()
        release.wait(60)
        handle(event)

    sink._handle = slow  # type: ignore[method-assign]
    events = _events()
    sink(events[0])  # the writer takes it and blocks
    assert entered.wait(60)
    sink(events[1])  # fills the queue
    sink(events[1])  # no room: dropped
    assert sink.dropped == 1
    release.set()
    sink.close()
    assert no_writer_left() and len(lines(tmp_path / "siem.jsonl")) == 2
    sink(events[0])  # after close: dropped, not raised
    assert sink.dropped == 2


def test_bad_arguments_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="output_path="):
        SIEMSink()
    with pytest.raises(TypeError, match=r"redact_keys=\['card'\]"):
        SIEMSink("x.jsonl", redact_keys="card")
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        SIEMSink(syslog="http://127.0.0.1:514")
    assert SyslogTarget.parse("127.0.0.1:514") == SyslogTarget("127.0.0.1", 514, "udp")


def test_export_finds_a_broken_chain(tmp_path: Path, store: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from audit_helpers import Raw

    result = agent([call("calculator", {"expression": "6*7"}), "42"], [], store).run("x")
    raw = Raw(store)
    try:
        row = raw.row(result.session_id, 4)
        row["data"]["arguments"] = {"expression": "1*1"}
        raw.set(result.session_id, 4, "data", row["data"])
    finally:
        raw.close()
    pins = tmp_path / "pins.json"
    from tether.mcp.pins import JSONFilePinStore, Pin

    JSONFilePinStore(pins).pin(Pin("fs", "read", "sha256:" + "a" * 64, {}, "2026-01-01T00:00:00Z"))
    assert main(["audit", "export", "--store", store, "--format", "ocsf",
                 "--pins", str(pins)]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    finding = next(r for r in records if r["class_uid"] == 2004)
    assert finding["finding_info"]["uid"] == f"{result.session_id}/tamper/4"
    assert "edited" in finding["finding_info"]["title"]
    assert records[-1]["api"]["operation"] == "mcp.pin"
    assert all(validate(r) == [] for r in records)
    assert main(["audit", "export", "--store", store, "--pins", str(pins)]) == 2


@pytest.fixture(autouse=True)
def _no_writer_before() -> Iterator[None]:
    yield
    assert no_writer_left()


def test_close_keeps_its_timeout_when_the_writer_is_stuck_and_the_queue_full(
        tmp_path: Path) -> None:
    """A writer stuck on its destination with its queue full: ``close(timeout)`` returns
    within its timeout (it used to wait for room for its stop marker, for ever), and the
    writer still stops once it is let go."""
    release, entered = threading.Event(), threading.Event()

    class Stuck:  # the store the sink reads a resumed session's context from: it hangs
        def read(self, session_id: str) -> list[Event]:
            entered.set()
            release.wait(60)
            return []

    decision = _events()[1]
    sink = SIEMSink(tmp_path / "siem.jsonl", queue_size=1, store=Stuck())  # type: ignore[arg-type]
    closed = threading.Event()

    took: list[float] = []

    def close() -> None:
        start = time.monotonic()
        sink.close(timeout=1.0)
        took.append(time.monotonic() - start)
        closed.set()

    closer = threading.Thread(target=close)
    try:
        sink(decision)  # not a start: the writer reads the store and hangs there
        assert entered.wait(60)
        sink(decision)  # fills the queue
        closer.start()
        assert closed.wait(30), "close() outlived its timeout"
        assert took[0] < 1.0 * 1.5 + 1, took
    finally:
        release.set()
        if closer.is_alive():
            closer.join(60)
    for writer in [t for t in threading.enumerate() if t.name == "tether-siem"]:
        writer.join(60)  # let go, it writes what was queued and stops
    assert no_writer_left() and len(lines(tmp_path / "siem.jsonl")) == 2
