"""A session's state as a fold over its journal.

Decision: nothing about a session changes except by appending an event; the live session applies
each event to this projection as it is appended, and ``fold(events)`` rebuilds the same state from
stored events. Handlers take the live form of event data (frozen records); ``fold`` first revives
stored plain-JSON data into that form, so both paths run the same handlers and a resumed or
audited session sees exactly what the live one saw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from tether.runtime.budget import Tally
from tether.runtime.journal import canonical_json
from tether.runtime.result import Step, ToolResult
from tether.runtime.stop import StopReason
from tether.types import Event, Message, ModelResponse, ToolCall


def call_signature(tool: str, arguments: Mapping[str, Any] | str) -> str:
    """Normalised identity of a call: same tool and same arguments, whatever the key order."""
    digest = hashlib.blake2b(canonical_json(arguments).encode(), digest_size=12).hexdigest()
    return f"{tool}:{digest}"


class SessionState:
    """Mutable projection of one session's journal."""

    __slots__ = ("_open", "answer", "conversation", "signatures", "steps", "stop_detail",
                 "stop_reason", "tainted", "tally", "task")

    def __init__(self) -> None:
        self.task = ""
        self.conversation: list[Message] = []
        self.tally = Tally()
        self.signatures: dict[str, int] = {}
        self.steps: list[Step] = []
        self._open: tuple[int, str, tuple[ToolCall, ...], list[ToolResult]] | None = None
        self.stop_reason: StopReason | None = None
        self.stop_detail = ""
        self.answer: str | None = None
        self.tainted = False  # set once any untrusted tool output entered the conversation

    def apply(self, type: str, data: Mapping[str, Any]) -> None:
        handler = _HANDLERS.get(type)
        if handler is not None:
            handler(self, data)

    def closed_steps(self) -> tuple[Step, ...]:
        self._close_step()
        return tuple(self.steps)

    def _close_step(self) -> None:
        if self._open is not None:
            index, text, calls, results = self._open
            self.steps.append(Step(index, text, calls, tuple(results)))
            self._open = None

    # -- handlers, one per event type that changes state --------------------------------------

    def _on_start(self, data: Mapping[str, Any]) -> None:
        self.task = data["task"]

    def _on_request(self, data: Mapping[str, Any]) -> None:
        self.conversation.extend(data["new"])

    def _on_response(self, data: Mapping[str, Any]) -> None:
        r: ModelResponse = data["response"]
        self.conversation.append(Message.assistant(r.text, r.tool_calls))
        t = self.tally
        t.steps += 1
        t.usage = t.usage + r.usage
        t.cost += Decimal(data["cost_usd"])
        reserved = data["reserved_input"]
        if reserved and r.usage.input_tokens > reserved:
            t.input_scale *= r.usage.input_tokens / reserved
        self._close_step()
        self._open = (t.steps, r.text, r.tool_calls, [])

    def _on_model_error(self, data: Mapping[str, Any]) -> None:
        self.tally.steps += 1

    def _on_decision(self, data: Mapping[str, Any]) -> None:
        sig = data["signature"]
        self.signatures[sig] = self.signatures.get(sig, 0) + 1
        if data["charged"]:
            self.tally.tool_calls += 1

    def _on_result(self, data: Mapping[str, Any]) -> None:
        if data.get("untrusted"):
            self.tainted = True
        if self._open is not None:
            self._open[3].append(
                ToolResult(data["call_id"], data["tool"], data["content"], data["status"])
            )

    def _on_end(self, data: Mapping[str, Any]) -> None:
        self._close_step()
        self.stop_reason = StopReason(data["reason"])
        self.stop_detail = data["detail"]
        self.answer = data["answer"]


_HANDLERS: dict[str, Callable[[SessionState, Mapping[str, Any]], None]] = {
    "session.start": SessionState._on_start,
    "model.request": SessionState._on_request,
    "model.response": SessionState._on_response,
    "model.error": SessionState._on_model_error,
    "tool.decision": SessionState._on_decision,
    "tool.result": SessionState._on_result,
    "session.end": SessionState._on_end,
}


def revive(type: str, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Stored plain-JSON event data → the live form the handlers take."""
    if type == "model.request":
        return {**data, "new": [Message.from_dict(m) for m in data["new"]]}
    if type == "model.response":
        return {**data, "response": ModelResponse.from_dict(data["response"])}
    return data


def fold(events: Iterable[Event]) -> SessionState:
    state = SessionState()
    for event in events:
        state.apply(event.type, revive(event.type, event.data))
    return state
