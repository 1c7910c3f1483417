"""OpenTelemetry spans derived from the journal: GenAI names and attributes, nesting, resumed
segments, content opt-in, agreement between the live sink and the re-derivation from the store,
and a sink that fails without failing the run."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether import Agent, Budget, Decision, Effect, ReAct, ScriptedModel, StopReason, tool
from tether.journal.views.spans import derive_spans
from tether.models import Price
from tether.observe import OTelSink, to_sdk_spans
from tether.observe.otel import tether_resource
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.lifecycle.subagent import AgentAsTool
from tether.store.sqlite import SQLiteStore
from tether.tools import Calculator
from tether.tracing import Segment, TraceParent

from conftest import call, comparable

paid: list[dict[str, Any]] = []


@tool(side_effect=True)
def pay(account: str, amount: int, card: str = "") -> str:
    """Pay an account."""
    paid.append({"account": account, "amount": amount})
    return f"paid {amount} to {account}"


class MoneyNeedsApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "pay":
            return Decision(Effect.REQUIRE_APPROVAL, "money moves need a human", "money",
                            fields=("card",))
        return Decision(Effect.ALLOW, "fine", "money")


def spans_of(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


def by_name(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


@pytest.fixture
def sink() -> Iterator[tuple[OTelSink, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    s = OTelSink(exporter)
    yield s, exporter
    s.close()


def calculator_agent(sink: OTelSink, **kw: Any) -> Agent:
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    return Agent(model=model, reasoning=ReAct(), tools=[Calculator()], telemetry=[sink], **kw)


def test_a_run_is_an_invoke_agent_span_over_its_chat_and_execute_tool_spans(
        sink: tuple[OTelSink, InMemorySpanExporter]) -> None:
    s, exporter = sink
    session = calculator_agent(s).session("What is 17 * 23?",
                                          budget=Budget(max_tokens=1000, max_tool_calls=5))
    session.run()
    assert s.flush(30)
    spans = by_name(spans_of(exporter))
    (root,) = spans["invoke_agent agent"]
    chats = spans["chat scripted"]
    (tool_span,) = spans["execute_tool calculator"]
    assert len(chats) == 2
    segment = Segment(session.id, 1)
    assert root.context.trace_id == int(segment.trace_id, 16) and root.parent is None
    assert root.attributes["gen_ai.conversation.id"] == session.id
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["tether.stop_reason"] == "finished"
    assert root.attributes["tether.chain.head"] == session.replay()[-1].hash
    assert root.attributes["tether.budget.left.tool_calls"] == 4
    requests = [e for e in session.replay() if e.type == "model.request"]
    for chat, request in zip(sorted(chats, key=lambda c: c.start_time), requests, strict=True):
        assert chat.parent is not None and chat.parent.span_id == root.context.span_id
        assert chat.context.span_id == int(segment.model_call(request.seq).span_id, 16)
        assert chat.kind.name == "CLIENT"
        assert chat.attributes["gen_ai.request.max_tokens"] == request.data["max_output_tokens"]
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool_span.attributes["tether.decision.effect"] == "allow"
    assert tool_span.attributes["tether.policy.id"] == "allow-all"
    assert tool_span.context.span_id == int(segment.tool_call("call_1").span_id, 16)
    assert tool_span.parent is not None and tool_span.parent.span_id == root.context.span_id
    # message content is off by default
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg"))
                   for span in spans_of(exporter) for k in span.attributes or {})


def test_live_spans_and_spans_derived_from_the_store_agree_across_a_pause_and_resume(
        tmp_path: Path, sink: tuple[OTelSink, InMemorySpanExporter]) -> None:
    s, exporter = sink
    store = SQLiteStore(str(tmp_path / "t.db"))
    script = [call("pay", {"account": "A", "amount": 40, "card": "4111-1111"}), "paid it"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[pay],
                  policy=MoneyNeedsApproval(), store=store, telemetry=[s],
                  keep_hidden_arguments=True)
    session = agent.session("pay A", user_id="u1")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = session.pending_approvals()
    agent.approvals.approve(request.id, approver="alice")
    # resumed by another recipe object, as another process would
    again = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[pay],
                  policy=MoneyNeedsApproval(), store=store, telemetry=[s],
                  keep_hidden_arguments=True)
    assert again.resume(session.id).stop_reason is StopReason.FINISHED
    assert s.flush(30)
    live = sorted(map(comparable, spans_of(exporter)))
    derived = to_sdk_spans(derive_spans(store.read(session.id)), tether_resource())
    assert live == sorted(map(comparable, derived))
    roots = sorted(by_name(spans_of(exporter))["invoke_agent agent"], key=lambda r: r.start_time)
    first, second = roots
    assert first.attributes["tether.paused"] is True
    assert first.attributes["tether.stop_reason"] == "needs_approval"
    assert second.context.trace_id != first.context.trace_id  # a new trace, linked
    assert [(link.context.trace_id, link.context.span_id) for link in second.links] == [
        (first.context.trace_id, first.context.span_id)]
    tools = sorted(by_name(spans_of(exporter))["execute_tool pay"], key=lambda t: t.start_time)
    assert tools[0].attributes["tether.decision.effect"] == "require_approval"
    assert tools[0].attributes["tether.approval.outcome"] == "requested"
    assert tools[1].attributes["tether.approval.outcome"] == "granted"
    assert tools[1].attributes["tether.approval.approver"] == "alice"
    assert tools[1].attributes["tether.tool.status"] == "ok"
    assert tools[1].parent is not None and tools[1].parent.span_id == second.context.span_id
    store.close()


def test_a_sub_agents_run_nests_under_its_callers_execute_tool_span(
        sink: tuple[OTelSink, InMemorySpanExporter]) -> None:
    s, exporter = sink
    price = Price(Decimal("1"), Decimal("2"))
    sub = Agent(model=ScriptedModel(["found 3 papers"], price=price), reasoning=ReAct(),
                name="researcher")
    parent = Agent(model=ScriptedModel([call("researcher", {"task": "find papers"}),
                                        "summary"], price=price),
                   reasoning=ReAct(), tools=[AgentAsTool(sub)], name="lead", telemetry=[s])
    session = parent.session("research", budget=Budget(max_tokens=5000,
                                                       max_cost_usd=Decimal("1")))
    session.run()
    assert s.flush(30)
    spans = by_name(spans_of(exporter))
    (lead,) = spans["invoke_agent lead"]
    (call_span,) = spans["execute_tool researcher"]
    (child,) = spans["invoke_agent researcher"]
    assert child.context.trace_id == lead.context.trace_id
    assert child.parent is not None and child.parent.span_id == call_span.context.span_id
    assert child.attributes["gen_ai.conversation.id"] != session.id
    (child_chat,) = [c for c in spans["chat scripted"]
                     if c.parent is not None and c.parent.span_id == child.context.span_id]
    assert child_chat.context.trace_id == lead.context.trace_id


def test_a_callers_traceparent_makes_the_session_a_child_of_its_span(
        sink: tuple[OTelSink, InMemorySpanExporter]) -> None:
    s, exporter = sink
    caller = TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    calculator_agent(s).session("What is 17 * 23?",
                                context={"traceparent": caller.header()}).run()
    assert s.flush(30)
    (root,) = by_name(spans_of(exporter))["invoke_agent agent"]
    assert format(root.context.trace_id, "032x") == caller.trace_id
    assert root.parent is not None and format(root.parent.span_id, "016x") == caller.span_id
    # a malformed one is ignored, never trusted in part
    exporter.clear()
    calculator_agent(s).session("What is 17 * 23?", context={
        "traceparent": caller.header().upper()}).run()
    assert s.flush(30)
    (root,) = by_name(spans_of(exporter))["invoke_agent agent"]
    assert root.parent is None and format(root.context.trace_id, "032x") != caller.trace_id


def test_content_is_opt_in_and_carries_only_what_the_journal_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    exporter = InMemorySpanExporter()
    with OTelSink(exporter) as s:
        agent = Agent(model=ScriptedModel([call("pay", {"account": "A", "amount": 40,
                                                        "card": "4111-1111"}), "paid it"]),
                      reasoning=ReAct(), tools=[pay], policy=MoneyNeedsApproval(),
                      telemetry=[s])
        agent.session("pay A").run()
        assert s.flush(30)
    text = json.dumps([dict(span.attributes or {}) for span in spans_of(exporter)])
    assert "4111-1111" not in text and "[masked]" in text
    chats = by_name(spans_of(exporter))["chat scripted"]
    messages = json.loads(chats[0].attributes["gen_ai.input.messages"])
    assert messages[0] == {"role": "system", "parts": [
        {"type": "text", "content": agent.system_prompt}]}
    output = json.loads(chats[0].attributes["gen_ai.output.messages"])
    assert output[0]["parts"][0]["type"] == "tool_call"


class Exploding(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.calls += 1
        raise ConnectionError("collector down")

    def shutdown(self) -> None:
        raise RuntimeError("and it cannot shut down either")


def test_a_failing_exporter_is_counted_and_never_fails_the_run(
        caplog: pytest.LogCaptureFixture) -> None:
    exporter = Exploding()
    s = OTelSink(exporter)
    result = calculator_agent(s).run("What is 17 * 23?")
    assert result.stop_reason is StopReason.FINISHED and result.answer == "391"
    assert s.flush(30)
    assert exporter.calls >= 1 and s.failures >= 1 and s.exported == 0
    s.close()  # the exporter's shutdown raising is counted too
    assert s.failures >= 2
    assert "counted in OTelSink.failures" in caplog.text
    assert not any(t.name == "tether-otel" and t.is_alive() for t in threading.enumerate())


class Blocked(SpanExporter):
    """An exporter that holds its first export until released."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def export(self, spans: Any) -> SpanExportResult:
        self.entered.set()
        self.release.wait(60)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def test_a_full_queue_drops_events_and_counts_them_without_blocking_the_run() -> None:
    exporter = Blocked()
    s = OTelSink(exporter, max_queue=3)
    for _ in range(3):
        calculator_agent(s).run("What is 17 * 23?")
    assert s.dropped > 0  # the worker is stuck in export; the runs went on
    exporter.release.set()
    s.close()


def test_the_seeds_face_a_bare_sink_subscribed_to_one_session(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # OTelSink() sends where OpenTelemetry's exporter does by default; here nothing listens
    # there, which costs the run nothing (counted), and session.events.subscribe attaches it
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT",
                           f"http://127.0.0.1:{probe.getsockname()[1]}")
    sink = OTelSink()
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    session = Agent(model=model, reasoning=ReAct(), tools=[Calculator()]).session("17 * 23?")
    session.events.subscribe(sink)
    assert session.run().answer == "391"
    assert sink.flush(120) and sink.failures >= 1
    sink.close()
    with pytest.raises(TypeError, match="not callable"):
        Agent(model=ScriptedModel(["hi"]), reasoning=ReAct(), telemetry=["otel"])  # type: ignore[list-item]


def test_spans_of_a_crashed_segment_end_at_its_last_event_marked_unfinished() -> None:
    with OTelSink(InMemorySpanExporter()) as s:
        session = calculator_agent(s).session("What is 17 * 23?")
        session.run()
    events = [e for e in session.replay() if e.type != "session.end"]
    spans = derive_spans(events)
    root = next(sp for sp in spans if sp.name.startswith("invoke_agent"))
    assert root.attributes["tether.unfinished"] is True
    assert root.end_ns == int(events[-1].timestamp * 1e9)


@tool(timeout=0.2)
async def hang(n: int) -> str:
    """Wait for an answer that never comes."""
    import asyncio

    await asyncio.get_running_loop().create_future()
    return "unreachable"


@tool
def broken(n: int) -> str:
    """Fail."""
    raise RuntimeError("broken on purpose")


def test_a_tool_call_that_timed_out_or_failed_is_an_error_span(
        sink: tuple[OTelSink, InMemorySpanExporter]) -> None:
    from opentelemetry.trace import StatusCode

    s, exporter = sink
    model = ScriptedModel([call("hang", {"n": 1}, "t1"), call("broken", {"n": 2}, "t2"),
                           call("calculator", {"expression": "1 + 1"}, "t3"), "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[hang, broken, Calculator()],
                  telemetry=[s])
    assert agent.run("try them").answer == "done"
    assert s.flush(30)
    tools = {span.attributes["gen_ai.tool.call.id"]: span for span in spans_of(exporter)
             if span.name.startswith("execute_tool")}
    assert tools["t1"].attributes["tether.tool.status"] == "timeout"
    assert tools["t1"].attributes["error.type"] == "timeout"
    assert tools["t1"].status.status_code is StatusCode.ERROR
    assert tools["t2"].attributes["error.type"] == "error"
    assert tools["t2"].status.status_code is StatusCode.ERROR
    assert "error.type" not in tools["t3"].attributes
    assert tools["t3"].status.status_code is StatusCode.UNSET
