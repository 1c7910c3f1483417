"""ScriptedModel: a deterministic model for tests and the zero-cost quickstart.

Decision: the answer depends on the request alone. The script cursor is derived from the request
itself (the number of assistant turns already in the conversation, those a compaction replaced
included, a strategy's planned calls not), so one ScriptedModel can serve any number of sessions,
concurrently, each seeing the script from the start. It behaves like a real provider where the
budget depends on it: input tokens are counted with the estimator the runtime reserves with, and
output never exceeds ``max_output_tokens`` (longer responses are cut, finish reason ``length``,
as a provider would).

Counting every message of every request made a long session quadratic (a step at 2,000 steps cost
8 times one at 100, issue 50). So the model remembers, for each conversation log it was sent a
snapshot of (``tether._snapshots``: a session's turns are snapshots of one append-only log), how
far it counted and what it found; a later snapshot of the same log, no shorter, has those same
messages first, so only the new ones are counted. Anything else — a tuple (a branch, a planner,
a test's request), a shorter snapshot, another log (a compaction makes one) — is counted in full,
as before. What is remembered is dropped with its log, and changes only the time an answer takes,
never the answer (property-tested against the full count, tests/test_scripted_turns.py).
"""

from __future__ import annotations

import asyncio
import operator
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from tether._snapshots import AppendOnlyLog, Snapshot
from tether.models.base import (
    ModelError,
    compacted_turns,
    estimate_message_tokens,
    estimate_text_tokens,
    estimate_tools_tokens,
)
from tether.models.pricing import ZERO_PRICE, Price
from tether.types import Message, ModelRequest, ModelResponse, ToolCall, Usage, is_planned_turn

_ROLE = operator.attrgetter("role")
_CALLS = operator.attrgetter("tool_calls")
ScriptItem = ModelResponse | str
Responder = Callable[[ModelRequest], ScriptItem]


class ScriptedModel:
    """A deterministic model for tests and the zero-cost quickstart: answers from a script (a
    sequence of responses or strings) or from a callable.

    Turn *n* of every session gets the script's *n*-th item, so one instance serves any number
    of sessions at once. Input tokens are counted as the runtime estimates them, and an answer
    longer than the call's ``max_output_tokens`` is cut (finish reason ``length``), as a
    provider would.

    Args:
        script: The answers, one per model turn: a ``str`` (a final answer) or a
            ``ModelResponse`` (e.g. with ``tool_calls``); or a callable ``(ModelRequest) ->
            str | ModelResponse`` that answers every turn.
        name: The model's name, in the journal and its responses.
        price: Its price per million tokens. Default: zero, so a cost budget can be enforced.
        when_exhausted: The answer to every turn past the script's end. Default None: such a
            turn raises ``ModelError`` (the run stops ``model_error``).
        latency: Seconds each answer waits before it returns, to simulate a slow provider.
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | Responder,
        *,
        name: str = "scripted",
        price: Price | None = ZERO_PRICE,
        when_exhausted: str | None = None,
        latency: float = 0.0,
    ) -> None:
        self._responder: Responder | None = script if callable(script) else None
        self._script: tuple[ScriptItem, ...] = () if callable(script) else tuple(script)
        self._prepared = tuple(_prepare(item, turn) for turn, item in enumerate(self._script))
        self._name = name
        self._price = price
        self._when_exhausted = when_exhausted
        self._latency = latency
        # id of a conversation log -> how far this model counted its turns (see the docstring)
        self._places: dict[int, _Place] = {}

    def __repr__(self) -> str:
        kind = "callable" if self._responder else f"{len(self._script)} responses"
        return f"ScriptedModel({self._name!r}, {kind})"

    @classmethod
    def tool_then_answer(
        cls, tool: str, arguments: Mapping[str, Any], answer: str, **kwargs: Any
    ) -> ScriptedModel:
        """One call to ``tool`` with ``arguments``, then ``answer``."""
        call = ToolCall("call_1", tool, dict(arguments))
        return cls([ModelResponse(tool_calls=(call,), finish_reason="tool_calls"), answer],
                   **kwargs)

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def price(self) -> Price | None:
        """Its price per million tokens (None: unknown)."""
        return self._price

    estimate_message_tokens = staticmethod(estimate_message_tokens)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The script's answer to this turn of ``request``'s conversation."""
        if self._latency:
            await asyncio.sleep(self._latency)
        if self._responder is not None:  # the turn only names the calls it gives no id
            item = self._responder(request)
            unnamed = not isinstance(item, str) and not all(c.id for c in item.tool_calls)
            return self._finish(request, _prepare(item, self._turn(request) if unnamed else 0))
        turn = self._turn(request)
        if turn < len(self._prepared):
            prepared = self._prepared[turn]
        else:
            prepared = _prepare(self._pick(request, turn), turn)
        return self._finish(request, prepared)

    def _turn(self, request: ModelRequest) -> int:
        """Which of the model's turns ``request`` asks for (0: the first)."""
        messages = request.messages
        turn = self._model_turns(messages)
        if len(messages) > 2 and messages[2].role == "user":  # the turns a compaction replaced
            turn += compacted_turns(messages[2])
        return turn

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """``complete``'s answer in text chunks of 16 characters, then the whole response."""
        response = await self.complete(request)
        text = response.text
        for start in range(0, len(text), 16):
            yield text[start:start + 16]
        yield response

    def _model_turns(self, messages: Sequence[Message]) -> int:
        """``model_turns(messages)``, counting only what is new since this model last counted
        a snapshot of the same conversation log."""
        if type(messages) is not Snapshot or messages.start:
            return model_turns(messages)
        log, length = messages.source, messages.stop
        key = id(log)
        places = self._places
        place = places.get(key)
        if place is not None and place.log() is log:
            ref = place.log
            if place.length <= length:  # the same messages first: count the rest
                turns = place.turns + model_turns(log[place.length:length])
            else:  # an older snapshot of it
                turns = model_turns(messages)
        else:  # a log not seen yet (the entry of a dead one at the same id is not its)
            ref = weakref.ref(log, partial(_forget, places, key))
            turns = model_turns(messages)
        places[key] = _Place(ref, length, turns)
        return turns

    def _pick(self, request: ModelRequest, turn: int) -> ScriptItem:
        if self._when_exhausted is not None:
            return self._when_exhausted
        raise ModelError(
            f"ScriptedModel {self._name!r} has no response for turn {turn + 1} "
            f"(script has {len(self._script)}); add responses or pass when_exhausted='...'"
        )

    def _finish(self, request: ModelRequest, prepared: _Prepared) -> ModelResponse:
        response, output_tokens = prepared.response, prepared.output_tokens
        text, calls, finish = response.text, response.tool_calls, response.finish_reason
        if calls and not request.tools:  # a request without tools cannot get tool calls
            calls, output_tokens = (), prepared.text_tokens
            finish = "stop" if finish == "tool_calls" else finish
        scripted = response.usage
        input_tokens = scripted.input_tokens or request.input_tokens_estimate or (
            sum(estimate_message_tokens(m) for m in request.messages)
            + estimate_tools_tokens(request.tools)
        )
        cap = request.max_output_tokens
        if cap is not None and output_tokens > cap:
            output_tokens, calls, finish = cap, (), "length"
            text = text[: cap * 4]
        usage = Usage(input_tokens, output_tokens, min(scripted.cached_input_tokens, input_tokens))
        return ModelResponse(text, calls, usage, response.model or self._name, finish)


def model_turns(messages: Sequence[Message]) -> int:
    """The model's turns among ``messages``: its assistant messages, a strategy's planned calls
    (LLM+P) not counted, since they do not move the script on."""
    turns = list(map(_ROLE, messages)).count("assistant")
    if turns:  # (only a message with calls can be a planned turn: the rest are not asked)
        turns -= sum(map(is_planned_turn, filter(_CALLS, messages)))
    return turns


@dataclass(frozen=True, slots=True)
class _Place:
    """How far a model counted one conversation log: its first ``length`` messages hold
    ``turns`` of the model's turns."""

    log: weakref.ref[AppendOnlyLog[Message]]
    length: int
    turns: int


def _forget(places: dict[int, _Place], key: int, ref: weakref.ref[AppendOnlyLog[Message]]) -> None:
    """A log is gone: drop what was remembered of it (unless its id is already another's)."""
    place = places.get(key)
    if place is not None and place.log is ref:
        places.pop(key, None)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A script item made ready once: call ids filled in, output size and finish reason set."""

    response: ModelResponse
    output_tokens: int
    text_tokens: int


def _prepare(item: ScriptItem, turn: int) -> _Prepared:
    response = ModelResponse(text=item) if isinstance(item, str) else item
    calls = tuple(c if c.id else replace(c, id=f"call_{turn + 1}_{i + 1}")
                  for i, c in enumerate(response.tool_calls))
    text_tokens = estimate_text_tokens(response.text)
    output_tokens = response.usage.output_tokens or (
        text_tokens + sum(estimate_message_tokens(Message.assistant("", (c,))) for c in calls))
    finish = response.finish_reason
    if calls and finish == "stop":
        finish = "tool_calls"
    if not calls and finish == "tool_calls":
        finish = "stop"
    prepared = ModelResponse(response.text, calls, response.usage, response.model, finish)
    return _Prepared(prepared, output_tokens, response.usage.output_tokens or text_tokens)


FakeModel = ScriptedModel
"""Another name of ``ScriptedModel``, for those who look for a fake."""
