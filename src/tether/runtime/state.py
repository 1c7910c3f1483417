"""A session's state as a fold over its journal.

Decision: nothing about a session changes except by appending an event; the live session applies
each event to this projection as it is appended, and ``fold(events)`` rebuilds the same state from
a stored journal. One code path for both means a resumed or audited session sees exactly what the
live one saw: conversation, spend, tool-call signatures, trajectory and outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from tether.runtime.budget import Tally
from tether.runtime.result import Step, ToolResult
from tether.runtime.stop import StopReason
from tether.types import Event, Message, ToolCall, Usage


def call_signature(tool: str, arguments: Mapping[str, Any] | str) -> str:
    """Normalised identity of a call: same tool and same arguments, whatever the key order."""
    from tether.runtime.journal import canonical_json

    return f"{tool}:{canonical_json(arguments)}"


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

    def apply(self, event: Event) -> None:
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event.data)

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
        self.conversation.extend(Message.from_dict(m) for m in data["new"])

    def _on_response(self, data: Mapping[str, Any]) -> None:
        r = data["response"]
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in r["tool_calls"])
        self.conversation.append(Message.assistant(r["text"], calls))
        u = r["usage"]
        usage = Usage(u["input_tokens"], u["output_tokens"], u["cached_input_tokens"])
        t = self.tally
        t.steps += 1
        t.usage = t.usage + usage
        t.cost += Decimal(data["cost_usd"])
        reserved = data["reserved_input"]
        if reserved and usage.input_tokens > reserved:
            t.input_scale *= usage.input_tokens / reserved
        self._close_step()
        self._open = (t.steps, r["text"], calls, [])

    def _on_model_error(self, data: Mapping[str, Any]) -> None:
        self.tally.steps += 1

    def _on_decision(self, data: Mapping[str, Any]) -> None:
        sig = call_signature(data["tool"], data["arguments"])
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


_HANDLERS = {
    "session.start": SessionState._on_start,
    "model.request": SessionState._on_request,
    "model.response": SessionState._on_response,
    "model.error": SessionState._on_model_error,
    "tool.decision": SessionState._on_decision,
    "tool.result": SessionState._on_result,
    "session.end": SessionState._on_end,
}


def fold(events: Iterable[Event]) -> SessionState:
    state = SessionState()
    for event in events:
        state.apply(event)
    return state
