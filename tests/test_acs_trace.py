"""ACS Trace as an option beside the default shape (issue 52, part 3): OWASP ACS v0.1.0's span
per step and its OCSF classes, from tether's own sessions and from a Guardian's journal.

The expected names, attributes, classes and severities below are written from the specification
(GenAI-Security-Project/agent-control-standard, specification/v0.1.0/trace/otel-mapping.json and
ocsf-mapping.json, Apache-2.0), not read from tether's tables, so a tether table that drifts from
the spec fails here. Every OCSF record is also checked against the OCSF 1.8.0 schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import test_otel_decisions as desk
from ocsf_schema import validate
from tether import Agent, ReAct, ScriptedModel, StopReason
from tether.errors import InvalidArgument
from tether.journal.views.shapes import derive, ocsf_records
from tether.journal.views.span_records import SpanRecord
from tether.observe import OTelSink, SIEMSink, to_sdk_spans
from tether.observe.otel import tether_resource
from tether.store.sqlite import SQLiteStore
from tether.types import Event

from conftest import comparable, import_or_unavailable

# otel-mapping.json: step_to_span (span name -> required attributes) for the steps tether makes
SPANS = {
    "acs.session": ("acs.session.id",),
    "acs.message.user": ("acs.session.id", "acs.content.types"),
    "acs.message.agent": ("acs.session.id", "acs.agent.id"),
    "gen_ai.tool.call": ("gen_ai.tool.name", "acs.capability"),
    "gen_ai.tool.result": ("gen_ai.tool.name", "acs.exit_status"),
    "acs.session.end": ("acs.session.reason",),
    "acs.compact": ("acs.compact.entry_count", "acs.compact.triggered_by"),
    "acs.compact.complete": ("acs.compact.entry_count",),
    "acs.memory.store": ("acs.memory_store.name", "acs.operation"),
    "acs.turn": ("acs.turn.id", "acs.turn.triggered_by"),
}
DECISION = ("acs.decision", "acs.evaluator")  # decision_event.required_attributes
# ocsf-mapping.json: step -> class_uid; severity_mapping; decision_class
CLASSES = {"steps/sessionStart": 3002, "steps/sessionEnd": 3002, "steps/userMessage": 6002,
           "steps/agentResponse": 6002, "steps/toolCallRequest": 1007,
           "steps/toolCallResult": 1007, "steps/preCompact": 6005, "steps/postCompact": 6005,
           "steps/memoryStore": 6005, "steps/turnStart": 6002}
SEVERITY = {"allow": 1, "modify": 2, "ask": 3, "defer": 3, "deny": 4}


def approved_session(store: SQLiteStore, telemetry: list[Any] | None = None) -> str:
    """The desk: allowed, denied, masked, degraded and held calls; the held one approved by
    alice, and the session resumed."""
    session = desk.agent(store, telemetry).session("tidy up", user_id="u1")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = session.pending_approvals()
    desk.approvals(store).approve(request.id, approver="alice")
    assert desk.agent(store, telemetry).resume(session.id).stop_reason is StopReason.FINISHED
    return session.id


def check_spans(spans: Iterable[SpanRecord]) -> list[str]:
    """Every way ``spans`` break ACS Trace's span mapping."""
    problems = []
    for span in spans:
        required = SPANS.get(span.name)
        if required is None:
            problems.append(f"{span.name}: not a span ACS Trace names")
            continue
        problems += [f"{span.name} lacks {a}" for a in required if a not in span.attributes]
        for name, _, attributes in span.events:
            if name != "acs.decision":
                problems.append(f"{span.name}: event {name} is not ACS Trace's")
            problems += [f"{span.name}: decision lacks {a}" for a in DECISION
                         if a not in attributes]
            if attributes.get("acs.decision") not in SEVERITY:
                problems.append(f"{span.name}: {attributes.get('acs.decision')} is no disposition")
    return problems


def decisions(spans: Iterable[SpanRecord]) -> list[tuple[str, str, str, str]]:
    """(tool, disposition, evaluator, who) of every decision, in time order."""
    found = [(time, str(s.attributes["gen_ai.tool.name"]), str(a["acs.decision"]),
              str(a["acs.evaluator"]), str(a.get("tether.decision.by", "")))
             for s in spans for name, time, a in s.events if s.name == "gen_ai.tool.call"]
    return [item[1:] for item in sorted(found)]


def test_every_span_is_a_step_acs_trace_names_with_its_required_attributes(
        tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    spans = derive("acs", store.read(approved_session(store)))
    assert check_spans(spans) == []
    assert decisions(spans) == [
        ("lookup", "allow", "deterministic", "policy desk"),
        ("wipe", "deny", "deterministic", "policy desk"),
        ("note", "modify", "deterministic", "policy desk"),  # a mask
        ("export", "deny", "deterministic", "policy desk"),  # degraded: the call ran no export
        ("export", "allow", "deterministic", "policy desk"),  # ... and its fallback did
        ("pay", "ask", "deterministic", "policy desk"),
        ("pay", "allow", "human", "alice")]  # in the resumed segment
    names = [s.name for s in spans]
    assert names.count("acs.session") == 2  # a segment each: the pause and the resumption
    assert names.count("gen_ai.tool.result") == 4  # lookup, note, export's fallback, pay
    by_id = {s.context.span_id: s for s in spans}
    for result in (s for s in spans if s.name == "gen_ai.tool.result"):
        request = by_id[result.parent.span_id]  # type: ignore[union-attr]
        assert request.name == "gen_ai.tool.call"  # the verdict and the action share a parent
        assert request.attributes["gen_ai.tool.call.id"] == result.attributes[
            "acs.request_id_ref"]
    held = [s for s in spans if s.name == "gen_ai.tool.call"
            and s.attributes["gen_ai.tool.name"] == "pay"]
    assert [s.attributes.get("tether.paused") for s in held] == [True, None]
    assert desk.NOTE not in repr(spans)
    store.close()


def test_a_refused_approval_ends_the_call_as_a_persons_deny(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    session = desk.agent(store).session("tidy up", user_id="u1")
    session.run()
    (request,) = session.pending_approvals()
    desk.approvals(store).deny(request.id, approver="bob", note="not this month")
    desk.agent(store).resume(session.id)
    spans = derive("acs", store.read(session.id))
    assert decisions(spans)[-1] == ("pay", "deny", "human", "bob")
    assert not [s for s in spans if s.name == "gen_ai.tool.result"
                and s.attributes["gen_ai.tool.name"] == "pay"]  # nothing ran
    records = ocsf_records("acs", store.read(session.id))
    (refusal,) = [r for r in records if r["class_uid"] == 2004 and "bob" in json.dumps(r)]
    assert refusal["severity_id"] == 4 and refusal["verdict_id"] == 8
    store.close()


def test_ocsf_records_take_the_classes_and_severities_acs_trace_fixes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    records = ocsf_records("acs", store.read(approved_session(store)))
    assert {json.dumps(p) for r in records for p in validate(r)} == set()  # OCSF 1.8.0
    steps = [r for r in records if r["class_uid"] != 2004]
    for record in steps:
        assert record["class_uid"] == CLASSES[record["metadata"]["event_code"]]
    requests = [r for r in steps if r["metadata"]["event_code"] == "steps/toolCallRequest"]
    findings = [r for r in records if r["class_uid"] == 2004]
    dispositions = [r["unmapped"]["acs"]["attributes"]["gen_ai.tool.name"] for r in requests]
    assert dispositions == ["lookup", "wipe", "note", "export", "summary", "pay", "pay"]
    # a finding for every decision that is not an allow, and for nothing else
    assert [f["unmapped"]["acs"]["decision"] for f in findings] == ["deny", "modify", "deny",
                                                                     "ask"]
    for finding in findings:
        assert finding["severity_id"] == SEVERITY[finding["unmapped"]["acs"]["decision"]]
        assert finding["finding_info"]["title"] and finding["finding_info"]["uid"]
        assert finding["evidences"] and isinstance(finding["verdict_id"], int)
    assert desk.NOTE not in json.dumps(records)
    store.close()


def test_live_sinks_in_the_acs_shape_give_what_the_export_derives(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    siem = tmp_path / "siem.jsonl"
    sinks: list[Any] = [OTelSink(exporter, shape="acs"), SIEMSink(siem, shape="acs")]
    store = SQLiteStore(tmp_path / "t.db")
    session = desk.agent(store, sinks).session("tidy up", user_id="u1")
    session.run()
    for sink in sinks:
        assert sink.flush(30)
    derived = to_sdk_spans(derive("acs", store.read(session.id)), tether_resource())
    assert sorted(map(comparable, exporter.get_finished_spans())) == sorted(
        map(comparable, derived))
    live = [json.loads(line) for line in siem.read_text().splitlines()]
    assert live == ocsf_records("acs", store.read(session.id))
    for sink in sinks:
        sink.close()
    store.close()


def test_the_export_command_writes_the_acs_shape_from_another_process(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    sid = approved_session(store)
    expected = ocsf_records("acs", store.read(sid))
    store.close()
    url = f"sqlite:///{tmp_path / 't.db'}"
    run = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", url,
                          "--session", sid, "--format", "ocsf", "--shape", "acs"],
                         capture_output=True, text=True, check=True)
    written = [json.loads(line) for line in run.stdout.splitlines()]
    assert [_without_version(r) for r in written] == [_without_version(r) for r in expected]
    spans = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", url,
                            "--session", sid, "--format", "otlp", "--shape", "acs"],
                           capture_output=True, text=True, check=True)
    names = {s["name"] for line in spans.stdout.splitlines()
             for r in json.loads(line)["resourceSpans"] for scope in r["scopeSpans"]
             for s in scope["spans"]}
    assert names == {"acs.session", "acs.message.user", "acs.message.agent", "gen_ai.tool.call",
                     "gen_ai.tool.result", "acs.session.end"}
    wrong = subprocess.run([sys.executable, "-m", "tether", "audit", "export", "--store", url,
                            "--shape", "acs"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "--format otlp or --format ocsf" in wrong.stderr


def _without_version(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "metadata": {k: v for k, v in record["metadata"].items()
                                   if k != "product"}}


def test_an_unknown_shape_is_refused_with_the_ones_there_are() -> None:
    with pytest.raises(InvalidArgument, match=r"'default'.*'acs'"):
        OTelSink(InMemorySpanExporter(), shape="ACS")
    with pytest.raises(InvalidArgument, match="unknown telemetry shape"):
        ocsf_records("otel", [])


def test_a_compaction_is_acs_trace_s_pre_and_post_compact(tmp_path: Path) -> None:
    import test_compaction as compaction_case
    from tether import Compaction

    store = SQLiteStore(tmp_path / "t.db")
    agent = compaction_case._agent(Compaction(context_window=1200, model=ScriptedModel(
        compaction_case.Recorder(), name="summariser")), store=store)
    result = agent.run("read the records")
    events = store.read(result.session_id)
    spans = derive("acs", events)
    assert check_spans(spans) == []
    compacts = [s for s in spans if s.name == "acs.compact"]
    assert compacts and all(s.attributes["acs.compact.entry_count"] > 0 for s in compacts)
    records = ocsf_records("acs", events)
    assert {r["class_uid"] for r in records if r["metadata"]["event_code"].endswith(
        "Compact")} == {6005}
    assert [p for r in records for p in validate(r)] == []
    store.close()


# -- a Guardian's journal: the hooks are the steps ------------------------------------------------

def guardian_journal() -> tuple[Any, list[Event], int]:
    from test_acs_guardian import SSN, Local

    local = Local()
    local.hello()
    local.send(local.message("steps/sessionStart", {"user": {"id": "u-7"}}))
    local.send(local.message("steps/userMessage", {"content": [{"type": "text", "text": "hi"}]}))
    local.call("records.lookup", {"id": "c-1", "ssn": SSN})
    local.call("records.delete", {"id": "c-1"})
    local.send(local.message("steps/toolCallResult", {
        "tool": {"name": "records.lookup"}, "exit_status": "success", "duration_ms": 12,
        "outputs": {"ssn": SSN}}))
    local.send(local.message("steps/memoryStore", {"memory_store": {"name": "notes"},
                                                    "operation": "write"}))
    local.send(local.message("steps/turnStart", {"turn_id": "t-1", "triggered_by": "user"}))
    refused = local.call("shell.exec", {"cmd": "id"})  # no tool the Guardian knows: refused
    assert "error" in refused
    (info,) = local.store.sessions()
    return local, list(local.store.read(info.session_id)), refused["error"]["code"]


def test_a_guardians_journal_is_traced_from_its_hooks_once_each() -> None:
    import_or_unavailable("rfc8785", "acs")
    from test_acs_guardian import SSN

    local, events, refused_code = guardian_journal()
    spans = derive("acs", events)
    assert check_spans(spans) == []
    (root,) = [s for s in spans if s.name == "acs.session"]
    assert root.attributes["acs.session.id"] == local.session_id  # the ACS session, not tether's
    calls = [s for s in spans if s.name == "gen_ai.tool.call"]
    assert len(calls) == 3  # one per request hook: the gateway's own events are not steps again
    assert decisions(spans) == [("records.lookup", "modify", "deterministic", "guardian"),
                                ("records.delete", "deny", "deterministic", "guardian"),
                                ("shell.exec", "deny", "deterministic", "guardian")]
    assert [s.attributes["acs.capability"] for s in calls] == ["records.lookup",
                                                               "records.delete", "shell.exec"]
    assert calls[2].attributes["acs.refused.code"] == refused_code
    (result,) = [s for s in spans if s.name == "gen_ai.tool.result"]
    assert result.attributes["acs.exit_status"] == "success"
    assert [dict(a)["acs.decision"] for _, _, a in result.events] == ["modify"]
    (turn,) = [s for s in spans if s.name == "acs.turn"]
    assert turn.attributes["acs.turn.triggered_by"] == "user" and not turn.events
    (memory,) = [s for s in spans if s.name == "acs.memory.store"]
    assert memory.attributes["acs.memory_store.name"] == "notes"
    (message,) = [s for s in spans if s.name == "acs.message.user"]
    assert message.attributes["acs.content.types"] == ("text",)
    records = ocsf_records("acs", events)
    assert [p for r in records for p in validate(r)] == []
    findings = [r["finding_info"]["title"] for r in records if r["class_uid"] == 2004]
    assert [title.split(" (")[0] for title in findings] == [
        "records.lookup: modify", "records.delete: deny",
        "records.lookup: modify",  # the result's output, masked
        "shell.exec: deny"]
    assert SSN not in repr(spans) + json.dumps(records)


def test_a_native_session_without_a_guardian_context_is_traced_from_its_own_events(
        tmp_path: Path) -> None:
    """A gateway that serves no ACS session (``tether mcp serve``) is traced from its calls."""
    import asyncio

    from tether import Gateway

    store = SQLiteStore(tmp_path / "t.db")
    gateway = Gateway([desk.lookup, desk.wipe], policy=desk.Desk(), client="ci", store=store)
    asyncio.run(gateway.call("lookup", {"key": "a"}))
    asyncio.run(gateway.call("wipe", {"key": "a"}))
    gateway.close()
    spans = derive("acs", store.read(gateway.id))
    assert decisions(spans) == [("lookup", "allow", "deterministic", "policy desk"),
                                ("wipe", "deny", "deterministic", "policy desk")]
    assert not [s for s in spans if s.name == "acs.message.user"]  # no user asked anything
    store.close()


def test_the_default_shape_is_unchanged_by_the_option(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    sid = approved_session(store)
    from tether.journal.views.spans import SpanDeriver

    deriver, folded = SpanDeriver(sid), []
    for event in store.read(sid):
        folded += deriver.feed(event)
    assert derive("default", store.read(sid)) == folded  # the GenAI spans, as before
    assert Agent(model=ScriptedModel(["hi"]), reasoning=ReAct()).run("x").answer == "hi"
    store.close()


def test_a_guardian_with_acs_sinks_says_so_and_traces_live_what_the_export_derives(
        tmp_path: Path) -> None:
    import_or_unavailable("rfc8785", "acs")
    import base64

    from tether.policy.yaml_policy import YamlPolicy
    from tether.serve.acs import acs_guardian

    from acs_vectors import SECRET
    from test_acs_guardian import POLICY, Local

    exporter = InMemorySpanExporter()
    siem = tmp_path / "siem.jsonl"
    sinks: list[Any] = [OTelSink(exporter, shape="acs"), SIEMSink(siem, shape="acs")]
    local = Local()
    local.guardian = acs_guardian(YamlPolicy.from_string(POLICY), secret=base64.b64decode(
        SECRET), store=local.store, tools=["records.lookup"], telemetry=sinks)
    hello = local.hello()["result"]
    assert hello["trace_emission"] == {"otel_enabled": True, "ocsf_enabled": True}
    local.call("records.delete", {"id": "c-1"})
    local.send(local.message("steps/sessionEnd", {"reason": "done"}))
    for sink in sinks:
        assert sink.flush(30)
    (info,) = local.store.sessions()
    events = local.store.read(info.session_id)
    derived = to_sdk_spans(derive("acs", events), tether_resource())
    assert sorted(map(comparable, exporter.get_finished_spans())) == sorted(
        map(comparable, derived))
    assert [json.loads(line) for line in siem.read_text().splitlines()] == ocsf_records(
        "acs", events)
    assert {s.name for s in exporter.get_finished_spans()} == {
        "acs.session", "gen_ai.tool.call", "acs.session.end"}
    for sink in sinks:
        sink.close()
    plain = Local()
    assert plain.hello()["result"]["trace_emission"] == {"otel_enabled": False,
                                                         "ocsf_enabled": False}
