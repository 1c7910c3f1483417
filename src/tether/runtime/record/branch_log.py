"""What a session's explored branches left in the journal, folded: the replay a resume reads.

Why: a tree search (LATS) asks the model from a branch's own context and runs a branch's
side-effect-free calls, none of which belongs to the session's linear conversation. They are
journaled as events of their own (``branch.request``, ``branch.response``, ``branch.simulated``,
and the ordinary ``tool.decision``/``tool.result`` of a ``branch_`` call) and folded here, apart
from the conversation — so a resumed search is answered from this log (a branch call whose
answer is journaled is never asked again; a branch tool call whose result is journaled never
runs again) and the session's conversation never sees a branch.

Decision: a branch call is keyed by the strategy (``key``, unique in the session); the shape of
the request's messages (roles, calls, the results they answer — no content, so a digest cannot
give back a value the journal masked) is kept as a digest, so a resumed search that asks the same
key on another path is told so instead of being given an answer to another question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from tether.journal.chain import canonical_json
from tether.runtime.record.result import ToolResult
from tether.types import Message, ModelResponse, ToolCall


def digest(messages: Sequence[Message]) -> str:
    """The shape of a branch request's messages: roles, the calls each turn made (id, tool) and
    the call each result answers; never their content."""
    text = canonical_json([[m.role, m.tool_call_id or "", [[c.id, c.name] for c in m.tool_calls]]
                           for m in messages])
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class BranchLog:
    """Branch calls and their outcomes, by key; branch tool calls and their results, by id."""

    __slots__ = ("answers", "asked", "calls", "results", "simulated")

    def __init__(self) -> None:
        self.asked: dict[str, str] = {}  # key -> digest of the messages asked with
        self.answers: dict[str, ModelResponse] = {}  # key -> the answer journaled
        self.calls: dict[str, ToolCall] = {}  # call id -> a call a branch answer asked for
        self.results: dict[str, ToolResult] = {}  # call id -> its journaled result
        self.simulated: set[str] = set()  # ids of side-effecting calls proposed, not run

    def on_request(self, data: Mapping[str, Any]) -> None:
        self.asked[data["key"]] = data["digest"]

    def on_response(self, data: Mapping[str, Any]) -> None:
        response: ModelResponse = data["response"]
        self.answers[data["key"]] = response
        for call in response.tool_calls:
            self.calls[call.id] = call

    def on_simulated(self, data: Mapping[str, Any]) -> None:
        self.simulated.add(data["call"]["id"] if isinstance(data["call"], Mapping)
                           else data["call"].id)

    def on_result(self, result: ToolResult) -> None:
        self.results[result.call_id] = result
