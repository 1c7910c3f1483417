"""Timeline lines for model turns and what shapes them: requests and answers, errors, unmetered
and overrun calls, calls no model asked for, structured output, compaction, tool selection,
notes and a strategy's own notes.

Why a module per event family: see ``journal.views.session_lines``. Decision: each renderer is
a pure function of the event's stored data; ``TURN_RENDER`` maps event types to them.
"""

from __future__ import annotations

import json

from tether.journal.payloads import (
    CallData,
    CompactedData,
    ModelChargeData,
    ModelOverrunData,
    ModelRequestData,
    ModelResponseData,
    OutputData,
    SessionNoteData,
    StrategyCallsData,
    StrategyNoteData,
    SubagentChargeData,
    SummaryErrorData,
    SummaryRequestData,
    SummaryResponseData,
    ToolsSelectedData,
)
from tether.journal.views.branches import tree_lines
from tether.journal.views.text import Renderer, call_text, excerpt, off_by
from tether.vocabulary import EventType


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
    estimate = (f"; input estimate {reserved} ({off_by(reserved, actual)})"
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


TURN_RENDER: dict[str, Renderer] = {
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
    EventType.OUTPUT_VALID: _output_valid,
    EventType.OUTPUT_INVALID: _output_invalid,
    EventType.SESSION_NOTE: _note,
    EventType.COMPACTION_REQUEST: _summary_request,
    EventType.COMPACTION_RESPONSE: _summary_response,
    EventType.COMPACTION_ERROR: _summary_error,
    EventType.CONTEXT_COMPACTED: _compacted,
    EventType.TOOLS_SELECTED: _selected,
}
