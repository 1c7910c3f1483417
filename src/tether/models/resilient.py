"""Resilient and Fallback: retries by error class, a total deadline, a breaker, fallback chains.

Decision: resilience is a Model wrapping Models, so the runtime's chokepoint sees one call per
``ask_model`` whatever happens inside, and the budget logic never learns about retries. The
adapters' SDK retries are off; here, an error is retried only if its kind says trying again can
help (rate limit, server, connection, timeout — never 400/401/403/404; and not a server error
that repeats word for word on the same request, which is the request failing, not the server
being busy), after the provider's Retry-After if it gave one, else exponential backoff with
jitter. All attempts and waits share one total ``deadline``; a wait that would outlast it is not
started (the error is raised at once, saying so). Cancellation is never caught: when the
session's time budget ends, the attempt in flight and any wait are cancelled immediately.
``Fallback`` tries each member in order, each with its own provider's native formats (it only
calls their ``complete``).

Budget: the price of a wrapper is the dearest of its members, field by field, and its estimate
the largest, so a reservation covers whichever member answers (the charge after the call uses
that price too, so a cheaper member's answer is over-charged, never under-charged). A member
without a price makes the wrapper's price unknown, which fails closed under a cost budget.
Streams are retried, or fall back, only until their first item: once text has been handed on,
a retry would repeat it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tether.errors import InvalidArgument, WrongType
from tether.models.base import (
    Model,
    context_window,
    min_answer_seconds,
    native_output,
    output_ceiling,
)
from tether.models.breaker import CircuitBreaker
from tether.models.errors import ErrorKind, ProviderError, classify
from tether.models.pricing import Price
from tether.types import Message, ModelRequest, ModelResponse

T = TypeVar("T")
Item = str | ModelResponse


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry ``n`` (1-based): ``initial * multiplier**(n-1)``, at most ``maximum``,
    spread by ±``jitter`` (a fraction) so many clients do not retry in step."""

    initial: float = 0.5
    multiplier: float = 2.0
    maximum: float = 20.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if not (self.initial >= 0 and self.multiplier >= 1 and self.maximum >= 0
                and 0 <= self.jitter <= 1):
            raise InvalidArgument("Backoff needs initial >= 0, multiplier >= 1, maximum >= 0 and "
                                  "0 <= jitter <= 1")

    def delay(self, retry: int, rng: random.Random) -> float:
        base = min(self.maximum, self.initial * self.multiplier ** max(0, retry - 1))
        return max(0.0, base * (1 + self.jitter * (2 * rng.random() - 1)))


# server errors that say the server is busy or away for a while: these repeat word for word and
# still pass, so a repeat of them is no sign that the request itself is what fails
TRANSIENT_STATUS = frozenset({502, 503, 504, 529})


def deterministic(before: ProviderError, now: ProviderError) -> bool:
    """Whether two failures of one request show that it fails every time: the same server
    error (not a busy or unavailable one), with the same message, twice."""
    return (now.kind is ErrorKind.SERVER and before.kind is now.kind
            and before.status == now.status and now.status not in TRANSIENT_STATUS
            and bool(now.detail) and before.detail == now.detail)


def dearest(prices: Sequence[Price | None]) -> Price | None:
    """A price at least as high as every member's, field by field; None if any is unknown."""
    if any(p is None for p in prices) or not prices:
        return None
    known = [p.worst() if p.tiers else p for p in prices if p is not None]  # tiers: flattened
    return Price(max(p.input for p in known), max(p.output for p in known),
                 max(p.input if p.cached_input is None else p.cached_input for p in known),
                 max(p.input if p.cache_write is None else p.cache_write for p in known))


async def _stream_of(model: Model, request: ModelRequest) -> AsyncGenerator[Item, None]:
    """The model's stream, or its complete() as one text item then the response."""
    stream = getattr(model, "stream", None)
    if stream is not None:
        async for item in stream(request):
            yield item
        return
    response = await model.complete(request)
    if response.text:
        yield response.text
    yield response


class Resilient:
    """Retry ``model`` by error class within a total deadline, behind a circuit breaker."""

    def __init__(self, model: Model, *, retries: int = 3, deadline: float | None = 60.0,
                 backoff: Backoff | None = None, breaker: CircuitBreaker | bool = True,
                 attempt_timeout: float | None = None) -> None:
        if retries < 0:
            raise InvalidArgument("retries must be >= 0")
        if deadline is not None and not deadline > 0:
            raise InvalidArgument("deadline must be a positive number of seconds, or None")
        if attempt_timeout is not None and not attempt_timeout > 0:
            raise InvalidArgument("attempt_timeout must be a positive number of seconds, or None")
        self._model = model
        self._retries = retries
        self._deadline = deadline
        self._backoff = backoff or Backoff()
        self._breaker = (CircuitBreaker() if breaker is True else
                         None if breaker is False else breaker)
        self._attempt_timeout = attempt_timeout
        self._rng = random.Random()

    def __repr__(self) -> str:
        return (f"Resilient({self._model!r}, retries={self._retries}, "
                f"deadline={self._deadline}, breaker={self._breaker!r})")

    @property
    def name(self) -> str:
        return f"resilient({self._model.name})"

    @property
    def price(self) -> Price | None:
        return self._model.price

    @property
    def breaker(self) -> CircuitBreaker | None:
        return self._breaker

    @property
    def output_ceiling(self) -> int | None:
        return output_ceiling(self._model)

    @property
    def min_answer_seconds(self) -> float:
        return min_answer_seconds(self._model)

    @property
    def context_window(self) -> int | None:
        return context_window(self._model)

    def native_output(self, tools: bool) -> bool:
        return native_output(self._model, tools)

    def estimate_message_tokens(self, message: Message) -> int:
        return self._model.estimate_message_tokens(message)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        async def attempt() -> ModelResponse:
            return await self._model.complete(request)
        return await self._run(attempt)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Item]:
        """The wrapped model's stream; retried until its first item, and all of it within the
        deadline (a stream that stalls half-way is cut off when the deadline passes)."""
        streams: list[AsyncGenerator[Item, None]] = []
        loop = asyncio.get_running_loop()
        ends = None if self._deadline is None else loop.time() + self._deadline

        async def first() -> Item:
            streams.append(_stream_of(self._model, request))
            return await anext(streams[-1])

        try:
            yield await self._run(first)
            rest = streams[-1]
            while True:
                try:
                    if ends is None:
                        item = await anext(rest)
                    else:
                        item = await asyncio.wait_for(anext(rest), max(0.0, ends - loop.time()))
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise ProviderError(f"the stream stalled past the {self._deadline:g}s "
                                        "deadline", provider=self.name,
                                        kind=ErrorKind.TIMEOUT) from None
                yield item
        finally:
            for stream in streams:  # failed ones are finished already; this closes the last
                await stream.aclose()

    async def _run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        ends = None if self._deadline is None else loop.time() + self._deadline
        tries = 0
        last: ProviderError | None = None
        scope = asyncio.timeout_at(ends)
        try:
            async with scope:
                while True:
                    tries += 1
                    try:
                        return await self._once(attempt)
                    except ProviderError as error:
                        if error.kind is ErrorKind.CIRCUIT_OPEN or not error.retryable:
                            raise
                        if last is not None and deterministic(last, error):
                            raise self._gave_up(error, f"attempt {tries} failed exactly as the "
                                                "one before (same status, same message): the "
                                                "server fails on this request, not for a "
                                                "while, so it was not retried again") from error
                        last = error
                        if tries > self._retries:
                            raise self._gave_up(error, f"{tries} attempts failed") from error
                        wait = (error.retry_after if error.retry_after is not None
                                else self._backoff.delay(tries, self._rng))
                        if ends is not None and loop.time() + wait >= ends:
                            left = max(0.0, ends - loop.time())
                            raise self._gave_up(error, f"attempt {tries} failed and the next "
                                                f"would start after {wait:.1f}s, beyond the "
                                                f"{left:.1f}s left of the {self._deadline}s "
                                                "deadline") from error
                        await asyncio.sleep(wait)
        except TimeoutError as exc:
            if not scope.expired():
                raise
            expired = ProviderError(f"no answer within the {self._deadline}s deadline "
                                    f"({tries} attempt{'s' if tries > 1 else ''})"
                                    + (f"; last failure: {last.detail}" if last else ""),
                                    provider=self._model.name, kind=ErrorKind.TIMEOUT)
            if self._breaker is not None:
                self._breaker.failure(expired)
            raise expired from exc

    async def _once(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """One attempt behind the breaker; every failure comes out as a ProviderError."""
        if self._breaker is not None:
            self._breaker.acquire(self._model.name)
        limit = asyncio.timeout(self._attempt_timeout)
        try:
            async with limit:
                result = await attempt()
        except asyncio.CancelledError:
            if self._breaker is not None:
                self._breaker.release()
            raise
        except Exception as exc:
            error = classify(exc, provider=self._model.name)
            if isinstance(exc, TimeoutError) and limit.expired():
                error = ProviderError(f"the attempt took longer than {self._attempt_timeout}s",
                                      provider=self._model.name, kind=ErrorKind.TIMEOUT)
            if self._breaker is not None:
                self._breaker.failure(error)
            if error is exc:
                raise
            raise error from exc
        if self._breaker is not None:
            self._breaker.success()
        return result

    @staticmethod
    def _gave_up(error: ProviderError, why: str) -> ProviderError:
        return ProviderError(f"{why}; last failure: {error.detail}", provider=error.provider,
                             kind=error.kind, status=error.status,
                             retry_after=error.retry_after)


class Fallback:
    """Try each model in order; the first answer wins. Each member speaks its own provider's
    formats; wrap members in ``Resilient`` to retry each before moving on."""

    def __init__(self, models: Sequence[Model]) -> None:
        if not models:
            raise InvalidArgument("Fallback needs at least one model")
        for m in models:
            if not isinstance(m, Model):
                raise WrongType(f"{m!r} is not a tether Model")
        self._models = tuple(models)

    def __repr__(self) -> str:
        return f"Fallback({list(self._models)!r})"

    @property
    def name(self) -> str:
        return "fallback(" + ", ".join(m.name for m in self._models) + ")"

    @property
    def models(self) -> tuple[Model, ...]:
        return self._models

    @property
    def price(self) -> Price | None:
        return dearest([m.price for m in self._models])

    def estimate_message_tokens(self, message: Message) -> int:
        return max(m.estimate_message_tokens(message) for m in self._models)

    @property
    def output_ceiling(self) -> int | None:
        """The largest of the models' ceilings (any of them may answer), None if one has none."""
        ceilings = [output_ceiling(m) for m in self._models]
        return None if None in ceilings else max(c for c in ceilings if c is not None)

    @property
    def min_answer_seconds(self) -> float:
        """The least of the models' floors: the fastest of them may be the one that answers."""
        return min(min_answer_seconds(m) for m in self._models)

    @property
    def context_window(self) -> int | None:
        """The smallest of the models' windows (any of them may be sent the request), None
        if one declares none."""
        windows = [context_window(m) for m in self._models]
        return None if None in windows else min(w for w in windows if w is not None)

    def native_output(self, tools: bool) -> bool:
        """Only when every model follows an output schema itself (any of them may answer)."""
        return all(native_output(m, tools) for m in self._models)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        failures: list[ProviderError] = []
        for model in self._models:
            try:
                return await model.complete(request)
            except Exception as exc:
                failures.append(classify(exc, provider=model.name))
        raise self._all_failed(failures)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Item]:
        """The first member whose stream yields its first item; later failures propagate."""
        failures: list[ProviderError] = []
        for model in self._models:
            stream = _stream_of(model, request)
            try:
                first = await anext(stream)
            except Exception as exc:
                failures.append(classify(exc, provider=model.name))
                continue
            try:
                yield first
                async for item in stream:
                    yield item
            finally:
                await stream.aclose()
            return
        raise self._all_failed(failures)

    def _all_failed(self, failures: list[ProviderError]) -> ProviderError:
        last = failures[-1]
        summary = "; ".join(f"{f.provider}: {f.kind.value}: {f.detail}" for f in failures)
        return ProviderError(f"all {len(failures)} models failed — {summary}",
                             provider=self.name, kind=last.kind, status=last.status,
                             retry_after=last.retry_after)
