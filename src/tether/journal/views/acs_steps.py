"""A journal read as the steps of OWASP's Agent Control Standard (ACS v0.1.0), for its Trace.

Why: ACS's Trace pillar names an agent's telemetry after the steps an observed agent sends a
Guardian (``steps/sessionStart``, ``steps/toolCallRequest``, ...), each with required attributes,
and its decisions after the wire's dispositions (allow, deny, modify, ask, defer). A collector
or SIEM built for ACS reads that shape, not the GenAI conventions' and not tether's OCSF API
Activity. Two renderings follow the pillar's two mappings (``acs_spans``: OpenTelemetry spans;
``acs_ocsf``: OCSF classes); *which* step an event is, what its attributes are and what
disposition a decision is on the wire is decided here, once, so the two cannot disagree.

Decision: a pure fold, like the other views (no clock, no I/O), so a live sink and an export
give the same steps. tether's own events map onto steps: a session's start, resumption, pause
and end; the user's request; the agent's answer; every decision on a tool call (the policy's,
and a person's on a held one) and the result of a call that ran; a compaction. A Guardian's
journal (its ``session.start`` names the ACS session it serves) is mapped from the hooks it
journaled (``acs.hook``: the steps as the observed agent sent them, with the disposition the
Guardian answered), and the chokepoint's own tool events behind them are not steps a second
time. Attributes are metadata — names, ids, counts, statuses — never arguments, outputs or
message text: those stay in the journal. tether's effects become dispositions by the rule the
Guardian answers with (``tether.serve.acs.dispositions``): allow → allow; partial_allow, mask →
modify; deny, degrade → deny; require_approval → ask.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.types import Event
from tether.vocabulary import EventType

ACS_VERSION = "0.1.0"
#: a tether effect -> the ACS disposition it is on the wire
DISPOSITIONS = {"allow": "allow", "partial_allow": "modify", "mask": "modify", "deny": "deny",
                "degrade": "deny", "require_approval": "ask"}
#: a tool result's status -> ACS ``exit_status``; a call that did not run has no result step
EXIT_STATUSES = {"ok": "success", "error": "error", "timeout": "timeout"}
#: the attributes ACS Trace requires on each step's span (otel-mapping.json, v0.1.0)
REQUIRED: dict[str, tuple[str, ...]] = {
    "steps/sessionStart": ("acs.session.id",),
    "steps/agentTrigger": ("acs.agent.id", "acs.trigger.type"),
    "steps/userMessage": ("acs.session.id", "acs.content.types"),
    "steps/agentResponse": ("acs.session.id", "acs.agent.id"),
    "steps/toolCallRequest": ("gen_ai.tool.name", "acs.capability"),
    "steps/toolCallResult": ("gen_ai.tool.name", "acs.exit_status"),
    "steps/knowledgeRetrieval": ("acs.source.type", "acs.results.count"),
    "steps/memoryStore": ("acs.memory_store.name", "acs.operation"),
    "steps/memoryContextRetrieval": ("acs.memory_store.name", "acs.results.count"),
    "steps/sessionEnd": ("acs.session.reason",),
    "steps/turnStart": ("acs.turn.id", "acs.turn.triggered_by"),
    "steps/turnEnd": ("acs.turn.id", "acs.turn.outcome"),
    "steps/preCompact": ("acs.compact.entry_count", "acs.compact.triggered_by"),
    "steps/postCompact": ("acs.compact.entry_count",),
    "steps/subagentStart": ("acs.subagent.session_id", "acs.subagent.parent_session_id",
                            "acs.subagent.intent_derivation"),
    "steps/subagentStop": ("acs.subagent.session_id", "acs.subagent.outcome",
                           "acs.subagent.final_chain_hash"),
    "steps/skillRegister": ("acs.skill.id", "acs.skill.digest.algorithm",
                            "acs.skill.digest.value", "acs.skill.declared_capabilities"),
    "steps/skillLoad": ("acs.skill.id", "acs.skill.digest.algorithm", "acs.skill.digest.value",
                        "acs.skill.load_trigger", "acs.skill.load_path"),
    "steps/skillUnload": ("acs.skill.id", "acs.skill.reason"),
    "agbom/snapshot": ("acs.agbom.format", "acs.agbom.component_count"),
    "agbom/changed": ("acs.agbom.format", "acs.agbom.change_reason"),
}
#: optional attributes a hook's payload may carry (read like the required ones)
OPTIONAL: dict[str, tuple[str, ...]] = {
    "steps/sessionStart": ("acs.tenant_id", "acs.user.id", "acs.policy_mode"),
    "steps/toolCallRequest": ("acs.tool.provider", "acs.tool.version", "acs.operation"),
    "steps/toolCallResult": ("acs.duration_ms", "acs.request_id_ref"),
    "steps/turnStart": ("acs.turn.parent_id",),
    "steps/turnEnd": ("acs.turn.step_count",),
    "steps/preCompact": ("acs.compact.estimated_input_tokens",),
}
TOOL_METHODS = frozenset({"steps/toolCallRequest", "protocols/MCP/tools/call"})
MISSING = "tether.acs.missing"  # required attributes a hook's payload did not carry
GUARDIAN_CONTEXT = "acs_session"  # the session.start context key a Guardian's gateway sets


@dataclass(frozen=True, slots=True)
class AcsDecision:
    """A decision as ACS Trace records it (``acs.decision`` event / Detection Finding)."""

    disposition: str  # allow | deny | modify | ask | defer
    evaluator: str  # "deterministic" (a policy, the Guardian's checks) or "human"
    reasoning: str = ""
    effect: str = ""  # tether's effect, when tether's policy decided
    policy_id: str = ""
    by: str = ""  # who decided: "policy <id>", the person, "guardian"


@dataclass(frozen=True, slots=True)
class Step:
    """One ACS step an event stands for. ``call`` pairs a tool call's request, decisions and
    result (tether's call id, or the request id the hooks share)."""

    method: str
    event: Event
    attributes: Mapping[str, Any]
    decision: AcsDecision | None = None
    call: str = ""


@dataclass(slots=True)
class _Session:
    agent: str = ""
    acs_session: str = ""  # the ACS session a Guardian's journal serves ("" : tether's own)
    calls: dict[str, tuple[str, float]] = field(default_factory=dict)  # call -> tool, since


class AcsSteps:
    """The fold: ``apply`` returns the steps an event stands for (none for most events), for
    the events of one or more sessions, each in journal order."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def acs_session(self, session_id: str) -> str:
        """The ACS session a journal session is (a Guardian's names it; else its own id)."""
        s = self._sessions.get(session_id)
        return s.acs_session if s is not None and s.acs_session else session_id

    def agent(self, session_id: str) -> str:
        """The agent a session is (a Guardian's: the observed agent's id)."""
        s = self._sessions.get(session_id)
        return s.agent if s is not None else ""

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def apply(self, event: Event) -> list[Step]:
        s = self._sessions.setdefault(event.session_id, _Session())
        if s.acs_session:
            return _hook(s, event) if event.type == EventType.ACS_HOOK else []
        handler = _NATIVE.get(event.type)
        return [] if handler is None else handler(s, event)


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def session_of(s: _Session, event: Event) -> str:
    return s.acs_session or event.session_id


def _start(s: _Session, event: Event) -> list[Step]:
    d = event.data
    context = _map(d.get("context"))
    s.agent = str(d.get("agent") or "")
    if isinstance(context.get(GUARDIAN_CONTEXT), str):  # a Guardian: its hooks are the steps
        s.acs_session = str(context[GUARDIAN_CONTEXT])
        s.agent = str(context.get("client") or s.agent)
        return []
    subject = _map(d.get("subject"))
    a: dict[str, Any] = {"acs.session.id": event.session_id, "acs.agent.id": s.agent}
    if subject.get("user_id"):
        a["acs.user.id"] = str(subject["user_id"])
    if subject.get("tenant_id"):
        a["acs.tenant_id"] = str(subject["tenant_id"])
    if event.type == EventType.SESSION_RESUMED:
        a["tether.session.resumed"] = True
    steps = [Step("steps/sessionStart", event, a)]
    if event.type == EventType.SESSION_START and d.get("task") and s.agent != "gateway":
        steps.append(Step("steps/userMessage", event, {"acs.session.id": event.session_id,
                                                        "acs.content.types": ("text",)}))
    return steps


def _end(s: _Session, event: Event) -> list[Step]:
    a: dict[str, Any] = {"acs.session.reason": str(event.data.get("reason") or "unknown")}
    if event.type == EventType.SESSION_PAUSED:
        a["tether.session.paused"] = True
    s.calls.clear()
    return [Step("steps/sessionEnd", event, a)]


def _answer(s: _Session, event: Event) -> list[Step]:
    response = event.data.get("response")
    if not isinstance(response, Mapping) or response.get("tool_calls"):
        return []  # a turn that calls tools is not a message to the user
    return [Step("steps/agentResponse", event,
                 {"acs.session.id": event.session_id, "acs.agent.id": s.agent})]


def _decision(s: _Session, event: Event) -> list[Step]:
    d = event.data
    tool, call = str(d.get("tool") or ""), str(d.get("call_id") or "")
    decision = _map(d.get("decision"))
    effect, policy = str(decision.get("effect") or ""), str(decision.get("policy_id") or "")
    s.calls[call] = (tool, event.timestamp)
    a: dict[str, Any] = {"gen_ai.tool.name": tool, "acs.capability": tool,
                         "acs.operation": "execute", "gen_ai.tool.call.id": call}
    provenance = d.get("provenance")
    if isinstance(provenance, Mapping) and provenance.get("origin"):
        a["acs.provenance.origin"] = str(provenance["origin"])
    return [Step("steps/toolCallRequest", event, a, AcsDecision(
        DISPOSITIONS.get(effect, "deny"), "deterministic", str(decision.get("reason") or ""),
        effect, policy, f"policy {policy}"), call)]


def _approval(s: _Session, event: Event) -> list[Step]:
    """A person's decision on a held call: the same call's request step, decided again."""
    d = event.data
    call = str(d.get("call_id") or "")
    tool = str(d.get("tool") or s.calls.get(call, ("", 0.0))[0])
    s.calls[call] = (tool, event.timestamp)
    granted = event.type == EventType.APPROVAL_GRANTED
    why = str(d.get("note") or "") if granted else str(d.get("why") or "")
    a = {"gen_ai.tool.name": tool, "acs.capability": tool, "gen_ai.tool.call.id": call,
         "tether.approval.id": str(d.get("approval_id") or "")}
    return [Step("steps/toolCallRequest", event, a, AcsDecision(
        "allow" if granted else "deny", "human", why, "", "", str(d.get("approver") or "")),
        call)]


def _started(s: _Session, event: Event) -> list[Step]:
    call = str(event.data.get("call_id") or "")
    s.calls[call] = (str(event.data.get("tool") or ""), event.timestamp)
    return []


def _result(s: _Session, event: Event) -> list[Step]:
    d = event.data
    exit_status = EXIT_STATUSES.get(str(d.get("status") or ""))
    call = str(d.get("call_id") or "")
    tool, since = s.calls.pop(call, (str(d.get("tool") or ""), event.timestamp))
    if exit_status is None:
        return []  # denied, rejected, skipped, simulated: nothing ran
    return [Step("steps/toolCallResult", event, {
        "gen_ai.tool.name": str(d.get("tool") or tool), "acs.exit_status": exit_status,
        "acs.request_id_ref": call, "acs.duration_ms": round((event.timestamp - since) * 1000)},
        call=call)]


def _compacted(s: _Session, event: Event) -> list[Step]:
    d = event.data
    turns, replaced = d.get("turns"), d.get("replaced")
    before: dict[str, Any] = {"acs.compact.entry_count": turns if isinstance(turns, int) else 0,
                              "acs.compact.triggered_by": str(d.get("reason") or "window")}
    if isinstance(d.get("tokens_before"), int):
        before["acs.compact.estimated_input_tokens"] = d["tokens_before"]
    after = {"acs.compact.entry_count": replaced if isinstance(replaced, int) else 0,
             "tether.compact.strategy": str(d.get("strategy") or "")}
    return [Step("steps/preCompact", event, before), Step("steps/postCompact", event, after)]


_NATIVE: dict[str, Callable[[_Session, Event], list[Step]]] = {
    EventType.SESSION_START: _start, EventType.SESSION_RESUMED: _start,
    EventType.SESSION_END: _end, EventType.SESSION_PAUSED: _end,
    EventType.MODEL_RESPONSE: _answer, EventType.TOOL_DECISION: _decision,
    EventType.APPROVAL_GRANTED: _approval, EventType.APPROVAL_REFUSED: _approval,
    EventType.TOOL_STARTED: _started, EventType.EFFECT_RERUN: _started,
    EventType.TOOL_RESULT: _result, EventType.CONTEXT_COMPACTED: _compacted,
}


# -- a Guardian's hooks -------------------------------------------------------------------------

def _hook(s: _Session, event: Event) -> list[Step]:
    """An ``acs.hook``: the step the observed agent sent, with the Guardian's answer (a
    refusal — replay, staleness, outside the Intent — is a ``deny`` by the Guardian)."""
    record = event.data
    method = str(record.get("method") or "")
    if method == "protocols/MCP/tools/call":
        method = "steps/toolCallRequest"
    if method not in REQUIRED:
        return []  # the handshake and what ACS Trace does not map
    payload = _map(record.get("payload"))
    a: dict[str, Any] = {"acs.session.id": session_of(s, event),
                         "acs.request_id": str(record.get("request_id") or "")}
    tool = payload.get("tool")
    if method in ("steps/toolCallRequest", "steps/toolCallResult"):
        name = record.get("tool") or (tool.get("name") if isinstance(tool, Mapping) else None) \
            or payload.get("tool_name") or ""
        a["gen_ai.tool.name"] = str(name)
        if isinstance(tool, Mapping):
            for key in ("provider", "version"):
                if isinstance(tool.get(key), str):
                    a[f"acs.tool.{key}"] = tool[key]
    if method == "steps/toolCallRequest" and not isinstance(payload.get("capability"), str):
        a["acs.capability"] = a["gen_ai.tool.name"]
    if method in ("steps/agentResponse", "steps/agentTrigger"):
        a.setdefault("acs.agent.id", s.agent)
    for name in REQUIRED[method] + OPTIONAL.get(method, ()):
        if name not in a:
            value = _read(payload, name)
            if value is not None:
                a[name] = value
    content = payload.get("content")
    if method == "steps/userMessage" and "acs.content.types" not in a:
        a["acs.content.types"] = ("text",) if isinstance(content, str) else tuple(sorted({
            str(part["type"]) for part in content if isinstance(part, Mapping)
            and isinstance(part.get("type"), str)})) if isinstance(content, list) else ()
        if not a["acs.content.types"]:
            del a["acs.content.types"]
    missing = [name for name in REQUIRED[method] if name not in a]
    if missing:
        a[MISSING] = tuple(missing)
    refused = record.get("refused")
    decision = None
    if isinstance(refused, Mapping):
        decision = AcsDecision("deny", "deterministic", str(refused.get("reason") or ""),
                               by="guardian")
        a["acs.refused.code"] = refused.get("code")
    elif method == "steps/toolCallRequest" or record.get("decision") not in (None, "allow"):
        decision = AcsDecision(str(record.get("decision") or "deny"), "deterministic",
                               str(record.get("reasoning") or ""), by="guardian")
    return [Step(method, event, a, decision, str(record.get("request_id") or ""))]


def _read(payload: Mapping[str, Any], name: str) -> Any:
    """An ``acs.*`` attribute's value in a hook's payload, by its name: ``acs.turn.id`` is
    ``turn.id``, ``turn_id`` or ``id``; a list stands for its length where a count is asked
    for. Only scalars and lists of strings are attributes (nothing nested is copied)."""
    parts = name.removeprefix("acs.").split(".")
    candidates: list[Any] = []
    node: Any = payload
    for part in parts:
        node = node.get(part) if isinstance(node, Mapping) else None
    candidates.append(node)
    candidates += [payload.get("_".join(parts)), payload.get(parts[-1])]
    if parts[-1] == "count":
        candidates.append(payload.get(parts[0]))  # "results": [...] counts its items
    for value in candidates:
        if isinstance(value, list) and parts[-1] == "count":
            return len(value)
        if isinstance(value, (bool, str, int, float)):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    return None
