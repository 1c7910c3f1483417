"""The OCSF view: every record real sessions produce is valid OCSF 1.8.0 (checked against the
schema ocsf-lib compiled from the 1.8.0 tag), maps each security event as documented, is the
same for the same events, and never carries a secret."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocsf_schema import schema, validate
from ocsf_sessions import CARD, SECRET, run_all
from tether.journal.views.ocsf import (
    MASKED,
    OCSFView,
    ocsf_events,
    record_json,
    redact,
)
from tether.journal.views.ocsf_findings import pin_events, tamper_finding
from tether.types import Event


@pytest.fixture(scope="module")
def live() -> tuple[list[Event], list[str]]:
    events: list[Event] = []
    ids = run_all([events.append])
    return events, ids


@pytest.fixture(scope="module")
def records(live: tuple[list[Event], list[str]]) -> list[dict[str, Any]]:
    return ocsf_events(live[0])


def by_code(records: list[dict[str, Any]], code: str) -> list[dict[str, Any]]:
    return [r for r in records if r["metadata"]["event_code"] == code]


def test_the_vendored_schema_is_ocsf_1_8_0_as_ocsf_lib_loads_it() -> None:
    s = schema()
    assert s.version == "1.8.0"
    assert s.classes["api_activity"].uid == 6003 and s.classes["detection_finding"].uid == 2004
    assert {"security_control", "ai_operation"} <= set(s.classes["api_activity"].profiles or [])
    # 1.8.0 has no record-integrity attributes: the hash chain goes under unmapped
    assert "record_integrity" not in (s.profiles or {})


def test_every_record_of_every_event_kind_is_valid_ocsf(records: list[dict[str, Any]]) -> None:
    codes = {r["metadata"]["event_code"] for r in records}
    assert codes == {"session.start", "tool.decision", "credential.issued", "approval.granted",
                     "approval.refused", "model.overrun", "session.end"}
    actions = {(r["metadata"]["event_code"], r["action"], r["disposition"]) for r in records}
    assert {("tool.decision", "Allowed", "Allowed"), ("tool.decision", "Denied", "Blocked"),
            ("tool.decision", "Held", "Delayed")} <= actions
    for record in records:
        assert validate(record) == [], record
        assert record["metadata"]["profiles"] == ["security_control", "ai_operation"]


def test_the_validator_rejects_what_the_schema_does_not_allow(
        records: list[dict[str, Any]]) -> None:
    good = by_code(records, "tool.decision")[0]
    bad = copy.deepcopy(good)
    bad["activity_name"] = "Delete"  # not the caption of its id
    bad["actor"]["user"]["nickname"] = "x"  # no such attribute
    bad["severity_id"] = 7  # not in the enum
    bad["time"] = "yesterday"  # a timestamp is a long
    del bad["metadata"]["product"]  # required
    bad["metadata"]["profiles"] = ["security_control"]  # ai_model needs ai_operation
    problems = "\n".join(validate(bad))
    for expected in ("activity_name", "nickname", "severity_id", "time",
                     "metadata.product is required", "ai_model needs the ai_operation"):
        assert expected in problems


def test_decisions_map_onto_security_control(records: list[dict[str, Any]]) -> None:
    allowed, denied, charge, held, held2, child, inner = by_code(records, "tool.decision")
    assert allowed["api"]["operation"] == "calculator" and allowed["activity_name"] == "Read"
    assert (allowed["action_id"], allowed["disposition_id"], allowed["is_alert"]) == (1, 1, False)
    assert denied["policy"] == {"uid": "no-wipe", "name": "no-wipe", "is_applied": True}
    assert (denied["action_id"], denied["disposition_id"], denied["is_alert"]) == (2, 2, True)
    assert denied["status_detail"] == "wiping is never allowed" and denied["severity_id"] == 3
    assert (held["action_id"], held["action"], held["disposition"]) == (99, "Held", "Delayed")
    assert held["api"]["request"]["data"]["arguments"]["card"] == MASKED
    assert held["actor"]["user"]["uid"] == "carol" and held["metadata"]["tenant_uid"] == "acme"
    assert held["message_context"]["uid"] == held["api"]["request"]["uid"]
    assert held["ai_model"] == {"name": "scripted", "ai_provider": "tether"}
    assert held2["disposition"] == "Delayed" and charge["api"]["operation"] == "charge"
    # a sub-agent's calls are its own session's records, correlated by its own session id
    assert child["api"]["operation"] == "child" and inner["actor"]["app_name"] == "child"
    assert inner["metadata"]["correlation_uid"] != child["metadata"]["correlation_uid"]


def test_approvals_name_who_decided(records: list[dict[str, Any]]) -> None:
    (granted,) = by_code(records, "approval.granted")
    (refused,) = by_code(records, "approval.refused")
    assert granted["actor"]["user"]["name"] == "alice" and granted["disposition"] == "Approved"
    assert granted["policy"]["uid"] == "approvals" and granted["api"]["operation"] == "pay"
    assert refused["actor"]["user"]["name"] == "bob" and refused["disposition"] == "Rejected"
    assert refused["is_alert"] and refused["api"]["operation"] == "pay"


def test_overruns_and_budget_stops_are_alerts(records: list[dict[str, Any]]) -> None:
    (overrun,) = by_code(records, "model.overrun")
    assert overrun["severity"] == "High" and overrun["is_alert"]
    assert overrun["policy"]["uid"] == "budget.token_budget"
    assert overrun["message_context"]["completion_tokens"] == 4000
    assert overrun["ai_model"]["name"] == "gpt-liar"
    (stop,) = by_code(records, "session.end")  # only a control's stop is a security event
    assert stop["policy"]["uid"] == "budget.token_budget" and stop["action"] == "Denied"


def test_a_policy_load_names_the_recipe(live: tuple[list[Event], list[str]],
                                        records: list[dict[str, Any]]) -> None:
    starts = [e for e in live[0] if e.type == "session.start"]
    loads = by_code(records, "session.start")
    assert [r["policy"]["uid"] for r in loads] == [e.data["recipe"] for e in starts]
    assert loads[0]["policy"]["data"]["tools"] == ["calculator", "wipe", "pay", "charge"]


def test_a_credential_is_recorded_by_its_id_and_no_secret_reaches_a_record(
        live: tuple[list[Event], list[str]], records: list[dict[str, Any]]) -> None:
    (issued,) = by_code(records, "credential.issued")
    (event,) = [e for e in live[0] if e.type == "credential.issued"]
    assert issued["resources"][0]["uid"] == event.data["token_id"]
    assert issued["resources"][0]["type"] == "credential"
    assert set(event.data) == {"call_id", "tool", "token_id", "ttl", "max_uses"}
    text = "\n".join(record_json(r) for r in records)
    assert SECRET not in text and CARD not in text
    assert SECRET[4:20] not in text


def test_records_are_deterministic_and_keyed_by_session_and_seq(
        live: tuple[list[Event], list[str]], records: list[dict[str, Any]]) -> None:
    again = ocsf_events(list(live[0]), version="0.1.0")
    assert [record_json(r) for r in again] == [record_json(r) for r in records]
    uids = [r["metadata"]["uid"] for r in records]
    assert len(set(uids)) == len(uids)
    for record in records:
        journal = record["unmapped"]["journal"]
        assert record["metadata"]["uid"] == f"{record['metadata']['correlation_uid']}/" \
                                             f"{journal['seq']}"
        assert len(journal["hash"]) == 64 and len(journal["prev_hash"]) == 64


def test_a_fold_primed_with_earlier_events_agrees_with_one_that_saw_them(
        live: tuple[list[Event], list[str]], records: list[dict[str, Any]]) -> None:
    events, ids = live
    session = [e for e in events if e.session_id == ids[1]]
    resumed = next(i for i, e in enumerate(session) if e.type == "session.resumed")
    view = OCSFView()
    for earlier in session[:resumed]:
        view.apply(earlier)
    tail = [r for e in session[resumed:] for r in view.apply(e)]
    whole = [r for r in records if r["metadata"]["correlation_uid"] == ids[1]]
    assert tail == whole[-len(tail):] and tail


def test_a_tamper_finding_is_a_valid_detection_finding() -> None:
    finding = tamper_finding("s1", 5, "edited", "the content of seq 5 changed", 1_700_000_000_000)
    assert validate(finding) == []
    assert (finding["class_uid"], finding["type_uid"], finding["severity"]) == (
        2004, 200401, "Critical")
    assert finding["finding_info"]["uid"] == "s1/tamper/5" and finding["is_alert"]


def test_pin_records_are_valid_and_a_pending_change_is_blocked() -> None:
    pinned = {"server": "fs", "tool": "read", "fingerprint": "sha256:" + "a" * 64,
              "pinned_at": "2026-01-01T00:00:00Z", "approved_by": "erin", "definition": {}}
    pending = {**pinned, "fingerprint": "sha256:" + "b" * 64, "approved_by": None,
               "pinned_at": "2026-01-02T00:00:00Z"}
    kept, changed = pin_events(pinned, pending)
    for record in (kept, changed):
        assert validate(record) == []
    assert kept["disposition"] == "Approved" and kept["actor"]["user"]["name"] == "erin"
    assert changed["action"] == "Denied" and changed["is_alert"]
    assert changed["activity_name"] == "Update" and changed["time"] == 1_767_312_000_000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b", "secret", "token"]), inner, max_size=3), max_leaves=12)


def _keys_with_values(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, item
            yield from _keys_with_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys_with_values(item)


@given(json_values)
def test_redaction_masks_every_named_key_at_any_depth_and_nothing_else(value: Any) -> None:
    masked = redact(value, {"secret", "token"})
    for key, item in _keys_with_values(masked):
        if key in ("secret", "token"):
            assert item == MASKED
    assert redact(value, ()) is value
    if not any(k in ("secret", "token") for k, _ in _keys_with_values(value)):
        assert masked == value
    json.dumps(masked)


def test_the_schema_file_is_small_and_regenerable() -> None:
    here = Path(__file__).parent / "ocsf"
    assert (here / "schema-1.8.0.json").stat().st_size < 300_000
    assert "build(" in (here / "build_schema.py").read_text()


texts = st.text(max_size=12)
effects = st.sampled_from(["allow", "deny", "require_approval", "partial_allow", "mask",
                           "degrade", "something-new"])


@given(user=st.none() | texts, tenant=st.none() | texts, roles=st.lists(texts, max_size=2),
       model=texts, tool=texts, effect=effects, policy=texts, reason=texts,
       arguments=st.dictionaries(texts, json_values, max_size=3),
       side_effect=st.none() | st.booleans(), tags=st.lists(texts, max_size=2),
       approver=st.none() | texts, limit=texts)
def test_any_decision_approval_or_overrun_makes_valid_records(
        user: str | None, tenant: str | None, roles: list[str], model: str, tool: str,
        effect: str, policy: str, reason: str, arguments: dict[str, Any],
        side_effect: bool | None, tags: list[str], approver: str | None, limit: str) -> None:
    resource = {"side_effect": side_effect, "tags": tags, "risk": "high"}
    data: list[tuple[str, dict[str, Any]]] = [
        ("session.start", {"agent": "a", "model": model, "recipe": "r", "tools": [tool],
                           "subject": {"user_id": user, "tenant_id": tenant, "roles": roles}}),
        ("tool.decision", {"call_id": "c1", "tool": tool, "arguments": arguments,
                           "decision": {"effect": effect, "policy_id": policy,
                                        "reason": reason}, "resource": resource}),
        ("approval.granted", {"approval_id": "apr_1", "call_id": "c1", "tool": tool,
                              "approver": approver, "note": reason}),
        ("approval.refused", {"approval_id": "apr_1", "call_id": "c1", "why": reason,
                              "approver": approver}),
        ("credential.issued", {"call_id": "c1", "tool": tool, "token_id": "t1", "ttl": 30.0,
                               "max_uses": 1}),
        ("model.overrun", {"step": 1, "limit": limit, "detail": reason, "reserved": {},
                           "reported": {"input_tokens": 5, "output_tokens": 7}}),
        ("effect.settled", {"call_id": "c1", "action": "skip", "operator": "op", "note": ""}),
        ("session.end", {"reason": "cost_budget", "detail": reason}),
    ]
    events = [Event(i, kind, "s1", 1_700_000_000.5 + i, d, "0" * 64, f"{i:064x}")
              for i, (kind, d) in enumerate(data, 1)]
    records = ocsf_events(events, version="0.1.0")
    assert len(records) == len(events)
    for record in records:
        assert validate(record) == [], record
