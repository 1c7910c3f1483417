"""SIEM events: the journal's security-relevant events as OCSF 1.8.0 records.

Why: a security team reads a SIEM, not tether's journal. OCSF (the Open Cybersecurity Schema
Framework) is the shape SIEMs ingest without a custom parser, so each decision, approval,
denial, budget overrun, credential issuance and policy load becomes one OCSF **API Activity**
(class 6003) with the ``security_control`` profile (``action_id`` / ``disposition_id`` /
``policy``) and the ``ai_operation`` profile (``ai_model``, ``message_context``). A broken hash
chain becomes a **Detection Finding** (class 2004): it is not an activity anybody performed but
something a control (chain verification) detected, which is what that class is for
(``ocsf_findings``, with the MCP pin records: both come from outside a session's events).

Decision: this is a pure fold over a session's events — no clock, no randomness, no I/O — so a
live subscriber (``tether.observe.SIEMSink``) and ``tether audit export --format ocsf`` produce
the same records from the same events. ``metadata.uid`` is ``<session id>/<seq>``; ``time`` is
the event's own timestamp. OCSF 1.8.0 has no attribute for a record's integrity (the
``record_integrity`` profile arrives in 1.9), so the journal's ``seq`` goes to
``metadata.sequence`` and its hash chain (``hash``, ``prev_hash``, SHA-256 over canonical JSON)
to ``unmapped.journal``. Values are those the journal holds — masked arguments stay masked and
secrets were scrubbed before sealing; ``redact`` masks further keys on top. A session resumed in
another process starts its fold at ``session.resumed``, which names the segment's agent, model
and user; the policy loaded at the start (its recipe fingerprint) is known only from the
earlier events, so a sink given the store primes its fold with them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from tether.journal.payloads import (
    ApprovalData,
    CredentialIssuedData,
    EffectSettledData,
    ModelOverrunData,
    SessionEndData,
    SessionResumedData,
    SessionStartData,
    ToolDecisionData,
)
from tether.types import Event
from tether.vocabulary import EventType

OCSF_VERSION = "1.8.0"
PROFILES = ("security_control", "ai_operation")
MASKED = "[masked]"

API_ACTIVITY, DETECTION_FINDING = 6003, 2004
_ACTIVITIES = {1: "Create", 2: "Read", 3: "Update", 4: "Delete", 0: "Unknown", 99: "Other"}
_TYPES = {0: "Unknown", 99: "Other"}  # type_name's caption where activity_name is our own
_SEVERITIES = {0: "Unknown", 1: "Informational", 2: "Low", 3: "Medium", 4: "High",
               5: "Critical", 6: "Fatal", 99: "Other"}
_ACTIONS = {0: "Unknown", 1: "Allowed", 2: "Denied", 3: "Observed", 4: "Modified", 99: "Other"}
_DISPOSITIONS = {1: "Allowed", 2: "Blocked", 7: "Custom Action", 8: "Approved", 14: "Delayed",
                 15: "Detected", 17: "Logged", 25: "Rejected"}
#: a policy's effect -> (action_id, action name when "Other", disposition_id, severity_id)
EFFECTS: dict[str, tuple[int, str, int, int]] = {
    "allow": (1, "", 1, 1), "partial_allow": (1, "", 1, 1), "mask": (1, "", 1, 1),
    "degrade": (4, "", 7, 1), "deny": (2, "", 2, 3), "require_approval": (99, "Held", 14, 2),
}
#: stop reasons that mean a control stopped the run (a budget, the loop detector)
CONTROL_STOPS = frozenset({"step_budget", "token_budget", "cost_budget", "time_budget",
                           "tool_call_budget", "loop_detected"})
_PROVIDERS = (("claude", "anthropic"), ("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
              ("o4", "openai"), ("chatgpt", "openai"), ("gemini", "google"),
              ("scripted", "tether"))


def product_version() -> str:
    from tether._version import __version__

    return __version__


def provider_of(model: str) -> str:
    """The model's provider as far as its name tells (OCSF requires one), for journals whose
    ``session.start`` does not name it; else "unknown"."""
    head, sep, _ = model.partition(":")
    if sep and head.isidentifier():
        return head
    lowered = model.lower()
    return next((p for prefix, p in _PROVIDERS if lowered.startswith(prefix)), "unknown")


@dataclass(slots=True)
class _Context:
    """What a session said at its start, and what later events refer back to."""

    agent: str = ""
    model: str = ""
    provider: str = ""  # as session.start journaled it; older journals do not say
    user_id: str | None = None
    tenant_id: str | None = None
    roles: list[str] = field(default_factory=list)
    resources: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # tool -> metadata
    calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id -> tool, policy


class OCSFView:
    """A fold over the events of one or more sessions, each in journal order: ``apply`` returns
    the OCSF records an event stands for (none for most events). Per session it keeps what the
    session's start said, its calls' tools and policies (an approval or a settlement after a
    pause refers back to them) and the current run's tool metadata (cleared at a pause: the
    next run records it again)."""

    def __init__(self, version: str | None = None) -> None:
        self._version = product_version() if version is None else version
        self._sessions: dict[str, _Context] = {}

    def forget(self, session_id: str) -> None:
        """Drop a session's context (its end or pause: a later segment starts afresh)."""
        self._sessions.pop(session_id, None)

    def apply(self, event: Event) -> list[dict[str, Any]]:
        ctx = self._sessions.setdefault(event.session_id, _Context())
        build = _BUILDERS.get(event.type)
        records = [] if build is None else build(_Record(self._version, ctx, event))
        if event.type == EventType.SESSION_PAUSED:  # the next run records its tools' metadata again
            ctx.resources.clear()
        return records


def ocsf_events(events: Iterable[Event], version: str | None = None) -> list[dict[str, Any]]:
    """The OCSF records of ``events`` (one or more sessions, each in journal order)."""
    view = OCSFView(version)
    return [record for event in events for record in view.apply(event)]


def record_json(record: Mapping[str, Any]) -> str:
    """One OCSF record as the single line of JSON the sink and the export both write."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def redact(value: Any, keys: Collection[str]) -> Any:
    """``value`` with the value of every key named in ``keys``, at any depth, ``[masked]``."""
    if not keys:
        return value
    if isinstance(value, Mapping):
        return {k: MASKED if k in keys else redact(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, keys) for v in value]
    return value


# -- building one record ------------------------------------------------------------------------

@dataclass(slots=True)
class _Record:
    version: str
    ctx: _Context
    event: Event

    @property
    def data(self) -> Mapping[str, Any]:
        return self.event.data

    def api_activity(self, activity_id: int, operation: str, severity_id: int, *,
                     activity_name: str = "", user: Mapping[str, Any] | None = None
                     ) -> dict[str, Any]:
        name = activity_name or _ACTIVITIES[activity_id]
        record = self._common(API_ACTIVITY, "API Activity", 6, "Application Activity",
                              activity_id, name, severity_id)
        actor: dict[str, Any] = {"session": {"uid": self.event.session_id}}
        if self.ctx.agent:
            actor["app_name"] = self.ctx.agent
        if user is None and self.ctx.user_id is not None:
            user = {"uid": self.ctx.user_id, "type_id": 1, "type": "User"}
            if self.ctx.roles:
                user["groups"] = [{"name": role} for role in self.ctx.roles]
        if user is not None:
            actor["user"] = dict(user)
        record["actor"] = actor
        record["api"] = {"operation": operation}
        record["src_endpoint"] = {"name": self.ctx.agent or "tether", "svc_name": "tether"}
        if self.ctx.model:
            record["ai_model"] = {"name": self.ctx.model,
                                  "ai_provider": self.ctx.provider or provider_of(
                                      self.ctx.model)}
        return record

    def _common(self, class_uid: int, class_name: str, category_uid: int, category_name: str,
                activity_id: int, activity_name: str, severity_id: int,
                profiles: tuple[str, ...] = PROFILES) -> dict[str, Any]:
        event = self.event
        metadata: dict[str, Any] = {
            "version": OCSF_VERSION,
            "product": {"name": "tether", "vendor_name": "tether", "version": self.version},
            "profiles": list(profiles), "uid": f"{event.session_id}/{event.seq}",
            "correlation_uid": event.session_id, "sequence": event.seq,
            "event_code": event.type, "log_name": "journal", "log_provider": "tether"}
        if self.ctx.tenant_id is not None:
            metadata["tenant_uid"] = self.ctx.tenant_id
        return {
            "class_uid": class_uid, "class_name": class_name, "category_uid": category_uid,
            "category_name": category_name, "activity_id": activity_id,
            "activity_name": activity_name, "type_uid": class_uid * 100 + activity_id,
            "type_name": f"{class_name}: {_TYPES.get(activity_id, activity_name)}",
            "severity_id": severity_id,
            "severity": _SEVERITIES[severity_id], "time": round(event.timestamp * 1000),
            "metadata": metadata,
            "unmapped": {"journal": {"seq": event.seq, "type": event.type,
                                     "hash": event.hash, "prev_hash": event.prev_hash}},
        }


def _control(record: dict[str, Any], action_id: int, disposition_id: int, *,
             action: str = "", alert: bool = False) -> dict[str, Any]:
    record["action_id"] = action_id
    record["action"] = action or _ACTIONS[action_id]
    record["disposition_id"] = disposition_id
    record["disposition"] = _DISPOSITIONS[disposition_id]
    record["is_alert"] = alert
    return record


def _policy(policy_id: str, **more: Any) -> dict[str, Any]:
    return {"uid": policy_id, "name": policy_id, "is_applied": True, **more} if policy_id \
        else {"name": "unnamed", "is_applied": True, **more}


def _call(record: dict[str, Any], call_id: str, tool: str,
          arguments: Any = None) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": call_id or "-"}
    if arguments is not None:
        request["data"] = {"arguments": arguments}
    record["api"]["request"] = request
    record["message_context"] = {"uid": call_id or "-", "name": tool, "ai_role_id": 2,
                                 "ai_role": "Assistant"}
    return record


def _status(record: dict[str, Any], ok: bool, detail: str) -> dict[str, Any]:
    record["status_id"] = 1 if ok else 2
    record["status"] = "Success" if ok else "Failure"
    if detail:
        record["status_detail"] = detail
    return record


def _start(r: _Record) -> list[dict[str, Any]]:
    """``session.start``: the recipe (agent, tools, policy) is loaded for this session."""
    d, ctx = cast(SessionStartData, r.data), r.ctx
    subject = d.get("subject") or {}
    ctx.agent, ctx.model = str(d.get("agent") or ""), str(d.get("model") or "")
    ctx.provider = str(d.get("provider") or "")
    ctx.user_id, ctx.tenant_id = subject.get("user_id"), subject.get("tenant_id")
    ctx.roles = [str(role) for role in subject.get("roles") or []]
    record = r.api_activity(1, EventType.SESSION_START, 1)
    policy = _policy(str(d.get("recipe") or ""), type="tether recipe",
                     data={"agent": ctx.agent, "tools": d.get("tools") or [],
                           "budget": d.get("budget") or {}})
    record["policy"] = policy
    record["message"] = f"policy loaded: recipe {policy.get('uid', '?')} of agent " \
                        f"{ctx.agent or '?'} with tools {', '.join(d.get('tools') or []) or '-'}"
    return [_status(_control(record, 3, 17), True, "")]


def _decision(r: _Record) -> list[dict[str, Any]]:
    d, ctx = cast(ToolDecisionData, r.data), r.ctx
    tool, call_id = str(d.get("tool") or ""), str(d.get("call_id") or "")
    decision = d.get("decision") or {}
    effect = str(decision.get("effect") or "")
    policy_id, reason = str(decision.get("policy_id") or ""), str(decision.get("reason") or "")
    if d.get("resource"):
        ctx.resources[tool] = d["resource"]
    ctx.calls[call_id] = (tool, policy_id)
    action_id, action, disposition_id, severity_id = EFFECTS.get(effect, (0, "", 7, 2))
    resource = ctx.resources.get(tool) or {}
    activity = 2 if resource.get("side_effect") is False else 99
    record = r.api_activity(activity, tool, severity_id,
                            activity_name="" if activity != 99 else "Invoke")
    _call(record, call_id, tool, d.get("arguments"))
    record["policy"] = _policy(policy_id)
    details: dict[str, Any] = {"name": tool, "type": "tool"}
    if resource.get("tags"):
        details["labels"] = [str(t) for t in resource["tags"]]
    if resource.get("risk"):
        details["criticality"] = str(resource["risk"])
    record["resources"] = [details]
    record["message"] = f"{tool}: {effect}" + (f" ({reason})" if reason else "")
    record["unmapped"]["decision"] = dict(decision)
    if d.get("context") is not None:
        record["unmapped"]["context"] = d["context"]
    _control(record, action_id, disposition_id, action=action, alert=effect == "deny")
    return [_status(record, action_id in (1, 4, 99), reason)]


def _approval(granted: bool) -> Any:
    def build(r: _Record) -> list[dict[str, Any]]:
        d = cast(ApprovalData, r.data)
        call_id = str(d.get("call_id") or "")
        tool, policy_id = r.ctx.calls.get(call_id, (str(d.get("tool") or ""), ""))
        tool = str(d.get("tool") or tool)
        approver = d.get("approver")
        user = None if not approver else {"name": str(approver), "type_id": 1, "type": "User"}
        record = r.api_activity(99, tool, 1 if granted else 3, activity_name="Approve",
                                user=user)
        _call(record, call_id, tool)
        record["policy"] = _policy(policy_id)
        why = str(d.get("note") or "") if granted else str(d.get("why") or "")
        record["message"] = (f"{tool}: approval {d.get('approval_id')} "
                             f"{'granted' if granted else 'refused'}"
                             + (f" by {approver}" if approver else "")
                             + (f": {why}" if why else ""))
        record["unmapped"]["approval_id"] = d.get("approval_id")
        _control(record, 1 if granted else 2, 8 if granted else 25, alert=not granted)
        return [_status(record, granted, why)]
    return build


def _credential(r: _Record) -> list[dict[str, Any]]:
    """``credential.issued``: a scoped token (its id only, never its value) for one call."""
    d = cast(CredentialIssuedData, r.data)
    tool, call_id = str(d.get("tool") or ""), str(d.get("call_id") or "")
    record = _call(r.api_activity(1, tool, 1), call_id, tool)
    record["resources"] = [{"uid": str(d.get("token_id") or ""), "type": "credential",
                            "name": f"scoped token for {tool}"}]
    record["message"] = (f"{tool}: scoped credential {d.get('token_id')} issued, valid for "
                         f"{d.get('ttl')} s and {d.get('max_uses')} use(s)")
    record["unmapped"]["credential"] = {k: d.get(k) for k in ("token_id", "ttl", "max_uses")}
    return [_status(_control(record, 1, 1), True, "")]


def _overrun(r: _Record) -> list[dict[str, Any]]:
    """``model.overrun``: the provider exceeded what was reserved; the run was stopped."""
    d = cast(ModelOverrunData, r.data)
    reported = d.get("reported") or {}
    record = r.api_activity(99, "chat", 4, activity_name="Chat")
    inp, out = reported.get("input_tokens"), reported.get("output_tokens")
    context: dict[str, Any] = {"uid": f"step-{d.get('step')}", "name": EventType.MODEL_RESPONSE,
                               "ai_role_id": 2, "ai_role": "Assistant"}
    if isinstance(inp, int) and isinstance(out, int):
        context.update(prompt_tokens=inp, completion_tokens=out, total_tokens=inp + out)
    record["message_context"] = context
    record["policy"] = _policy(f"budget.{d.get('limit')}", type="budget")
    record["message"] = f"budget overrun ({d.get('limit')}): {d.get('detail')}"
    record["unmapped"]["overrun"] = {k: d.get(k) for k in ("limit", "reserved", "reported")}
    return [_status(_control(record, 2, 2, alert=True), False, str(d.get("detail") or ""))]


def _stop(r: _Record) -> list[dict[str, Any]]:
    """``session.end`` / ``session.paused`` for a budget or the loop detector: a control
    stopped the run. Other ends are not security events."""
    reason = str(cast(SessionEndData, r.data).get("reason") or "")
    if reason not in CONTROL_STOPS:
        return []
    record = r.api_activity(99, "session.stop", 2, activity_name="Stop")
    record["policy"] = _policy(f"budget.{reason}" if reason.endswith("budget") else reason,
                               type="budget" if reason.endswith("budget") else "loop")
    detail = str(cast(SessionEndData, r.data).get("detail") or "")
    record["message"] = f"session stopped: {reason}" + (f" ({detail})" if detail else "")
    return [_status(_control(record, 2, 2), False, detail)]


def _settled(r: _Record) -> list[dict[str, Any]]:
    """``effect.settled``: an operator decided to retry or skip an interrupted effect."""
    d = cast(EffectSettledData, r.data)
    call_id, retry = str(d.get("call_id") or ""), d.get("action") == "retry"
    tool = r.ctx.calls.get(call_id, ("", ""))[0] or "unknown"
    user = {"name": str(d.get("operator") or "operator"), "type_id": 1, "type": "User"}
    record = _call(r.api_activity(99, tool, 2, activity_name="Settle", user=user), call_id, tool)
    record["message"] = f"{tool}: interrupted call {call_id} settled: {d.get('action')}"
    return [_status(_control(record, 1 if retry else 2, 8 if retry else 25), True,
                    str(d.get("note") or ""))]


def _resumed(r: _Record) -> list[dict[str, Any]]:
    """``session.resumed``: who runs this segment (journals since it says so), so a sink that
    first sees the session here knows its agent, model and user; it makes no record."""
    d, ctx = cast(SessionResumedData, r.data), r.ctx
    if "agent" in d:
        ctx.agent, ctx.model = str(d.get("agent") or ""), str(d.get("model") or "")
        ctx.provider = str(d.get("provider") or "")
    subject = d.get("subject")
    if isinstance(subject, Mapping):
        ctx.user_id, ctx.tenant_id = subject.get("user_id"), subject.get("tenant_id")
        ctx.roles = [str(role) for role in subject.get("roles") or []]
    return []


_BUILDERS: dict[str, Any] = {
    EventType.SESSION_START: _start, EventType.SESSION_RESUMED: _resumed,
    EventType.TOOL_DECISION: _decision,
    EventType.APPROVAL_GRANTED: _approval(True), EventType.APPROVAL_REFUSED: _approval(False),
    EventType.CREDENTIAL_ISSUED: _credential, EventType.MODEL_OVERRUN: _overrun,
    EventType.SESSION_END: _stop, EventType.SESSION_PAUSED: _stop,
    EventType.EFFECT_SETTLED: _settled,
}
