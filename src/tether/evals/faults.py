"""Seeded faults for tools and providers: what the world does to an agent on a bad day.

Why: an agent that finishes only when every call succeeds will fail in production at the rate
its tools and provider fail. These wrappers make failures happen at a chosen rate, reproducibly
(each decision drawn from a seeded generator, in call order), so recovery and resilience can be
measured and compared. Decision: a faulty tool is still the same tool to the runtime — same
name, schema and declared metadata, same policy, same journal — only its outcome changes:
a transient error (the tool does not run), a timeout (reported at once as the runtime reports one,
without waiting the tool's timeout out), or malformed output (the tool runs; its result is
garbled). A faulty model raises the provider errors an SDK adapter raises (429, 503, timeout).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tether.errors import InvalidArgument
from tether.models.base import Model
from tether.models.errors import ErrorKind, ProviderError
from tether.models.pricing import Price
from tether.tools.base import Tool, ToolContext, ToolFailure, ToolWrapper
from tether.types import Message, ModelRequest, ModelResponse

TOOL_FAULTS = ("error", "timeout", "malformed")
PROVIDER_FAULTS = ("rate_limit", "server", "timeout")


def _check(rate: float, kinds: Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    if not 0 <= rate <= 1:
        raise InvalidArgument(f"a fault rate is between 0 and 1, got {rate!r}")
    unknown = [k for k in kinds if k not in known]
    if unknown or not kinds:
        raise InvalidArgument(f"fault kinds must be some of {', '.join(known)}; got {list(kinds)}")
    return tuple(kinds)


class FaultyTool(ToolWrapper):
    """``tool``, failing at ``rate`` with one of ``kinds`` (drawn from ``rng``)."""

    __slots__ = ("_rng", "injected", "kinds", "rate")

    def __init__(self, tool: Tool, rate: float, kinds: Sequence[str] = TOOL_FAULTS, *,
                 rng: random.Random) -> None:
        super().__init__(tool)
        self.kinds = _check(rate, kinds, TOOL_FAULTS)
        self.rate, self._rng = rate, rng
        self.injected: list[str] = []  # the faults injected so far, in order

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        if self._rng.random() >= self.rate:
            return await self.inner.invoke(arguments, context)
        kind = self._rng.choice(self.kinds)
        self.injected.append(kind)
        if kind == "error":
            raise ToolFailure(f"Error: {self.name!r} failed: ConnectionError: the service is "
                              "temporarily unavailable (503); try again")
        if kind == "timeout":
            raise ToolFailure(f"Error: {self.name!r} timed out after {self.meta.timeout:g}s",
                              status="timeout")
        output = str(await self.inner.invoke(arguments, context))
        cut = self._rng.randrange(0, max(1, len(output) // 2) + 1)
        return output[:cut] + '\x00{"err' + "#" * 3


class FaultyModel:
    """``model``, raising a provider error at ``rate`` before a call reaches it."""

    def __init__(self, model: Model, rate: float, kinds: Sequence[str] = PROVIDER_FAULTS, *,
                 rng: random.Random) -> None:
        self.kinds = _check(rate, kinds, PROVIDER_FAULTS)
        self.inner, self.rate, self._rng = model, rate, rng
        self.injected: list[str] = []

    def __repr__(self) -> str:
        return f"FaultyModel({self.inner!r}, rate={self.rate})"

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def price(self) -> Price | None:
        return self.inner.price

    def estimate_message_tokens(self, message: Message) -> int:
        return self.inner.estimate_message_tokens(message)

    def _maybe_fail(self) -> None:
        if self._rng.random() >= self.rate:
            return
        kind = self._rng.choice(self.kinds)
        self.injected.append(kind)
        status = {"rate_limit": 429, "server": 503, "timeout": None}[kind]
        raise ProviderError("injected fault", provider=self.name, kind=ErrorKind(kind),
                            status=status, retry_after=0.0 if kind == "rate_limit" else None)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self._maybe_fail()
        return await self.inner.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        self._maybe_fail()
        stream = getattr(self.inner, "stream", None)
        if stream is None:
            yield await self.inner.complete(request)
            return
        async for item in stream(request):
            yield item
