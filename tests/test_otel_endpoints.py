"""Telemetry goes where the OTLP specification says and never holds a process past its timeout.

A signal's own variable (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._METRICS_ENDPOINT``) is a
URL used as is; only the generic ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets ``/v1/traces`` or
``/v1/metrics`` appended. A collector that accepts a connection and never answers (a "black
hole" on loopback) costs ``close(timeout)`` at most its timeout in total, and ``tether run`` at
most its bounded exit flush — elapsed times are measured from the moment the black hole has
the spans, with generous margins (the suite runs on a loaded machine)."""

from __future__ import annotations

import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from test_otel_configure import RECIPE, SRC
from tether import Agent, ReAct, ScriptedModel
from tether.observe import OTelSink, configure
from tether.tools import Calculator


class PathCollector:
    """An OTLP/HTTP receiver that answers 200 to any path and remembers which paths it got."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.paths.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


class BlackHole:
    """Accepts connections and reads what is sent, never answers, until the test ends."""

    def __init__(self) -> None:
        self.received = threading.Event()
        self.stop = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                if self.request.recv(65536):
                    outer.received.set()
                outer.stop.wait()

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            block_on_close = False

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def collector() -> Iterator[PathCollector]:
    c = PathCollector()
    c.thread.start()
    yield c
    c.server.shutdown()
    c.server.server_close()
    c.thread.join()


@pytest.fixture
def black_hole() -> Iterator[BlackHole]:
    b = BlackHole()
    b.thread.start()
    yield b
    b.stop.set()
    b.server.shutdown()
    b.server.server_close()
    b.thread.join()


def run_once(telemetry: Any) -> None:
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "2 + 2"}, "4")
    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], telemetry=telemetry)
    assert agent.run("2 + 2?").answer == "4"


def test_a_signals_own_endpoint_variable_is_used_as_is(collector: PathCollector) -> None:
    telemetry = configure(environ={
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url + "/generic",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.url + "/otlp/spans",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": collector.url + "/otlp/points"})
    with telemetry:
        run_once(telemetry)
        assert telemetry.flush(60)
    assert "/otlp/spans" in collector.paths and "/otlp/points" in collector.paths
    assert set(collector.paths) == {"/otlp/spans", "/otlp/points"}
    (sink,) = [s for s in telemetry if isinstance(s, OTelSink)]
    assert sink.failures == 0 and sink.exported == 4


def test_the_generic_endpoint_gets_each_signals_path(collector: PathCollector) -> None:
    telemetry = configure(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url + "/base/",
                                   "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ""})
    with telemetry:
        run_once(telemetry)
        assert telemetry.flush(60)
    assert set(collector.paths) == {"/base/v1/traces", "/base/v1/metrics"}


def test_a_traces_variable_alone_sends_spans_there_and_no_metrics(
        collector: PathCollector) -> None:
    telemetry = configure(environ={
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.url + "/v1/traces"})
    with telemetry:
        run_once(telemetry)
        assert telemetry.flush(60)
    assert set(collector.paths) == {"/v1/traces"}


def test_close_returns_within_its_timeout_when_the_collector_never_answers(
        black_hole: BlackHole, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60")  # each request's own (SDK-read)
    telemetry = configure(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": black_hole.url})
    run_once(telemetry)
    assert black_hole.received.wait(60)  # the worker is now blocked on the black hole
    timeout = 4.0
    start = time.monotonic()
    telemetry.close(timeout=timeout)
    elapsed = time.monotonic() - start
    # one deadline for everything close does (flush, worker, exporter, meter provider): the
    # old code waited the timeout once per stage (12 s here) and the exporter's own 60 s after
    # that; twice the timeout leaves a loaded machine room and still tells the two apart
    assert elapsed < timeout * 2, elapsed


def test_flush_returns_false_within_its_timeout_when_the_collector_never_answers(
        black_hole: BlackHole, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60")
    telemetry = configure(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": black_hole.url})
    try:
        run_once(telemetry)
        assert black_hole.received.wait(60)
        start = time.monotonic()
        assert telemetry.flush(timeout=2.0) is False
        assert time.monotonic() - start < 2.0 * 2 + 1
    finally:
        telemetry.close(timeout=1.0)


def test_tether_run_exits_promptly_when_the_collector_never_answers(
        black_hole: BlackHole, tmp_path: Path) -> None:
    from tether.cli.telemetry import EXIT_TIMEOUT

    (tmp_path / "recipe.py").write_text(RECIPE)
    env = {"PYTHONPATH": SRC, "OTEL_EXPORTER_OTLP_ENDPOINT": black_hole.url,
           "OTEL_EXPORTER_OTLP_TIMEOUT": "60"}
    process = subprocess.Popen([sys.executable, "-m", "tether", "run",
                                f"{tmp_path / 'recipe.py'}:agent", "2 * 3?", "--store",
                                f"sqlite:///{tmp_path / 'r.db'}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        assert black_hole.received.wait(120)  # the run ended: its spans are on the wire
        start = time.monotonic()
        out, err = process.communicate(timeout=180)
        elapsed = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "6" in out
    # the exit flush is bounded by EXIT_TIMEOUT in total, whatever the exporter's own timeout
    assert elapsed < EXIT_TIMEOUT * 2 + 5, elapsed
