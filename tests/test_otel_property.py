"""Invariants of the span derivation over generated runs (Hypothesis): whatever the script —
calls allowed, denied, failing, waiting for approval, budgets that stop the run early — the
spans a live sink exported equal the spans derived from the journal, every span id is unique,
every span ends no earlier than it starts, and every parent is a span of the same trace (or the
caller's remote span)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.journal.views.spans import derive_spans
from tether.observe import OTelSink, to_sdk_spans
from tether.observe.otel import tether_resource
from tether.policy import Action, Context, Resource, Subject

from conftest import comparable


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    if key == "boom":
        raise RuntimeError("lookup failed")
    return f"value of {key}"


@tool(side_effect=True)
def send(to: str) -> str:
    """Send something."""
    return f"sent to {to}"


class Rules:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        key = str(action.arguments.get("key", action.arguments.get("to", "")))
        if key.startswith("no"):
            return Decision(Effect.DENY, "refused", "rules")
        if action.tool == "send":
            return Decision(Effect.REQUIRE_APPROVAL, "a person decides", "rules")
        return Decision(Effect.ALLOW, "ok", "rules")


calls = st.tuples(st.sampled_from(["lookup", "send"]),
                  st.sampled_from(["a", "b", "no-c", "boom"]))
turns = st.lists(st.lists(calls, min_size=0, max_size=3), min_size=1, max_size=4)


def script(plan: list[list[tuple[str, str]]]) -> list[Any]:
    out: list[Any] = []
    for n, turn in enumerate(plan):
        if not turn:
            out.append(f"answer {n}")
            continue
        out.append(ModelResponse(tool_calls=tuple(
            ToolCall(f"c{n}_{i}", name, {"key" if name == "lookup" else "to": value})
            for i, (name, value) in enumerate(turn))))
    return out


@settings(max_examples=40, deadline=None)
@given(turns, st.sampled_from([None, 400, 900]), st.sampled_from([None, 2, 5]))
def test_live_and_derived_spans_agree_and_are_well_formed(
        plan: list[list[tuple[str, str]]], tokens: int | None, tool_calls: int | None) -> None:
    exporter = InMemorySpanExporter()
    with OTelSink(exporter) as sink:
        agent = Agent(model=ScriptedModel(script(plan), when_exhausted="done"),
                      reasoning=ReAct(), tools=[lookup, send], policy=Rules(),
                      telemetry=[sink])
        session = agent.session("go", budget=Budget(max_tokens=tokens, max_tool_calls=tool_calls))
        session.run()
        assert sink.flush(60)
    live = list(exporter.get_finished_spans())
    derived = to_sdk_spans(derive_spans(session.replay()), tether_resource())
    assert sorted(map(comparable, live)) == sorted(map(comparable, derived))
    ids = [s.context.span_id for s in live]
    assert len(ids) == len(set(ids))
    roots = [s for s in live if s.name.startswith("invoke_agent")]
    assert len(roots) == 1
    for span in live:
        assert span.end_time >= span.start_time
        assert span.context.trace_id == roots[0].context.trace_id
        if span is not roots[0]:
            assert span.parent is not None and span.parent.span_id in ids
    decided = {e.data["call_id"] for e in session.replay() if e.type == "tool.decision"}
    tool_spans = {s.attributes["gen_ai.tool.call.id"] for s in live
                  if s.name.startswith("execute_tool")}
    assert decided <= tool_spans
