"""``tether.observe.configure()``: sinks from the standard OpenTelemetry environment, spans and
metrics to a real OTLP/HTTP receiver on loopback; nothing configured is telemetry off."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tether import Agent, ReAct, ScriptedModel
from tether.observe import Telemetry, configure
from tether.tools import Calculator

SRC = str(Path(__file__).resolve().parents[1] / "src")


class Collector:
    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.metrics: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    outer.spans += [s for rs in request.resource_spans
                                    for ss in rs.scope_spans for s in ss.spans]
                elif self.path == "/v1/metrics":
                    metrics = ExportMetricsServiceRequest()
                    metrics.ParseFromString(body)
                    outer.metrics += [m.name for rm in metrics.resource_metrics
                                      for sm in rm.scope_metrics for m in sm.metrics]
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    c.thread.start()
    yield c
    c.server.shutdown()
    c.server.server_close()
    c.thread.join()


def test_the_standard_environment_sends_spans_and_metrics(collector: Collector) -> None:
    telemetry = configure(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
    with telemetry:
        model = ScriptedModel.tool_then_answer("calculator", {"expression": "2 + 2"}, "4")
        agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()],
                      telemetry=telemetry)
        assert agent.run("2 + 2?").answer == "4"
        assert telemetry.flush(60)
    assert sorted(s.name for s in collector.spans) == [
        "chat scripted", "chat scripted", "execute_tool calculator", "invoke_agent agent"]
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration",
            "tether.decisions", "tether.stops"} <= set(collector.metrics)


def test_nothing_configured_is_telemetry_off() -> None:
    telemetry = configure(environ={})
    assert telemetry == Telemetry() and not telemetry and list(telemetry) == []
    agent = Agent(model=ScriptedModel(["hi"]), reasoning=ReAct(), telemetry=telemetry)
    assert agent.telemetry == ()
    session = agent.session("hello")
    session.run()
    assert not session.events  # no subscriber: events are not even sealed for one


RECIPE = '''
from tether import Agent, ReAct, ScriptedModel
from tether.tools import Calculator


def agent():
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "2 * 3"}, "6")
    return Agent(model=model, reasoning=ReAct(), tools=[Calculator()], name="cli")
'''


def test_tether_run_reports_to_the_collector_the_environment_names(
        collector: Collector, tmp_path: Path) -> None:
    (tmp_path / "recipe.py").write_text(RECIPE)
    env = {"PYTHONPATH": SRC, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
           "OTEL_SERVICE_NAME": "cli-test"}
    done = subprocess.run([sys.executable, "-m", "tether", "run",
                           f"{tmp_path / 'recipe.py'}:agent", "2 * 3?", "--store",
                           f"sqlite:///{tmp_path / 'r.db'}"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # the process flushed its sink before it exited
    assert "invoke_agent cli" in {s.name for s in collector.spans}
    assert "tether.stops" in collector.metrics


def test_the_environment_names_a_siem_file_with_keys_to_mask(tmp_path: Path) -> None:
    path = tmp_path / "siem.jsonl"
    telemetry = configure(environ={"TETHER_SIEM_PATH": str(path),
                                   "TETHER_SIEM_REDACT_KEYS": "expression, other"})
    with telemetry:
        model = ScriptedModel.tool_then_answer("calculator", {"expression": "2 + 2"}, "4")
        Agent(model=model, reasoning=ReAct(), tools=[Calculator()],
              telemetry=telemetry).run("2 + 2?")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    decision = next(r for r in records if r.get("api", {}).get("operation") == "calculator")
    assert decision["class_uid"] == 6003
    assert "2 + 2" not in path.read_text() and "[masked]" in path.read_text()
