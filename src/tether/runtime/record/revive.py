"""Stored event data back to the live form the state's handlers take.

Why its own module: the journal stores event data as plain JSON, while the live session applies
each event as it appends it, in its live form (frozen records: messages, responses, calls,
decisions). Turning the one into the other is a concern of its own, apart from what the events
mean to the session (``tether.runtime.record.state``); a rerun (``tether.runtime.rerun``) needs it
without folding.

Decision: one function, by event type, returning the data unchanged for every type whose data
is plain already — so ``fold`` and the live session run the very same handlers on the very same
shapes, and a resumed or audited session sees exactly what the live one saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.policy.base import Decision, Effect
from tether.types import Message, ModelResponse, ToolCall
from tether.vocabulary import EventType


def revive(type: str, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Stored plain-JSON event data → the live form the handlers take."""
    if type == EventType.MODEL_REQUEST:
        return {**data, "new": [Message.from_dict(m) for m in data["new"]]}
    if type in (EventType.MODEL_RESPONSE, EventType.BRANCH_RESPONSE):
        return {**data, "response": ModelResponse.from_dict(data["response"])}
    if type == EventType.BRANCH_REQUEST:
        return {**data, "messages": [Message.from_dict(m) for m in data["messages"]]}
    if type == EventType.CONTEXT_COMPACTED:
        return {**data, "replacement": [Message.from_dict(m) for m in data["replacement"]]}
    if type == EventType.CLIENT_CALL:
        c = data["call"]
        return {**data, "call": ToolCall(c["id"], c["name"], c["arguments"])}
    if type == EventType.STRATEGY_CALLS:
        return {**data, "flushed": [Message.from_dict(m) for m in data["flushed"]],
                "calls": tuple(ToolCall(c["id"], c["name"], c["arguments"])
                               for c in data["calls"])}
    if type == EventType.TOOL_DECISION:
        d = data["decision"]
        decision = Decision(Effect(d["effect"]), d["reason"], d["policy_id"],
                            tuple(d.get("fields", ())), tuple(d.get("mask_in", ())),
                            d.get("fallback"))
        return {**data, "decision": decision}
    return data
