"""Timeline lines for tool calls: each decision (with what the policy read: origins, private
data), approvals asked, used and refused, a side effect started, credentials issued, results
(retrieved passages shown one by one), and calls settled or run again.

Why a module per event family: see ``journal.views.session_lines``. Decision: each renderer is
a pure function of the event's stored data; ``TOOL_RENDER`` maps event types to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tether.journal.payloads import (
    ApprovalData,
    CredentialIssuedData,
    EffectSettledData,
    ToolDecisionData,
    ToolResultData,
    ToolStartedData,
)
from tether.journal.views.text import Renderer, call_text, excerpt, when
from tether.vocabulary import EventType


def _decision(d: ToolDecisionData) -> list[str]:
    dec = d.get("decision") or {}
    shape = ""
    if dec.get("fallback"):
        shape = f" to {dec['fallback']}"
    elif dec.get("fields"):
        shape = f" [{', '.join(dec['fields'])}]"
    lines = [f"decision {d.get('call_id')} {call_text(d.get('tool', '?'), d.get('arguments'), 60)}"
             f": {dec.get('effect')}{shape} by {dec.get('policy_id')}"
             + (f": {excerpt(dec['reason'], 80)}" if dec.get("reason") else "")]
    origins = d.get("provenance") or {}  # what the policy decided on, when it read them
    if origins:
        lines.append("  origins: " + "; ".join(f"{name} from {', '.join(sorted(found))}"
                                             for name, found in sorted(origins.items())))
    labels = d.get("labels") or {}
    if labels:
        lines.append("  private data: " + "; ".join(f"{name} carries {', '.join(kinds)}"
                                                  for name, kinds in sorted(labels.items())))
    return lines


def _approval_requested(d: ApprovalData) -> list[str]:
    return [f"approval requested {d.get('approval_id')} for {d.get('call_id')} "
            f"{call_text(d.get('tool', '?'), d.get('arguments'), 60)}; expires "
            f"{when(d['expires_at']) if isinstance(d.get('expires_at'), int | float) else '?'}"]


def _approval_granted(d: ApprovalData) -> list[str]:
    note = f": {excerpt(d['note'], 60)}" if d.get("note") else ""
    how = f" ({d['approver_auth']})" if d.get("approver_auth") else ""
    glass = " [break-glass]" if d.get("break_glass") else ""
    return [f"approval {d.get('approval_id')} used: approved by {d.get('approver')}{how}{glass}"
            f"{note}; {d.get('call_id')} runs"]


def _approval_refused(d: ApprovalData) -> list[str]:
    return [f"approval {d.get('approval_id')} refused for {d.get('call_id')}: "
            f"{excerpt(d.get('why', ''), 80)}"]


def _started(d: ToolStartedData) -> list[str]:
    return [f"started {d.get('call_id')} {d.get('tool')} (side effect; durable before it ran)"]


def _result(d: ToolResultData) -> list[str]:
    untrusted = " (untrusted output: taints the session)" if d.get("untrusted") else ""
    if d.get("asked_by"):  # tether.runtime.provenance.inherited
        untrusted = (f" (untrusted: only untrusted text gave its {', '.join(d['asked_by'])}; "
                     "taints the session)")
    passages = _passages(d.get("content")) if d.get("status") == "ok" else []
    if passages:  # retrieved text (tether.knowledge.retrieval): each passage and its document
        trust = "untrusted" if d.get("untrusted") else "trusted"
        docs = ", ".join(str(p["doc_id"]) for p in passages)
        return [f"result {d.get('call_id')} {d.get('tool')}: {d.get('status')}{untrusted}: "
                f"{len(passages)} passage(s) retrieved from {excerpt(docs, 80)}",
                *(f"  {trust} passage {p['doc_id']} ({p.get('source') or 'no source'}, score "
                  f"{p.get('score')}): \"{excerpt(p.get('text', ''), 80)}\"" for p in passages)]
    return [f"result {d.get('call_id')} {d.get('tool')}: {d.get('status')}{untrusted}: "
            f"\"{excerpt(d.get('content', ''), 80)}\""]


def _passages(content: object) -> list[Mapping[str, Any]]:
    """The passages of a retrieval result: a JSON list of objects that each cite a doc_id."""
    if not isinstance(content, str) or not content.startswith("[{"):
        return []
    try:
        found = json.loads(content)
    except ValueError:
        return []
    if all(isinstance(p, dict) and isinstance(p.get("doc_id"), str) for p in found):
        return list(found)
    return []


def _credential(d: CredentialIssuedData) -> list[str]:
    return [f"credential {d.get('token_id')} issued to {d.get('call_id')} {d.get('tool')} "
            f"(ttl {d.get('ttl')} s, {d.get('max_uses')} use(s))"]


def _rerun(d: ToolStartedData) -> list[str]:
    return [f"runs {d.get('call_id')} {d.get('tool')} again: {excerpt(d.get('why', ''), 80)}"]


def _settled(d: EffectSettledData) -> list[str]:
    note = f": {excerpt(d['note'], 60)}" if d.get("note") else ""
    return [f"settled {d.get('call_id')}: {d.get('action')} by {d.get('operator')}{note}"]


TOOL_RENDER: dict[str, Renderer] = {
    EventType.TOOL_DECISION: _decision,
    EventType.APPROVAL_REQUESTED: _approval_requested,
    EventType.APPROVAL_GRANTED: _approval_granted,
    EventType.APPROVAL_REFUSED: _approval_refused,
    EventType.TOOL_STARTED: _started,
    EventType.CREDENTIAL_ISSUED: _credential,
    EventType.TOOL_RESULT: _result,
    EventType.EFFECT_SETTLED: _settled,
    EventType.EFFECT_RERUN: _rerun,
}
