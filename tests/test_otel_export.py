"""Spans over the wire: OTLP/HTTP to a real receiver on loopback that decodes the protobuf with
the official ``opentelemetry-proto`` package, ``tether audit export --format otlp`` from the
store (file and collector), the GenAI metrics, and ``import tether`` without OpenTelemetry."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether import Agent, Budget, Decision, Effect, ReAct, ScriptedModel
from tether.observe import OTelSink
from tether.policy import Action, Context, Resource, Subject
from tether.store.sqlite import SQLiteStore
from tether.tools import Calculator

from conftest import call

SRC = str(Path(__file__).resolve().parents[1] / "src")


class Receiver:
    """An OTLP/HTTP trace receiver: every request body decoded as ExportTraceServiceRequest."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.arrived = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                assert self.path == "/v1/traces"
                assert self.headers["Content-Type"] == "application/x-protobuf"
                outer.requests.append(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()
                outer.arrived.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def spans(self) -> list[Any]:
        return [span for r in self.requests for rs in r.resource_spans
                for ss in rs.scope_spans for span in ss.spans]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()
    r.thread.join()


def agent_with(sink: Any, store: Any = None) -> Agent:
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    return Agent(model=model, reasoning=ReAct(), tools=[Calculator()], telemetry=[sink],
                 store=store, name="math")


def test_spans_reach_an_otlp_http_receiver_as_the_protobuf_the_collector_decodes(
        receiver: Receiver) -> None:
    with OTelSink(endpoint=receiver.url, service_name="billing-agents") as sink:
        session = agent_with(sink).session("What is 17 * 23?")
        session.run()
        assert sink.flush(30)
        assert sink.exported == 4 and sink.failures == 0
    spans = receiver.spans()
    names = sorted(s.name for s in spans)
    assert names == ["chat scripted", "chat scripted", "execute_tool calculator",
                     "invoke_agent math"]
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    attributes = {kv.key: kv.value for kv in root.attributes}
    assert attributes["gen_ai.conversation.id"].string_value == session.id
    assert attributes["gen_ai.agent.name"].string_value == "math"
    resource = {kv.key: kv.value.string_value
                for kv in receiver.requests[0].resource_spans[0].resource.attributes}
    assert resource["service.name"] == "billing-agents"
    scope = receiver.requests[0].resource_spans[0].scope_spans[0].scope
    assert scope.name == "tether"
    assert all(s.trace_id == root.trace_id for s in spans)
    assert all(s.parent_span_id == root.span_id for s in spans if s is not root)


def test_a_collector_that_is_down_costs_the_run_nothing() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with OTelSink(endpoint=url) as sink:
        result = agent_with(sink).run("What is 17 * 23?")
        assert result.answer == "391"
        assert sink.flush(120)
        assert sink.failures >= 1 and sink.exported == 0


def test_audit_export_otlp_gives_the_spans_the_live_sink_sent(tmp_path: Path,
                                                               receiver: Receiver) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    exporter = InMemorySpanExporter()
    with OTelSink(exporter) as sink:
        session = agent_with(sink, SQLiteStore(str(tmp_path / "t.db"))).session("17 * 23?")
        session.run()
        assert sink.flush(30)
    live = {(format(s.context.span_id, "016x"), s.name, s.start_time, s.end_time)
            for s in exporter.get_finished_spans()}
    out = tmp_path / "spans.jsonl"
    done = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", url,
                           "--format", "otlp", "--session", session.id, "-o", str(out)],
                          capture_output=True, text=True, env={"PYTHONPATH": SRC},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "exported 4 spans of 1 session" in done.stderr
    (line,) = out.read_text().splitlines()
    body = json.loads(line)
    spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
    exported = {(s["spanId"], s["name"], int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"]))
                for s in spans}
    assert exported == live
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    # and straight to a collector
    sent = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", url,
                           "--format", "otlp", "--endpoint", receiver.url],
                          capture_output=True, text=True, env={"PYTHONPATH": SRC},
                          timeout=120)
    assert sent.returncode == 0, sent.stderr
    assert {(s.span_id.hex(), s.name, s.start_time_unix_nano, s.end_time_unix_nano)
            for s in receiver.spans()} == live
    wrong = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", url,
                            "--endpoint", receiver.url], capture_output=True, text=True,
                           env={"PYTHONPATH": SRC}, timeout=120)
    assert wrong.returncode == 2 and "use it with --format otlp" in wrong.stderr


class DenyPay:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "calculator" and "9" in str(action.arguments):
            return Decision(Effect.DENY, "no nines", "nines")
        return Decision(Effect.ALLOW, "ok", "nines")


def test_metrics_follow_the_conventions_and_count_tethers_decisions_and_stops() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    model = ScriptedModel([call("calculator", {"expression": "1 + 1"}),
                           call("calculator", {"expression": "9 * 9"}), "2"])
    with OTelSink(InMemorySpanExporter(), meter_provider=provider) as sink:
        agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], policy=DenyPay(),
                      telemetry=[sink])
        agent.run("sums", budget=Budget(max_tokens=5000))
        assert sink.flush(30)
    data = reader.get_metrics_data()
    metrics = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
    usage = metrics["gen_ai.client.token.usage"]
    assert usage.unit == "{token}"
    types = {p.attributes["gen_ai.token.type"]: p.count for p in usage.data.data_points}
    assert types == {"input": 3, "output": 3}
    duration = metrics["gen_ai.client.operation.duration"]
    assert duration.unit == "s" and sum(p.count for p in duration.data.data_points) == 3
    assert all(p.attributes["gen_ai.operation.name"] == "chat"
               for p in duration.data.data_points)
    decisions = {p.attributes["tether.decision.effect"]: p.value
                 for p in metrics["tether.decisions"].data.data_points}
    assert decisions == {"allow": 1, "deny": 1}
    (stop,) = metrics["tether.stops"].data.data_points
    assert stop.attributes["tether.stop_reason"] == "finished" and stop.value == 1
    assert "tether.estimate.error" in metrics
    provider.shutdown()


def test_import_tether_does_not_import_opentelemetry() -> None:
    code = ("import sys, tether, tether.observe.otel as _\n"
            "print(any(m.startswith('opentelemetry') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": SRC}, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
