"""What of a model's answer may be charged and run: its usage, a call cut short, each call's id.

Why its own module: a session turn's answer (``Environment``) and an explored branch's answer
(``tether.runtime.chokepoint.branch_call``) pass the same checks before they are journaled, and the
branch code must not reach up into the Environment for them.

Decision: these are pure functions of the answer (and, for ids, of the ids the session has seen):
usage that is not whole non-negative numbers is not charged as reported; the last call of an
answer cut at its output limit never runs with guessed arguments; no call's id may be empty,
repeated, or pass for a strategy's planned or branch call.
"""

from __future__ import annotations

from tether.types import (
    BRANCH_CALL_PREFIX,
    PLANNED_CALL_PREFIX,
    ModelResponse,
    ToolCall,
    Usage,
)

_STRATEGY_PREFIXES = (PLANNED_CALL_PREFIX, BRANCH_CALL_PREFIX)
CUT_OFF = "<cut off at the output limit before the arguments were complete>"


def usable(usage: Usage) -> bool:
    """Whether every count of ``usage`` is a whole, non-negative number (a bool is not a
    count): what a call can be charged at as reported."""
    return all(type(n) is int and n >= 0 for n in (
        usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
        usage.cache_write_tokens))


def without_cut_call(response: ModelResponse) -> ModelResponse:
    """When output stopped at its length limit, the last tool call may be cut short — even
    parse as ``{}`` if it was cut before its arguments began. It must never run with guessed
    arguments: it goes to the malformed-arguments gate instead, which tells the model so."""
    if response.finish_reason != "length" or not response.tool_calls:
        return response
    *whole, last = response.tool_calls
    cut = ToolCall(last.id, last.name, CUT_OFF)
    return ModelResponse(response.text, (*whole, cut), response.usage, response.model,
                         response.finish_reason)


def unique_ids(response: ModelResponse, step: int, seen: set[str]) -> ModelResponse:
    """Every call of a session gets its own id (added to ``seen``): an empty or repeated id
    (some providers and stream assemblers produce them) would let one call pass for another at
    the gate."""
    calls = response.tool_calls
    ids = [c.id for c in calls]
    # (an id of a strategy's planned or branch calls is never the model's: it could pass
    # for one)
    if all(ids) and seen.isdisjoint(ids) and len(set(ids)) == len(ids) and not any(
            i.startswith(_STRATEGY_PREFIXES) for i in ids):
        seen.update(ids)
        return response
    fixed = []
    for i, c in enumerate(calls):
        new_id = c.id if c.id and c.id not in seen and not c.id.startswith(
            _STRATEGY_PREFIXES) else f"tether_{step}_{i + 1}"
        seen.add(new_id)
        fixed.append(ToolCall(new_id, c.name, c.arguments))
    return ModelResponse(response.text, tuple(fixed), response.usage, response.model,
                         response.finish_reason)
