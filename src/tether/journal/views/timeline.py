"""A session's journal as a timeline a person can read: the AUDIT view behind `tether audit show`.

Why: the journal is complete but written for machines — a model request holds whole messages, a
decision holds the resource and spend the policy saw. Someone asking "what did this agent do, and
who let it?" needs one line per thing that happened: each model turn with its text and the calls
it asked for, each decision with its effect, policy id and reason, each result with its status,
each approval, pause and resume, and what the session spent.

Decision: rendering is a pure function of the stored events (no store, no agent, no policy), so
it works on any journal — live, restored or exported — and never needs the code that wrote it.
Each line starts with the event's seq, so a line can be matched to ``tether audit verify``'s
findings and to the raw export. Unknown event types are still shown, briefly, never dropped.
Long text is cut to an excerpt; arguments appear as the journal holds them (masked fields stay
masked).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from tether.journal.payloads import (
    ApprovalData,
    AskData,
    CallData,
    CompactedData,
    CredentialIssuedData,
    EffectSettledData,
    EvalGradedData,
    ModelChargeData,
    ModelOverrunData,
    ModelRequestData,
    ModelResponseData,
    OutputData,
    PlanAmendedData,
    SessionEndData,
    SessionErrorData,
    SessionNoteData,
    SessionPausedData,
    SessionResumedData,
    SessionStartData,
    StrategyCallsData,
    StrategyNoteData,
    SubagentChargeData,
    SummaryErrorData,
    SummaryRequestData,
    SummaryResponseData,
    ToolDecisionData,
    ToolResultData,
    ToolsSelectedData,
    ToolStartedData,
    WrapUpSkippedData,
)
from tether.journal.views.branches import BRANCH_RENDER, tree_lines
from tether.journal.views.plan_lines import PLAN_RENDER, asked_line, plan_lines
from tether.journal.views.text import excerpt
from tether.store.base import ERASED_TYPE
from tether.types import Event
from tether.vocabulary import EventType


def when(timestamp: float) -> str:
    """A wall-clock timestamp as UTC, to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(timestamp))


def call_text(tool: str, arguments: object, limit: int = 80) -> str:
    if isinstance(arguments, Mapping):
        args = ", ".join(f"{k}={json.dumps(arguments[k], ensure_ascii=False)}"
                         for k in sorted(arguments))  # sorted: the same text from every store
    else:
        args = json.dumps(arguments, ensure_ascii=False)
    return f"{tool}({excerpt(args, limit)})"


def timeline(events: Sequence[Event]) -> list[str]:
    """Readable lines for one session's events (in seq order)."""
    lines: list[str] = []
    plan: Mapping[str, Any] | None = None  # what the request asks for (tether.policy.plan)
    effects: set[str] = set()  # the side-effecting tools, from each one's first decision
    for event in events:
        render = _RENDER.get(event.type)
        texts = render(event.data) if render is not None else [
            f"{event.type}: {excerpt(json.dumps(event.data, ensure_ascii=False, sort_keys=True))}"]
        # as the decisions read it
        if event.type in (EventType.SESSION_START, EventType.PLAN_AMENDED):
            plan = cast(SessionStartData | PlanAmendedData, event.data).get("plan")
        elif event.type == EventType.TOOL_DECISION and plan is not None:
            decided = cast(ToolDecisionData, event.data)
            if (decided.get("resource") or {}).get("side_effect"):
                effects.add(str(decided.get("tool")))
            if decided.get("tool") in effects:
                texts.append(asked_line(plan, str(decided.get("tool"))))
        for i, text in enumerate(texts):
            prefix = f"{event.seq:>5}  " if i == 0 else " " * 7
            lines.append(prefix + text)
    lines.append(spend_line(events))
    estimate = estimate_line(events)
    if estimate:
        lines.append(estimate)
    return lines


def header(events: Sequence[Event]) -> list[str]:
    """Who ran what, from ``session.start``: agent, model, subject, task, budget, context."""
    if not events:
        return []
    first = events[0]
    lines = [f"session {first.session_id}"]
    if first.type == ERASED_TYPE:
        return [*lines, f"  content erased by {first.data.get('erasure')} (tether.journal."
                "erasure): what remains is each event's former type, hash and link"]
    if first.type != EventType.SESSION_START:
        return [*lines, f"  (the first event is {first.type!r}, not session.start)"]
    d = cast(SessionStartData, first.data)
    who = d.get("subject") or {}
    roles = ", ".join(who.get("roles") or []) or "-"
    tenant = who.get("tenant_id") or "-"
    if d.get("agent") == "gateway":  # tool calls from an MCP (or other) client, no model
        client = (d.get("context") or {}).get("client") or who.get("user_id")
        lines.append(f"  tool gateway for client {client}; tenant {tenant}, roles {roles}")
    else:
        lines.append(f"  agent {d.get('agent')}, model {d.get('model')}; user "
                     f"{who.get('user_id') or '-'}, tenant {tenant}, roles {roles}")
    lines.append(f"  task: {excerpt(d.get('task', ''))}")
    limits = {k: v for k, v in (d.get("budget") or {}).items()
              if v is not None and k != "final_turn_share"}
    lines.append("  budget: " + (", ".join(f"{k}={v}" for k, v in limits.items()) or "no limits"))
    if d.get("context"):
        lines.append(f"  context: {excerpt(json.dumps(d['context'], ensure_ascii=False))}")
    if d.get("metadata"):  # labels, e.g. an evaluation trial's identity
        lines.append("  metadata: " + excerpt(json.dumps(d["metadata"], ensure_ascii=False,
                                                         sort_keys=True), 160))
    lines.append(f"  started {when(first.timestamp)}, last event {when(events[-1].timestamp)}, "
                 f"{len(events)} events")
    return lines


def spend_line(events: Sequence[Event]) -> str:
    """What the session spent, as its last end or pause recorded it."""
    for event in reversed(events):
        spend = cast(SessionEndData, event.data).get("spend") \
            if event.type in (EventType.SESSION_END, EventType.SESSION_PAUSED) else None
        if isinstance(spend, Mapping):
            status = "ended" if event.type == EventType.SESSION_END else "paused"
            return (f"spend ({status}): {spend.get('tokens')} tokens, ${spend.get('cost_usd')}, "
                    f"{spend.get('steps')} steps, {spend.get('tool_calls')} tool calls, "
                    f"{spend.get('seconds')} s")
        if event.type == ERASED_TYPE and event.data.get("type") == EventType.SESSION_END:
            return "spend: erased with the session's content"
    return "spend: not recorded (the session has neither ended nor paused)"


def estimate_line(events: Sequence[Event]) -> str:
    """How far tether's input estimates were from what the provider reported, over the model
    calls whose usage the provider did report: the error budgets are reserved with."""
    reserved = reported = calls = 0
    for event in events:
        data = cast(ModelResponseData, event.data)
        usage = (data.get("response") or {}).get("usage") or {} \
            if event.type == EventType.MODEL_RESPONSE else {}
        if usage and not usage.get("estimated") and data.get("reserved_input"):
            reserved += data["reserved_input"]
            reported += usage.get("input_tokens") or 0
            calls += 1
    if not calls or not reported:
        return ""
    return (f"input estimate: {reserved:,} tokens reserved for {reported:,} reported over "
            f"{calls} call{'s' if calls > 1 else ''} ({_off_by(reserved, reported)})")


def _off_by(estimate: int, actual: int) -> str:
    return f"{100 * (estimate - actual) / actual:+.0f}%"


# -- one renderer per event type ----------------------------------------------------------------

Renderer = Callable[[Any], list[str]]  # given its event's payload (tether.journal.payloads)


def _start(d: SessionStartData) -> list[str]:
    lines = [f"start: {excerpt(d.get('task', ''), 80)}"]
    plan = d.get("plan")
    if plan is not None:  # what the request asks for, read before anything untrusted
        lines += plan_lines(plan)
    return lines


def _request(d: ModelRequestData) -> list[str]:
    if d.get("final"):
        return [f"step {d.get('step')}: final turn requested (no tools; the run is stopping)"]
    return [f"step {d.get('step')}: model asked ({len(d.get('new') or [])} new messages)"]


def _response(d: ModelResponseData) -> list[str]:
    r = d.get("response") or {}
    usage = r.get("usage") or {}
    text = excerpt(r.get("text") or "", 80)
    said = f"\"{text}\"" if text else "(no text)"
    counted = ", estimated by tether" if usage.get("estimated") else ""
    reserved, actual = d.get("reserved_input"), usage.get("input_tokens")
    estimate = (f"; input estimate {reserved} ({_off_by(reserved, actual)})"
                if reserved and actual and not counted else "")
    lines = [f"model turn {d.get('step')}: {said} ({actual} in, "
             f"{usage.get('output_tokens')} out tokens{counted}, ${d.get('cost_usd')}"
             f"{estimate})"]
    for call in r.get("tool_calls") or []:
        lines.append(f"  calls {call_text(call.get('name'), call.get('arguments'))} "
                     f"[{call.get('id')}]")
    return lines


def _client_call(d: CallData) -> list[str]:
    call = d.get("call") or {}
    text = call_text(call.get("name", "?"), call.get("arguments"))
    return [f"client call (no model asked): {text} [{call.get('id')}]"]


def _planned_calls(d: StrategyCallsData) -> list[str]:
    lines = [f"strategy's planned calls (no model asked): {excerpt(str(d.get('reason')), 120)}"]
    for call in d.get("calls") or []:
        lines.append(f"  calls {call_text(call.get('name'), call.get('arguments'))} "
                     f"[{call.get('id')}]")
    return lines


def _subagent_charge(d: SubagentChargeData) -> list[str]:
    tokens = (d.get("input_tokens") or 0) + (d.get("output_tokens") or 0)
    return [f"sub-agent of {d.get('call_id')} charged: {tokens} tokens, ${d.get('cost_usd')}, "
            f"{d.get('steps')} steps, {d.get('tool_calls')} tool calls"]


def _model_error(d: ModelChargeData) -> list[str]:
    return [f"model error at step {d.get('step')}: {excerpt(d.get('error', ''))}"]


def _unmetered(d: ModelChargeData) -> list[str]:
    return [f"model call at step {d.get('step')} charged at its reservation "
            f"({d.get('input_tokens')} in, {d.get('output_tokens')} out tokens, "
            f"${d.get('cost_usd')}): {excerpt(d.get('error', ''))}"]


def _overrun(d: ModelOverrunData) -> list[str]:
    what = {"compaction": " of the summary call", "plan": " of the planner's call"}.get(
        str(d.get("purpose")), "")
    return [f"OVERRUN{what} at step {d.get('step')} ({d.get('limit')}): "
            f"{excerpt(d.get('detail', ''), 100)}"]


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
    return [f"approval {d.get('approval_id')} used: approved by {d.get('approver')}{note}; "
            f"{d.get('call_id')} runs"]


def _approval_refused(d: ApprovalData) -> list[str]:
    return [f"approval {d.get('approval_id')} refused for {d.get('call_id')}: "
            f"{excerpt(d.get('why', ''), 80)}"]


def _started(d: ToolStartedData) -> list[str]:
    return [f"started {d.get('call_id')} {d.get('tool')} (side effect; durable before it ran)"]


def _result(d: ToolResultData) -> list[str]:
    untrusted = " (untrusted output: taints the session)" if d.get("untrusted") else ""
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


def _paused(d: SessionPausedData) -> list[str]:
    pending = d.get("pending") or []
    waiting = f"; waiting: {', '.join(pending)}" if pending else ""
    uncertain = d.get("uncertain") or []
    if uncertain:
        waiting += f"; uncertain, to settle: {', '.join(uncertain)}"
    return [f"paused: {d.get('reason')}: {excerpt(d.get('detail', ''), 80)}{waiting}"]


def _resumed(d: SessionResumedData) -> list[str]:
    return [f"resumed after a {d.get('after')}"]


def _end(d: SessionEndData) -> list[str]:
    detail = f" ({excerpt(d['detail'], 60)})" if d.get("detail") else ""
    lines = [f"ended: {d.get('reason')}{detail}", f"answer: \"{excerpt(d.get('answer', ''))}\""]
    if d.get("notice"):
        lines.append(f"notice: {excerpt(d['notice'])}")
    return lines


def _error(d: SessionErrorData) -> list[str]:
    return [f"error: {excerpt(d.get('error', ''))}"]


def _wrap_up_skipped(d: WrapUpSkippedData) -> list[str]:
    return [f"wrap-up turn skipped: {d.get('reason')} ({excerpt(d.get('detail', ''), 60)})"]


def _graded(d: EvalGradedData) -> list[str]:
    verdict = "pass" if d.get("passed") else "fail"
    why = f": {excerpt(d.get('why', ''), 80)}" if d.get("why") else ""
    return [f"graded {d.get('session_id')} ({d.get('task')} [{d.get('perturbation')} "
            f"#{d.get('repetition')}]) by {d.get('grader')}: {verdict}{why}"]


def _output_valid(d: OutputData) -> list[str]:
    return [f"output valid ({d.get('type')}): "
            f"{excerpt(json.dumps(d.get('output'), ensure_ascii=False))}"]


def _output_invalid(d: OutputData) -> list[str]:
    errors = "; ".join(f"{'.'.join(map(str, e.get('loc') or [])) or '(answer)'}: {e.get('msg')}"
                       for e in d.get("errors") or [])
    return [f"output invalid ({d.get('type')}, attempt {d.get('attempt')}, "
            f"{d.get('repairs_left')} repairs left): {excerpt(errors)}",
            f"text: {excerpt(json.dumps(d.get('text', ''), ensure_ascii=False))}"]


def _summary_request(d: SummaryRequestData) -> list[str]:
    return [f"step {d.get('step')}: summary call to {d.get('model')} for messages "
            f"{d.get('start')}-{d.get('end')} (at most {d.get('max_output_tokens')} out tokens)"]


def _summary_response(d: SummaryResponseData) -> list[str]:
    return [f"summary call answered: \"{excerpt(d.get('text') or '', 80)}\" "
            f"({d.get('input_tokens')} in, {d.get('output_tokens')} out tokens, "
            f"${d.get('cost_usd')})"]


def _summary_error(d: SummaryErrorData) -> list[str]:
    tokens = (d.get("input_tokens") or 0) + (d.get("output_tokens") or 0)
    return [f"summary call failed: {excerpt(d.get('error', ''), 80)} (charged {tokens} "
            f"tokens, ${d.get('cost_usd')})"]


def _compacted(d: CompactedData) -> list[str]:
    how = "summarised" if d.get("strategy") == "summarise" else "dropped"
    lines = [f"compacted: turns 1-{d.get('turns')} {how} (messages {d.get('start')}-"
             f"{d.get('end')}, {d.get('replaced')} replaced, digest {d.get('digest')}; "
             f"{d.get('reason')}: ~{d.get('tokens_before')} -> ~{d.get('tokens_after')} "
             "tokens of conversation)"]
    if d.get("fallback"):
        lines.append(f"  no summary: {excerpt(d['fallback'], 100)}")
    return lines


def _note(d: SessionNoteData) -> list[str]:
    return [f"note to the model: {excerpt(json.dumps(d.get('text', ''), ensure_ascii=False))}"]


def _strategy_note(d: StrategyNoteData) -> list[str]:
    data = d.get("data") or {}
    if d.get("kind") == "lats.tree" and isinstance(data.get("nodes"), list):  # LATS: drawn
        return tree_lines(data)
    if d.get("kind") == "plan" and isinstance(data.get("actions"), list):  # LLM+P: in full
        check = data.get("validation") or {}
        steps = " ".join(f"({' '.join(map(str, a))})" for a in data["actions"])
        return [f"strategy plan {data.get('plan')} for domain {data.get('domain')} "
                f"({len(data['actions'])} steps; {check.get('validator')}: "
                f"{check.get('status')}): {steps or '(nothing to do)'}",
                f"  problem: {excerpt(' '.join(str(data.get('problem', '')).split()), 400)}"]
    said = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(data.items()))
    return [f"strategy {d.get('kind')}: {excerpt(said, 160)}"]


def _selected(d: ToolsSelectedData) -> list[str]:
    """A turn's tool selection (runtime.context.selecting): what ranked, what the policy hid."""
    scores = d.get("scores") or {}
    ranked = ", ".join(f"{name} {score:g}" for name, score in scores.items()) or "none"
    where = f" (branch {d['branch']})" if d.get("branch") else ""
    lines = [f"step {d.get('step')}{where}: tools selected by rank: {excerpt(ranked, 160)}"]
    if d.get("denied"):
        lines.append(f"not offered, denied by policy whatever the call: "
                     f"{', '.join(d['denied'])}")
    if d.get("error"):
        lines.append(f"the ranker failed ({excerpt(d['error'], 120)}); only the always tools "
                     "were offered")
    return lines


def _sampling_request(d: SummaryRequestData) -> list[str]:
    return [f"{d.get('server')} asks a sampling call during {d.get('call_id')}: "
            f"{len(d.get('messages') or [])} message(s), up to {d.get('max_output_tokens')} "
            f"output tokens ({d.get('reserved_input')} input reserved)"]


def _sampling_response(d: SummaryResponseData) -> list[str]:
    over = f"; overrun: {d['overrun']}" if d.get("overrun") else ""
    return [f"sampling call answered: \"{excerpt(d.get('text') or '', 80)}\" "
            f"({d.get('input_tokens')} in, {d.get('output_tokens')} out tokens, "
            f"${d.get('cost_usd')}){over}"]


def _sampling_error(d: SummaryErrorData) -> list[str]:
    tokens = (d.get("input_tokens") or 0) + (d.get("output_tokens") or 0)
    return [f"sampling call failed: {excerpt(d.get('error', ''), 80)} (charged {tokens} "
            f"tokens, ${d.get('cost_usd')})"]


def _refused_ask(kind: str) -> Renderer:
    def render(d: Mapping[str, Any]) -> list[str]:
        return [f"{d.get('server')}'s {kind} during {d.get('call_id')} refused: "
                f"{excerpt(d.get('reason', ''), 120)}"]

    return render


def _elicitation_requested(d: AskData) -> list[str]:
    fields = ", ".join((d.get("schema") or {}).get("properties") or {})
    return [f"{d.get('server')} asks during {d.get('call_id')}: "
            f"\"{excerpt(d.get('message') or '', 80)}\" ({fields or 'no fields'}) "
            f"[{d.get('approval_id')}]"]


def _elicitation_answered(d: AskData) -> list[str]:
    if d.get("action") == "accept":
        content = json.dumps(d.get("content"), ensure_ascii=False, sort_keys=True)
        return [f"answered by {d.get('by')}: {excerpt(content, 100)} [{d.get('approval_id')}]"]
    return [f"declined ({d.get('by')}): {excerpt(d.get('reason', ''), 100)} "
            f"[{d.get('approval_id')}]"]


def _sampling_relayed(d: AskData) -> list[str]:
    return [f"{d.get('server')}'s sampling request during {d.get('call_id')} relayed to the "
            f"client: {len(d.get('messages') or [])} message(s), up to {d.get('max_tokens')} "
            "tokens"]


def _sampling_answered(d: AskData) -> list[str]:
    return [f"sampling request answered by {d.get('by')}: "
            f"\"{excerpt(d.get('text') or '', 80)}\""]


def _elicitation_relayed(d: AskData) -> list[str]:
    fields = ", ".join((d.get("schema") or {}).get("properties") or {})
    return [f"{d.get('server')} asks the client during {d.get('call_id')}: "
            f"\"{excerpt(d.get('message') or '', 80)}\" ({fields or 'no fields'})"]


_RENDER: dict[str, Renderer] = {
    EventType.SESSION_START: _start,
    EventType.STRATEGY_NOTE: _strategy_note,
    EventType.MODEL_REQUEST: _request,
    EventType.MODEL_RESPONSE: _response,
    EventType.MODEL_ERROR: _model_error,
    EventType.MODEL_UNMETERED: _unmetered,
    EventType.MODEL_LOST: _unmetered,
    EventType.MODEL_OVERRUN: _overrun,
    EventType.CLIENT_CALL: _client_call,
    EventType.STRATEGY_CALLS: _planned_calls,
    EventType.SUBAGENT_CHARGE: _subagent_charge,
    EventType.TOOL_DECISION: _decision,
    EventType.APPROVAL_REQUESTED: _approval_requested,
    EventType.APPROVAL_GRANTED: _approval_granted,
    EventType.APPROVAL_REFUSED: _approval_refused,
    EventType.TOOL_STARTED: _started,
    EventType.CREDENTIAL_ISSUED: _credential,
    EventType.TOOL_RESULT: _result,
    EventType.EFFECT_SETTLED: _settled,
    EventType.EFFECT_RERUN: _rerun,
    EventType.SESSION_PAUSED: _paused,
    EventType.SESSION_RESUMED: _resumed,
    EventType.SESSION_END: _end,
    EventType.SESSION_ERROR: _error,
    EventType.SESSION_WRAP_UP_SKIPPED: _wrap_up_skipped,
    EventType.EVAL_GRADED: _graded,
    EventType.OUTPUT_VALID: _output_valid,
    EventType.OUTPUT_INVALID: _output_invalid,
    EventType.SESSION_NOTE: _note,
    EventType.COMPACTION_REQUEST: _summary_request,
    EventType.COMPACTION_RESPONSE: _summary_response,
    EventType.COMPACTION_ERROR: _summary_error,
    EventType.CONTEXT_COMPACTED: _compacted,
    EventType.TOOLS_SELECTED: _selected,
    EventType.SAMPLING_REQUEST: _sampling_request,
    EventType.SAMPLING_RESPONSE: _sampling_response,
    EventType.SAMPLING_ERROR: _sampling_error,
    EventType.SAMPLING_REFUSED: _refused_ask("sampling request"),
    EventType.ELICITATION_REQUESTED: _elicitation_requested,
    EventType.ELICITATION_ANSWERED: _elicitation_answered,
    EventType.ELICITATION_REFUSED: _refused_ask("elicitation"),
    EventType.SAMPLING_RELAYED: _sampling_relayed,
    EventType.SAMPLING_ANSWERED: _sampling_answered,
    EventType.ELICITATION_RELAYED: _elicitation_relayed,
    EventType.LOG_DROPPED: _refused_ask("log lines"),
    EventType.PROGRESS_DROPPED: _refused_ask("progress notifications"),
    **BRANCH_RENDER,
    **PLAN_RENDER,
}
