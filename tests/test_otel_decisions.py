"""What the field's telemetry reads of tether's decisions (issue 52, part 2).

Every decided tool call is a ``gen_ai.tool.call.decision`` event on the agent's span (the
proposal open-telemetry/semantic-conventions-genai#535: outcome allow / deny /
require_approval), whether or not the tool then runs, with tether's full effect, policy, reason
and who decided — the policy, or the person who approved or refused a held call, in the segment
where they did. A summary, a request plan and an MCP server's sampling are ``chat`` spans of
their own (``tether.model_call.purpose``); a compacted conversation says so on the agent's span
(``gen_ai.conversation.compacted``, only ever true); a graded trial is a
``gen_ai.evaluation.result`` event. Live (the OTel sink) and derived from the store alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, StopReason, tool
from tether.journal.views.span_records import SpanRecord
from tether.journal.views.spans import derive_spans
from tether.observe import OTelSink, to_sdk_spans
from tether.observe.otel import tether_resource
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.requests import ApprovalStore
from tether.store.sqlite import SQLiteStore

from conftest import calls, comparable

NOTE = "the combination is 4-8-15-16"  # masked in the journal: never in an event
done: list[str] = []


@tool
def lookup(key: str) -> str:
    """Read a record."""
    return f"record {key}"


@tool(side_effect=True)
def wipe(key: str) -> str:
    """Delete a record."""
    done.append(f"wipe {key}")
    return "wiped"


@tool(side_effect=True)
def note(text: str) -> str:
    """Keep a note."""
    return "noted"


@tool(side_effect=True)
def pay(amount: int) -> str:
    """Move money."""
    done.append(f"pay {amount}")
    return "paid"


@tool
def summary(key: str) -> str:
    """Summarise a record."""
    return f"summary of {key}"


@tool(side_effect=True)
def export(key: str) -> str:
    """Export a record in full."""
    done.append(f"export {key}")
    return "exported"


class Desk:
    """One effect for each tool."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        effects = {"lookup": Decision(Effect.ALLOW, "reading is fine", "desk"),
                   "summary": Decision(Effect.ALLOW, "summaries are fine", "desk"),
                   "wipe": Decision(Effect.DENY, "wiping is never allowed", "desk"),
                   "note": Decision(Effect.MASK, "notes are private", "desk", fields=("text",),
                                    mask_in=("journal",)),
                   "export": Decision(Effect.DEGRADE, "a summary will do", "desk",
                                      fallback="summary"),
                   "pay": Decision(Effect.REQUIRE_APPROVAL, "money needs a person", "desk")}
        return effects[action.tool]


def agent(store: SQLiteStore, telemetry: list[OTelSink] | None = None) -> Agent:
    script: list[ModelResponse | str] = [calls(("lookup", {"key": "a"}), ("wipe", {"key": "a"}),
                    ("note", {"text": NOTE}), ("export", {"key": "a"}),
                    ("pay", {"amount": 40})), "done"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(),
                 tools=[lookup, wipe, note, pay, summary, export], policy=Desk(), store=store,
                 telemetry=telemetry or [])


def approvals(store: SQLiteStore) -> ApprovalStore:
    found = agent(store).approvals
    assert found is not None
    return found


def decisions(spans: list[SpanRecord]) -> list[list[dict[str, Any]]]:
    """Each agent span's decision events (in the order the segments started), attributes."""
    roots = sorted((s for s in spans if s.name.startswith("invoke_agent")),
                   key=lambda s: s.start_ns)
    return [[dict(a) for name, _, a in root.events if name == "gen_ai.tool.call.decision"]
            for root in roots]


def test_every_decided_call_is_a_decision_event_on_the_agents_span(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    session = agent(store).session("tidy up", user_id="u1")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = session.pending_approvals()
    approvals(store).approve(request.id, approver="alice")
    assert agent(store).resume(session.id).stop_reason is StopReason.FINISHED
    first, second = decisions(derive_spans(store.read(session.id)))
    shown = [(d["gen_ai.tool.name"], d["gen_ai.tool.call.decision.outcome"],
              d["tether.decision.effect"]) for d in first]
    assert shown == [("lookup", "allow", "allow"), ("wipe", "deny", "deny"),
                     ("note", "allow", "mask"), ("export", "deny", "degrade"),
                     ("summary", "allow", "allow"),  # the degraded call's fallback, decided
                     ("pay", "require_approval", "require_approval")]
    assert {d["tether.decision.by"] for d in first} == {"policy desk"}
    assert first[1]["tether.decision.reason"] == "wiping is never allowed"
    assert first[3]["gen_ai.tool.call.id"] == first[4]["gen_ai.tool.call.id"]  # one call
    assert all(d["tether.semconv.proposal"].endswith("#535") for d in first + second)
    # the person's decision, in the segment where the held call went on
    (granted,) = second
    assert granted["gen_ai.tool.name"] == "pay" and granted["tether.decision.by"] == "alice"
    assert granted["gen_ai.tool.call.decision.outcome"] == "allow"
    assert granted["tether.approval.id"] == request.id
    assert granted["gen_ai.tool.call.id"] == first[5]["gen_ai.tool.call.id"]
    assert NOTE not in repr(first + second)
    store.close()


def test_a_refused_approval_is_a_deny_by_the_person_who_refused(tmp_path: Path) -> None:
    done.clear()
    store = SQLiteStore(tmp_path / "t.db")
    session = agent(store).session("tidy up", user_id="u1")
    session.run()
    (request,) = session.pending_approvals()
    approvals(store).deny(request.id, approver="bob", note="not this month")
    agent(store).resume(session.id)
    _, second = decisions(derive_spans(store.read(session.id)))
    (refused,) = second
    assert refused["gen_ai.tool.call.decision.outcome"] == "deny"
    assert refused["tether.decision.by"] == "bob"
    assert "pay 40" not in done and "wipe a" not in done
    store.close()


def test_live_decision_events_are_the_derived_ones(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    sink = OTelSink(exporter)
    store = SQLiteStore(tmp_path / "t.db")
    session = agent(store, [sink]).session("tidy up", user_id="u1")
    session.run()
    assert sink.flush(30)
    live = sorted(map(comparable, exporter.get_finished_spans()))
    derived = to_sdk_spans(derive_spans(store.read(session.id)), tether_resource())
    assert live == sorted(map(comparable, derived))
    (root,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    names = [e.name for e in root.events]
    assert names.count("gen_ai.tool.call.decision") == 6
    sink.close()
    store.close()
