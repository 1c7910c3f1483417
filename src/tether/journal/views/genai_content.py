"""The conversation in the OpenTelemetry GenAI conventions' message shape (opt-in content).

Why apart from ``tether.journal.views.spans``: only a sink that puts content on its spans
(``content=True``) ever shapes messages; the span derivation every step runs keeps to ids,
times and counts. What is shaped is the journal's text, already masked and scrubbed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def messages_shape(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """Journaled messages in the conventions' message shape (role and parts)."""
    out = []
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        role = str(m.get("role", ""))
        if role == "tool":
            out.append({"role": "tool", "parts": [{"type": "tool_call_response",
                                                   "id": m.get("tool_call_id", ""),
                                                   "response": m.get("content", "")}]})
        elif role == "assistant":
            out.append(assistant_shape({"text": m.get("content", ""),
                                   "tool_calls": m.get("tool_calls", ())}))
        else:
            out.append({"role": role, "parts": [{"type": "text",
                                                 "content": m.get("content", "")}]})
    return out


def assistant_shape(response: Mapping[str, Any]) -> dict[str, Any]:
    """A journaled response (or assistant message) as the conventions' assistant message."""
    parts: list[dict[str, Any]] = []
    if response.get("text"):
        parts.append({"type": "text", "content": response["text"]})
    for call in response.get("tool_calls") or ():
        parts.append({"type": "tool_call", "id": call.get("id", ""), "name": call.get("name"),
                      "arguments": call.get("arguments", {})})
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if response.get("finish_reason"):
        message["finish_reason"] = response["finish_reason"]
    return message
