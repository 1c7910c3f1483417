"""The model seam: what the runtime needs from any model, and nothing more.

Decision: a model is an object with an async ``complete`` (and optionally ``stream``), a ``name``,
a ``price`` (``None`` when unknown, which fails closed under a cost budget) and a token estimator
the runtime uses to reserve before the call. Providers, retries and fallbacks live behind this
seam; the budget logic never learns which provider it is talking to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Protocol, runtime_checkable

from tether.errors import RunError
from tether.models.pricing import Price
from tether.types import Message, ModelRequest, ModelResponse, ToolSpec

# Deliberately pessimistic: about 4 characters per token for English text, rounded up, plus a fixed
# overhead per message for role and framing. Estimates feed reservations, so erring high is safe.
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4


class ModelError(RunError):
    """A model call failed in a way the run cannot continue from (after any retries)."""


class CallCancelled(ModelError):
    """The call was cancelled because the time budget ran out — raised by a replay of a recorded
    session (``rerun``), which cannot wait out the clock: the runtime treats it exactly as the
    time budget cancelling the call (charged its reservation, the run stopped for time)."""


def estimate_text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)  # rounded up


def estimate_message_tokens(message: Message) -> int:
    # (estimate_text_tokens inlined: this runs for every message of a thread's history)
    n = MESSAGE_OVERHEAD_TOKENS - (-len(message.content) // CHARS_PER_TOKEN)
    for call in message.tool_calls:
        n += MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(call.name)
        args = call.arguments
        n += estimate_text_tokens(args if isinstance(args, str) else repr(args))
    return n


def estimate_tools_tokens(tools: Iterable[ToolSpec]) -> int:
    return sum(
        MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(t.name + t.description + repr(t.parameters))
        for t in tools
    )


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a ModelRequest."""

    @property
    def name(self) -> str:
        """The model's name, in the journal and in price lookups."""
        ...

    @property
    def price(self) -> Price | None:
        """Its price per million tokens; None: unknown (a cost budget then needs
        ``Agent(price=...)``)."""
        ...

    def estimate_message_tokens(self, message: Message) -> int:
        """Upper-bound estimate of one message's input tokens (used for reservations)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The model's answer to ``request``: text, tool calls, or both, with the usage."""
        ...


def output_ceiling(model: object) -> int | None:
    """The output cap a model sends at most, whatever the runtime allows (its own
    ``max_output_tokens=``), or None. The runtime reserves no more than this and measures an
    overrun against the cap actually sent: the smaller of this and what the budget left."""
    ceiling = getattr(model, "output_ceiling", None)
    return ceiling if type(ceiling) is int and ceiling >= 1 else None


def context_window(model: object) -> int | None:
    """The most input tokens ``model`` takes (its ``context_window``, when it declares one), or
    None: what conversation compaction (``tether.runtime.context.compaction``) measures a request
    against when the recipe declares no window of its own."""
    window = getattr(model, "context_window", None)
    return window if type(window) is int and window >= 1 else None


# The message a compaction puts in place of the turns it replaced begins with these words and
# says how many turns it stands for, so a count of the model's turns stays right after it (the
# scripted model's cursor is that count).
COMPACTED = "[tether] Turns 1-"


def compacted_turns(message: Message) -> int:
    """How many turns of the conversation ``message`` stands for: N for the message a
    compaction left (``[tether] Turns 1-N ...``), else 0."""
    text = message.content
    if message.role != "user" or not text.startswith(COMPACTED):
        return 0
    digits = text[len(COMPACTED):].split(" ", 1)[0]
    return int(digits) if digits.isdigit() else 0


def min_answer_seconds(model: object) -> float:
    """The least time ``model`` takes to answer (its ``min_answer_seconds``, else 0): a call
    with less time left than this before its deadline is not started, since it could only be
    cancelled and charged for nothing."""
    floor = getattr(model, "min_answer_seconds", 0.0)
    return float(floor) if isinstance(floor, int | float) and floor > 0 else 0.0


def native_output(model: object, tools: bool) -> bool:
    """Whether ``model`` makes its answer follow a request's ``output_schema`` itself (a
    strict response format, a forced tool, a grammar) — for a request with tools when
    ``tools``. A model that says nothing does not: the schema then goes into the system
    prompt as instructions, and validation catches what the model gets wrong either way."""
    native = getattr(model, "native_output", None)
    return bool(native(tools)) if callable(native) else False


class StreamingModel(Model, Protocol):
    """A ``Model`` that can also stream its answer: a streaming run (``run_stream``,
    ``astream``) passes its text on as it arrives; from a model without ``stream`` it gets the
    answer whole."""
    def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Yield text deltas, then the complete ModelResponse last."""
        ...
