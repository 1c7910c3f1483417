"""tether's spans, span events and metrics against the OpenTelemetry GenAI conventions, checked by
an independent checker (tests/genai_semconv.py: its rules, their source and why it is not the
PyPI one), over the scenarios a deployment produces (issue 52, part 1).

Scenarios: a chat, an allowed tool, a denied tool, an approval round trip resumed by another
recipe object (as another process would), a sub-agent, a compaction, the request planner, a
graded trial (the grade book, derived as ``tether audit export --format otlp`` does). Every
span and metric is checked live (the OTel sink), the grade book's derived; what the rules
find must be exactly what tests/semconv/expected-violations.yml lists, each entry with its
reason: a new violation fails, and so does a listed one that no longer happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import test_compaction as compaction_case
import test_model_planner as planner_case
import test_otel_decisions as decisions_case
from genai_semconv import Violation, check_all, check_span
from tether import Agent, ModelPlanner, ReAct, ScriptedModel, StopReason
from tether.evals import evaluate
from tether.journal.views.spans import derive_spans
from tether.observe import OTelSink, to_sdk_spans
from tether.observe.otel import tether_resource
from tether.runtime.context.compaction import Compaction
from tether.runtime.lifecycle.subagent import AgentAsTool
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore
from tether.tools import Calculator

import eval_app
from conftest import calls

HERE = Path(__file__).parent
EXPECTED = HERE / "semconv" / "expected-violations.yml"


class Telemetry:
    """An OTel sink with an in-memory span exporter and metric reader."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        self.sink = OTelSink(self.exporter, meter_provider=MeterProvider(
            metric_readers=[self.reader]))

    def spans(self) -> list[Any]:
        assert self.sink.flush(30)
        return list(self.exporter.get_finished_spans())


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    t = Telemetry()
    yield t
    t.sink.close()


def run_scenarios(t: Telemetry, tmp_path: Path) -> list[Any]:
    """Every scenario, into ``t``; the spans derived from stored journals besides."""
    sink = [t.sink]
    Agent(model=ScriptedModel(["hello"]), reasoning=ReAct(), telemetry=sink).run("hi")
    Agent(model=ScriptedModel.tool_then_answer("calculator", {"expression": "6 * 7"}, "42"),
          reasoning=ReAct(), tools=[Calculator()], telemetry=sink).run("6 * 7?")
    store = SQLiteStore(tmp_path / "t.db")  # allowed, denied, masked, degraded, approved
    session = decisions_case.agent(store, sink).session("tidy up", user_id="u1")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = session.pending_approvals()
    decisions_case.approvals(store).approve(request.id, approver="alice")
    assert decisions_case.agent(store, sink).resume(session.id).stop_reason \
        is StopReason.FINISHED
    sub = Agent(model=ScriptedModel(["found 3 papers"]), reasoning=ReAct(), name="researcher")
    Agent(model=ScriptedModel([calls(("researcher", {"task": "find"})), "ok"]),
          reasoning=ReAct(), tools=[AgentAsTool(sub)], name="lead", telemetry=sink).run("go")
    compacting = compaction_case._agent(Compaction(context_window=1200, model=ScriptedModel(
        compaction_case.Recorder(), name="summariser")), telemetry=sink)
    compacting.run("read the records")
    paid: list[tuple[str, float]] = []
    planned = planner_case.agent(ModelPlanner(planner_case.Planner(
        planner_case.SETTLE)), paid, telemetry=sink)
    planned.run(planner_case.DINNER)
    graded = MemoryStore()
    evaluate(eval_app.make_agent(), eval_app_tasks(), k=1, perturbations=["canonical"], seed=7,
             name="arith", suite="arith", store=graded)
    books = [s.session_id for s in graded.sessions() if "grades" in s.session_id]
    derived = [span for book in books
               for span in to_sdk_spans(derive_spans(graded.read(book)), tether_resource())]
    store.close()
    return derived


def eval_app_tasks() -> Any:
    from tether.evals.tasks import load_suite

    return load_suite(HERE / "evals" / "arith.yaml").tasks


def expected() -> set[tuple[str, str, str]]:
    listed = yaml.safe_load(EXPECTED.read_text())
    assert all(e.get("reason") for e in listed["violations"]), "every entry needs its reason"
    return {(e["rule"], e["span"], e["detail"]) for e in listed["violations"]}


def test_every_span_event_and_metric_keeps_the_conventions(telemetry: Telemetry,
                                                          tmp_path: Path) -> None:
    derived = run_scenarios(telemetry, tmp_path)
    spans = telemetry.spans() + derived
    names = {s.name.split(" ", 1)[0] for s in spans}
    assert {"invoke_agent", "chat", "execute_tool"} <= names
    events = {e.name for s in spans for e in s.events}
    assert {"gen_ai.tool.call.decision", "gen_ai.evaluation.result"} <= events
    found = {v.key() for v in check_all(spans, telemetry.reader.get_metrics_data())}
    listed = expected()
    assert not found - listed, f"violations not listed: {sorted(found - listed)}"
    assert not listed - found, f"listed, and no longer found: {sorted(listed - found)}"


def test_the_checker_catches_what_it_claims_to() -> None:
    """Each rule, against a span made to break it (so a rule that checks nothing fails)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind, Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("llm call", kind=SpanKind.SERVER, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": "12", "gen_ai.system": "x", "gen_ai.foo": 1,
            "gen_ai.conversation.compacted": False, "server.address": "h"}) as span:
        span.set_status(Status(StatusCode.OK))
        span.add_event("gen_ai.tool.call.decision", {"gen_ai.tool.call.decision.outcome": "m"})
        span.add_event("gen_ai.evaluation.result", {})
    with tracer.start_as_current_span("reasoning", attributes={
            "gen_ai.operation.name": "reasoning"}):
        pass
    with tracer.start_as_current_span("execute_tool t", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
            "gen_ai.tool.call.id": "1", "gen_ai.tool.type": "function", "error.type": "x"}):
        pass
    bad, unknown, tool = exporter.get_finished_spans()
    rules = {v.rule for v in check_span(bad)}
    assert rules == {"span-name", "span-kind", "required", "expected", "conditional", "status",
                     "event", "type", "deprecated", "unknown-attribute", "compacted-false"}
    assert [v.rule for v in check_span(unknown)] == ["operation-unknown"]
    assert [v.detail for v in check_span(tool)] == ["error.type without ERROR"]
    assert Violation("required", "llm call", "gen_ai.provider.name") in check_span(bad)
