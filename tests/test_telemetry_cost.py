"""What issue 50 changed to take telemetry off the critical budget, each held to what it
replaced: span ids from pre-keyed hashers are the digests they always were, the span maker's
contexts are the SDK constructor's, counters summed per batch add up to one add per event, and
the journal still tells every subscriber of every event once, whatever one of them does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, TraceFlags

from tether import Agent, Budget, ReAct, ScriptedModel
from tether.journal.chain import Journal
from tether.journal.views.span_records import SpanRecord
from tether.observe import OTelSink
from tether.observe._metrics import Instruments
from tether.observe.otel import tether_resource, to_sdk_spans
from tether.tools import Calculator
from tether.tracing import Segment, TraceParent, _digest
from tether.vocabulary import EventType

from conftest import call

HEX = "0123456789abcdef"
parents = st.one_of(st.none(), st.builds(TraceParent, st.text(HEX, min_size=32, max_size=32),
                                         st.text(HEX, min_size=16, max_size=16)))


@given(st.text(max_size=40), st.integers(0, 10**9), parents, st.integers(0, 10**12),
       st.text(max_size=40))
def test_a_calls_span_id_is_the_digest_of_where_it_sits(
        session_id: str, start: int, parent: TraceParent | None, seq: int, call_id: str) -> None:
    segment = Segment(session_id, start, parent)
    model = _digest(8, session_id, start, "model", seq)
    tool = _digest(8, session_id, start, "tool", call_id)
    assert segment.model_span_id(seq) == model == segment.model_call(seq).span_id
    assert segment.tool_span_id(call_id) == tool == segment.tool_call(call_id).span_id
    trace = parent.trace_id if parent else _digest(16, session_id, start)
    assert segment.model_call_header(seq) == f"00-{trace}-{model}-01" \
        == segment.model_call(seq).header()
    assert segment.tool_call_header(call_id) == f"00-{trace}-{tool}-01" \
        == segment.tool_call(call_id).header()


@given(st.text(HEX, min_size=32, max_size=32), st.text(HEX, min_size=16, max_size=16),
       st.booleans(), st.one_of(st.none(), st.text(HEX, min_size=16, max_size=16)))
def test_the_span_makers_contexts_are_the_sdk_constructors(
        trace_id: str, span_id: str, sampled: bool, parent_id: str | None) -> None:
    own = TraceParent(trace_id, span_id, sampled)
    parent = TraceParent(trace_id, parent_id) if parent_id is not None else None
    (span,) = to_sdk_spans([SpanRecord("chat m", own, parent, "CLIENT", 1, 2, {"a": 1})],
                           tether_resource())
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else 0)
    assert span.context == SpanContext(int(trace_id, 16), int(span_id, 16), False, flags)
    assert type(span.context) is SpanContext
    assert span.context.is_valid == (int(trace_id, 16) != 0 and int(span_id, 16) != 0)
    if parent_id is not None:
        assert span.parent == SpanContext(int(trace_id, 16), int(parent_id, 16), False,
                                          TraceFlags(TraceFlags.SAMPLED))


class _Counting:
    """A counter's ``add``, recording each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, dict[str, Any]]] = []

    def __call__(self, value: float, attributes: dict[str, Any]) -> None:
        self.calls.append((value, dict(attributes)))


@given(st.lists(st.tuples(st.sampled_from(["allow", "deny", "mask"]),
                          st.sampled_from(["a", "b"])), max_size=30))
def test_counters_summed_per_batch_add_what_one_add_per_event_would(
        decisions: list[tuple[str, str]]) -> None:
    instruments = Instruments(MeterProvider())
    counting = _Counting()
    instruments._adds["tether.decisions"] = counting
    for effect, tool in decisions:
        instruments.measure([("tether.decisions", 1, {"tether.decision.effect": effect,
                                                      "gen_ai.tool.name": tool})])
    assert counting.calls == []  # nothing added before the batch ends
    instruments.add_sums()
    expected: dict[tuple[str, str], int] = {}
    for effect, tool in decisions:
        expected[(effect, tool)] = expected.get((effect, tool), 0) + 1
    added = {(a["tether.decision.effect"], a["gen_ai.tool.name"]): v for v, a in counting.calls}
    assert added == expected
    assert len(counting.calls) == len(expected)  # one add per attribute set
    instruments.add_sums()
    assert len(counting.calls) == len(expected)  # a batch's sums are added once


def test_a_run_with_metrics_counts_each_decision_once_and_its_tokens_per_call() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    model = ScriptedModel([call("calculator", {"expression": f"{i} + 1"}) for i in range(7)]
                          + ["done"])
    with OTelSink(InMemorySpanExporter(), meter_provider=provider) as sink:
        agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], telemetry=[sink])
        agent.run("sums", budget=Budget(max_tokens=50_000))
        assert sink.flush(30)
        assert sink.failures == 0
    metrics = {m.name: m for rm in reader.get_metrics_data().resource_metrics
               for sm in rm.scope_metrics for m in sm.metrics}
    (allowed,) = metrics["tether.decisions"].data.data_points
    assert allowed.value == 7
    usage = {p.attributes["gen_ai.token.type"]: p.count
             for p in metrics["gen_ai.client.token.usage"].data.data_points}
    assert usage == {"input": 8, "output": 8}
    provider.shutdown()


def test_a_failing_counter_is_counted_and_never_fails_the_run() -> None:
    provider = MeterProvider()
    with OTelSink(InMemorySpanExporter(), meter_provider=provider) as sink:
        assert sink._instruments is not None

        def broken(value: float, attributes: dict[str, Any]) -> None:
            raise RuntimeError("collector gone")

        sink._instruments._adds["tether.stops"] = broken
        agent = Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), telemetry=[sink])
        assert agent.run("hi").stop_reason == "finished"
        assert sink.flush(30)
        assert sink.failures == 1 and sink.exported == 2  # the spans went all the same


@pytest.mark.parametrize("leave_at", [0, 1, 2])
def test_every_subscriber_hears_every_event_once_though_one_leaves_or_raises(
        leave_at: int) -> None:
    journal = Journal("s")
    heard: list[int] = []
    seen: list[int] = []

    def leaving(event: Any) -> None:
        heard.append(event.seq)
        if event.seq == leave_at + 1:
            unsubscribe()

    def raising(event: Any) -> None:
        if event.type != EventType.SUBSCRIBER_ERROR:
            raise ValueError("no")

    unsubscribe = journal.bus.subscribe(leaving)
    journal.bus.subscribe(raising)
    journal.bus.subscribe(lambda event: seen.append(event.seq))
    for i in range(3):
        journal.append(EventType.MODEL_REQUEST, {"step": i})
    journal.publish()
    errors = [e for e in journal.events() if e.type == EventType.SUBSCRIBER_ERROR]
    assert heard == list(range(1, leave_at + 2))
    assert [e.data["event_seq"] for e in errors] == [1, 2, 3]  # one error event each
    assert seen == list(range(1, 7))  # and the error events are told too, once each
