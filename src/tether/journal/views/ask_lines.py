"""Timeline lines for what an MCP server asks during a tool call: sampling calls (made by
tether, or relayed to the client), elicitations, and the asks refused or dropped.

Why a module per event family: see ``journal.views.session_lines``. Decision: each renderer is
a pure function of the event's stored data; ``ASK_RENDER`` maps event types to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tether.journal.payloads import (
    AskData,
    SummaryErrorData,
    SummaryRequestData,
    SummaryResponseData,
)
from tether.journal.views.text import Renderer, excerpt
from tether.vocabulary import EventType


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


ASK_RENDER: dict[str, Renderer] = {
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
    EventType.ROOTS_REFUSED: _refused_ask("roots request"),
    EventType.LOG_DROPPED: _refused_ask("log lines"),
    EventType.PROGRESS_DROPPED: _refused_ask("progress notifications"),
}
