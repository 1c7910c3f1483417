"""A session's journal as ACS Trace's OCSF records: the option beside tether's API Activity.

Why: ACS v0.1.0 (``trace/ocsf-mapping.json``) fixes an OCSF class per step — a tool call's
request and result are Process Activity (1007), a session's start and end Authentication (3002,
logon and logoff), messages and turns class 6002, compaction, memory and retrieval Datastore
Activity (6005) — and makes every decision that is not an allow a Detection Finding (2004:
``finding_info.title`` and ``.uid``, ``evidences``, ``verdict_id``), severity by disposition
(allow 1, modify 2, ask and defer 3, deny 4). A SIEM rule written for ACS keys on those; tether's
default (``tether.journal.views.ocsf``: every decision an API Activity 6003) does not match it.

Decision: the same fold contract as ``OCSFView`` (``apply`` an event, get its records) over
the steps ``acs_steps`` reads off the journal, with the same envelope (``metadata``, journal
hash chain under ``unmapped.journal``), so ``SIEMSink(shape="acs")`` live and ``tether audit
export --format ocsf --shape acs`` give the same records. Class 6002 is OCSF's *Application
Lifecycle* (the mapping's "Application Activity" is the category's name): its records say 6002
with OCSF's own caption, activity Other, and name the step. A pure fold knows no host, so a
tool call's required ``device`` is the observed agent's runtime, type Unknown, named for the
agent; a collector that knows the host may enrich it. Steps the mapping sends to Inventory Info
or Module Activity (skills, AgBOM) make no record here: tether neither has them nor evaluates
them as a Guardian; a decision on one is still a finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tether.journal.views.acs_steps import AcsSteps, Step
from tether.journal.views.ocsf import DETECTION_FINDING, _Context, _Record, product_version
from tether.types import Event
from tether.vocabulary import EventType

PROFILES = ("security_control",)
#: ACS disposition -> OCSF severity_id (ocsf-mapping.json's severity_mapping)
SEVERITIES = {"allow": 1, "modify": 2, "ask": 3, "defer": 3, "deny": 4}
#: disposition -> (action_id, action caption, disposition_id, disposition, verdict_id, verdict)
_CONTROLS = {
    "allow": (1, "Allowed", 1, "Allowed", 5, "Benign"),
    "modify": (4, "Modified", 11, "Corrected", 99, "Modified"),
    "ask": (99, "Held", 14, "Delayed", 9, "Managed Externally"),
    "defer": (99, "Deferred", 14, "Delayed", 9, "Managed Externally"),
    "deny": (2, "Denied", 2, "Blocked", 8, "Security Risk"),
}
#: step -> (class_uid, class caption, category_uid, category, activity_id, activity caption)
_CLASSES: dict[str, tuple[int, str, int, str, int, str]] = {
    "steps/sessionStart": (3002, "Authentication", 3, "Identity & Access Management", 1,
                           "Logon"),
    "steps/sessionEnd": (3002, "Authentication", 3, "Identity & Access Management", 2, "Logoff"),
    "steps/subagentStart": (3002, "Authentication", 3, "Identity & Access Management", 1,
                            "Logon"),
    "steps/subagentStop": (3002, "Authentication", 3, "Identity & Access Management", 2,
                           "Logoff"),
    "steps/toolCallRequest": (1007, "Process Activity", 1, "System Activity", 1, "Launch"),
    "steps/toolCallResult": (1007, "Process Activity", 1, "System Activity", 2, "Terminate"),
    "steps/knowledgeRetrieval": (6005, "Datastore Activity", 6, "Application Activity", 1,
                                 "Read"),
    "steps/memoryStore": (6005, "Datastore Activity", 6, "Application Activity", 5, "Write"),
    "steps/memoryContextRetrieval": (6005, "Datastore Activity", 6, "Application Activity", 1,
                                     "Read"),
    "steps/preCompact": (6005, "Datastore Activity", 6, "Application Activity", 99, "Compact"),
    "steps/postCompact": (6005, "Datastore Activity", 6, "Application Activity", 99,
                          "Compacted"),
    **{method: (6002, "Application Lifecycle", 6, "Application Activity", 99, caption)
       for method, caption in (("steps/userMessage", "User Message"),
                               ("steps/agentResponse", "Agent Response"),
                               ("steps/agentTrigger", "Agent Trigger"),
                               ("steps/turnStart", "Turn Start"),
                               ("steps/turnEnd", "Turn End"))},
}


@dataclass(slots=True)
class _Who:
    agent: str = ""
    user: str = ""


class AcsOCSFView:
    """ACS Trace's OCSF records of the events of one or more sessions, each in journal order."""

    def __init__(self, version: str | None = None) -> None:
        self._version = product_version() if version is None else version
        self._steps = AcsSteps()
        self._contexts: dict[str, _Context] = {}
        self._who: dict[str, _Who] = {}

    def forget(self, session_id: str) -> None:
        self._steps.forget(session_id)
        self._contexts.pop(session_id, None)
        self._who.pop(session_id, None)

    def apply(self, event: Event) -> list[dict[str, Any]]:
        ctx = self._contexts.setdefault(event.session_id, _Context())
        who = self._who.setdefault(event.session_id, _Who())
        if event.type in (EventType.SESSION_START, EventType.SESSION_RESUMED):
            subject = event.data.get("subject")
            if isinstance(subject, dict):
                ctx.tenant_id = subject.get("tenant_id")
                who.user = str(subject.get("user_id") or "")
        steps = self._steps.apply(event)
        who.agent = self._steps.agent(event.session_id)
        out: list[dict[str, Any]] = []
        for step in steps:
            out += self._records(step, _Record(self._version, ctx, step.event), who)
        return out

    def _records(self, step: Step, r: _Record, who: _Who) -> list[dict[str, Any]]:
        a, d = step.attributes, step.decision
        disposition = d.disposition if d is not None else "allow"
        severity = SEVERITIES.get(disposition, 4) if d is not None else 1
        shape = _CLASSES.get(step.method)
        out = []
        if shape is not None:
            uid, name, cat, cat_name, activity, caption = shape
            if step.method == "steps/toolCallRequest" and d is not None and d.evaluator == "human":
                activity, caption = 99, "Approve" if disposition == "allow" else "Refuse"
            record = r._common(uid, name, cat, cat_name, activity, caption, severity, PROFILES)
            record["metadata"]["event_code"] = step.method
            record["metadata"]["uid"] += f"/{step.method}"  # an event may be two steps
            record["message"] = _message(step)
            record["unmapped"]["acs"] = {"method": step.method, "attributes": {
                k: list(v) if isinstance(v, tuple) else v for k, v in a.items()}}
            _fill(record, uid, step, who)
            if d is not None:
                _control(record, disposition)
                if d.policy_id:
                    record["policy"] = {"uid": d.policy_id, "name": d.policy_id,
                                        "is_applied": True}
            out.append(record)
        if d is not None and disposition != "allow":
            out.append(_finding(step, r, severity, disposition, who))
        return out


def _fill(record: dict[str, Any], uid: int, step: Step, who: _Who) -> None:
    """What each class requires: the actor, the user, the process, the app, the endpoint."""
    a = step.attributes
    actor: dict[str, Any] = {"app_name": who.agent or "unknown",
                             "session": {"uid": str(a.get("acs.session.id") or
                                                    step.event.session_id)}}
    if uid == 3002:
        subagent = a.get("acs.subagent.session_id")
        user = str(subagent or a.get("acs.user.id") or who.user or who.agent or "unknown")
        record["user"] = {"uid": user, "type_id": 0 if subagent else 1,
                          "type": "Unknown" if subagent else "User"}
        record["session"] = {"uid": str(subagent or actor["session"]["uid"])}
        record["service"] = {"name": "tether"}
        record["status_id"], record["status"] = 1, "Success"
    elif uid == 1007:
        record["actor"] = actor
        record["device"] = {"type_id": 0, "type": "Unknown", "name": who.agent or "unknown"}
        record["process"] = {"name": str(a.get("gen_ai.tool.name") or "unknown"),
                             "uid": step.call or "-"}
        if step.method == "steps/toolCallResult":
            ok = a.get("acs.exit_status") == "success"
            record["status_id"], record["status"] = (1, "Success") if ok else (2, "Failure")
            if isinstance(a.get("acs.duration_ms"), int):
                record["duration"] = a["acs.duration_ms"]
    elif uid == 6005:
        record["actor"] = actor
        record["src_endpoint"] = {"name": who.agent or "unknown", "svc_name": "tether"}
    else:  # 6002 (its actor would need the host profile: the agent is the app)
        record["app"] = {"name": who.agent or "unknown", "vendor_name": "tether"}


def _control(record: dict[str, Any], disposition: str) -> None:
    action_id, action, disposition_id, name, _, _ = _CONTROLS.get(disposition, _CONTROLS["deny"])
    record.update(action_id=action_id, action=action, disposition_id=disposition_id,
                  disposition=name, is_alert=disposition == "deny")


def _finding(step: Step, r: _Record, severity: int, disposition: str,
             who: _Who) -> dict[str, Any]:
    """A decision that is not an allow, as ACS Trace wants it: a Detection Finding."""
    d = step.decision
    assert d is not None
    record = r._common(DETECTION_FINDING, "Detection Finding", 2, "Findings", 1, "Create",
                       severity, (*PROFILES, "incident"))  # (incident: the verdict)
    uid = f"{step.event.session_id}/{step.event.seq}/{step.method}"
    record["metadata"]["uid"] = uid + "/finding"
    record["metadata"]["event_code"] = "acs.decision"
    tool = str(step.attributes.get("gen_ai.tool.name") or step.method)
    record["finding_info"] = {
        "uid": uid, "title": f"{tool}: {disposition}" + (f" ({d.reasoning})" if d.reasoning
                                                          else ""),
        "types": ["acs.decision"],
        "analytic": {"name": d.by or d.evaluator, "type_id": 1, "type": "Rule"}}
    evidence: dict[str, Any] = {"name": tool, "uid": step.call or uid}
    if who.agent:
        evidence["actor"] = {"app_name": who.agent}
    if step.method == "steps/toolCallRequest":
        evidence["process"] = {"name": tool, "uid": step.call or "-"}
    record["evidences"] = [evidence]
    _, _, _, _, verdict_id, verdict = _CONTROLS.get(disposition, _CONTROLS["deny"])
    record["verdict_id"], record["verdict"] = verdict_id, verdict
    record["message"] = record["finding_info"]["title"]
    record["status_id"], record["status"] = 1, "New"
    record["unmapped"]["acs"] = {"method": step.method, "decision": disposition,
                                 "evaluator": d.evaluator, "by": d.by, "effect": d.effect}
    _control(record, disposition)
    if d.policy_id:
        record["policy"] = {"uid": d.policy_id, "name": d.policy_id, "is_applied": True}
    return record


def _message(step: Step) -> str:
    a, d = step.attributes, step.decision
    what = str(a.get("gen_ai.tool.name") or "")
    text = f"{step.method}" + (f" {what}" if what else "")
    if d is not None:
        text += f": {d.disposition}" + (f" by {d.by}" if d.by else "") + \
            (f" ({d.reasoning})" if d.reasoning else "")
    return text


def acs_ocsf_events(events: Iterable[Event], version: str | None = None) -> list[dict[str, Any]]:
    """ACS Trace's OCSF records of ``events`` (one or more sessions, each in journal order)."""
    view = AcsOCSFView(version)
    return [record for event in events for record in view.apply(event)]
