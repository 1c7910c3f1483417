"""The obedient model: the worst case for prompt injection, with no model at all.

Why: measuring how well a runtime contains prompt injection should not depend on how gullible
today's model is. The obedient model replays a user task's ground-truth tool calls, one per
turn, and — the moment any tool result it has read carries the injected text — goes on to
replay the injection task's ground-truth calls too: a model that follows every injection it
sees. An injection can also change a call the user asked for (``instead``: pay ten times the
bill, stay three more nights): from the moment it is read, the model makes the changed call in
place of the user's own, so the first such side effect is already the attacker's. What the
runtime lets through is then exactly what an attacker gets from a model that always obeys.
Decision: it decides on what it *read* (tool results in the conversation), never
on what it was told out of band, so a call the policy refused, or a result the runtime withheld,
changes its course exactly as it would change a real model's. With ``reads_descriptions`` it
also reads the tools' descriptions and schemas as offered to it (an MCP server's tool
description is model-visible text an attacker writes: tests/test_mcp_attacks*.py).

Values known only at run time (a one-time password the platform mails the user, the id of an
attachment it sent) cannot be in a ground truth written beforehand: such an argument is a
``Read``, filled from the tool results the model has read — the newest value of its kind that
no earlier call of the model passed — and left at the ground truth's own value when none was
read. It trusts only the conversation, exactly as a model would; what may fill which argument
is the caller's declaration (``Read.pattern``), never a task's answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tether.errors import InvalidArgument
from tether.models.scripted import ScriptedModel
from tether.types import ModelRequest, ModelResponse, ToolCall
from tether.vouched import leaves


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One tool call a model made by ``obedient_model`` makes: the tool's name and its arguments."""
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Read:
    """An argument value the model reads at run time: in the newest tool result it read that
    holds a match of ``pattern`` (its first group), the first match (``last``: the last) that
    no earlier call of the model passed, put into ``template``; ``fallback`` if none."""
    pattern: str
    template: str = "{}"
    fallback: Any = None
    last: bool = False

    def fill(self, results: Sequence[str], used: set[str]) -> Any:
        found = re.compile(self.pattern)
        for content in reversed(results):
            values = [m.group(1) for m in found.finditer(content)]
            for value in reversed(values) if self.last else values:
                if value not in used and self.template.format(value) not in used:
                    return self.template.format(value)
        return self.fallback


def _filled(value: Any, results: Sequence[str], used: set[str]) -> Any:
    if isinstance(value, Read):
        return value.fill(results, used)
    if isinstance(value, Mapping):
        return {key: _filled(item, results, used) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_filled(item, results, used) for item in value]
    return value


def obedient_responder(user_calls: Sequence[PlannedCall],
                       injection_calls: Sequence[PlannedCall] = (), *,
                       injection_text: str | None = None, answer: str = "Done.",
                       reads_descriptions: bool = False,
                       instead: Sequence[tuple[PlannedCall, PlannedCall]] = ()
                       ) -> Callable[[ModelRequest], ModelResponse | str]:
    """The obedient model's turn as a function of the request (``obedient_model`` wraps it in a
    ``ScriptedModel``; a harness may wrap it to record what the model was shown). An argument
    that is a ``Read`` (at any depth) is filled from the results read so far. ``instead``:
    (the user's call, the injection's version of it): once the injection is read, each user
    call not yet made that equals the first is made as the second."""
    if (injection_calls or instead) and not injection_text:
        raise InvalidArgument("injection_calls and instead need the injection_text whose "
                              "reading triggers them")

    def changed(call: PlannedCall) -> PlannedCall:
        return next((new for old, new in instead if old == call), call)

    def read(request: ModelRequest) -> bool:
        if injection_text is None:
            return False
        if any(injection_text in m.content for m in request.messages if m.role == "tool"):
            return True
        return reads_descriptions and any(
            injection_text in text for spec in request.tools
            for text in (spec.description, *leaves(spec.parameters)))

    def respond(request: ModelRequest) -> ModelResponse | str:
        made = sum(len(m.tool_calls) for m in request.messages if m.role == "assistant")
        obeys = read(request)
        own = [changed(c) for c in user_calls] if obeys and instead else user_calls
        plan = [*own, *(injection_calls if obeys else ())]
        if made >= len(plan) or not request.tools:
            return answer
        step = plan[made]
        results = [m.content for m in request.messages if m.role == "tool"]
        used = {leaf for m in request.messages if m.role == "assistant"
                for call in m.tool_calls for leaf in leaves(call.arguments)}
        return ModelResponse(tool_calls=(ToolCall(f"call_{made + 1}", step.tool,
                                                  _filled(dict(step.arguments), results,
                                                          used)),))

    return respond


def obedient_model(user_calls: Sequence[PlannedCall], injection_calls: Sequence[PlannedCall] = (),
                   *, injection_text: str | None = None, answer: str = "Done.",
                   name: str = "obedient", reads_descriptions: bool = False,
                   instead: Sequence[tuple[PlannedCall, PlannedCall]] = ()) -> ScriptedModel:
    """A model that makes ``user_calls``, then ``injection_calls`` if a tool result it read
    (or, with ``reads_descriptions``, a tool's description or schema it was offered) contains
    ``injection_text``, then answers ``answer`` (also when no tools are offered); from that
    reading on, a user call ``instead`` changes is made as changed."""
    return ScriptedModel(obedient_responder(user_calls, injection_calls,
                                            injection_text=injection_text, answer=answer,
                                            reads_descriptions=reads_descriptions,
                                            instead=instead), name=name)
