"""What every provider adapter shares: its name, its price, its token estimate, a safe repr.

Decision: the adapters differ in wire format and SDK, not in how they present themselves to the
runtime, so that part is written once. The repr never shows a key, and shows a base URL without
its credentials or query. The W3C ``traceparent`` header a request carries with telemetry on is
built here too (``trace_headers``): re-serialized from a strict parse, so nothing but a valid
header value ever reaches the wire, and nothing at all when the request has none.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from tether.errors import InvalidArgument
from tether.models.base import CHARS_PER_TOKEN
from tether.models.estimate import provider_message_tokens
from tether.models.pricing import Price, price_for
from tether.tracing import TraceParent
from tether.types import Message, ModelRequest
from tether.urls import redact_url


def past_cap(output_chars: int, cap: int | None) -> bool:
    """Whether a stream has run so far past the output cap it was sent that the server is not
    keeping to it: stop reading. Counted loosely (twice the cap, in characters at the estimate's
    rate, plus slack) so an honest server whose tokens are long is never cut short; the runtime
    still sees the overrun in the usage and stops the run."""
    return cap is not None and output_chars > (2 * cap + 16) * CHARS_PER_TOKEN


def trace_headers(request: ModelRequest) -> dict[str, Any]:
    """The SDK keyword that sends ``request``'s span as the ``traceparent`` HTTP header
    (``extra_headers``, per request), or nothing when it has none: telemetry off costs nothing
    and sends nothing. A value that is not a valid W3C traceparent is not sent either."""
    parent = TraceParent.parse(request.traceparent) if request.traceparent else None
    return {} if parent is None else {"extra_headers": {"traceparent": parent.header()}}


class ProviderModel:
    provider: ClassVar[str]
    per_call_tokens: ClassVar[int]  # framing of one tool call in this provider's format
    per_result_tokens: ClassVar[int]  # framing of one tool result
    per_request_tokens: ClassVar[int]  # framing of a request (e.g. a hidden tool prompt)

    _model: str
    _price: Price | None  # given to the adapter; else looked up when first asked for
    _base_url: str | None
    # characters per token the estimate assumes: 4 suits large vocabularies on English text; a
    # small model's tokenizer needs fewer (the estimate scales up, erring high)
    _chars_per_token: float = CHARS_PER_TOKEN
    # the least time a call takes to answer (``models.base.min_answer_seconds``): set per model
    # from what was measured; 0 makes no claim
    min_answer_seconds: float = 0.0
    # the most input tokens the model takes (``models.base.context_window``), when given: what
    # compaction measures requests against; None makes no claim
    context_window: int | None = None

    def __repr__(self) -> str:
        where = f", base_url={redact_url(self._base_url)!r}" if self._base_url else ""
        return f"{type(self).__name__}({self._model!r}{where})"

    @property
    def name(self) -> str:
        return f"{self.provider}:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    @property
    def price(self) -> Price | None:
        """The price given, else the model's from genai-prices or the bundled table (looked up
        on first use, so building a model loads no price data)."""
        if self._price is None:
            self._price = price_for(self._model, self.provider)[0]
        return self._price

    def estimate_message_tokens(self, message: Message) -> int:
        n = provider_message_tokens(message, per_call=self.per_call_tokens,
                                    per_result=self.per_result_tokens,
                                    per_request=self.per_request_tokens)
        if self._chars_per_token < CHARS_PER_TOKEN:
            n = math.ceil(n * CHARS_PER_TOKEN / self._chars_per_token)
        return n


def checked_min_answer_seconds(value: float) -> float:
    """A model's ``min_answer_seconds=`` checked: a finite number of seconds, at least 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 <= value < math.inf):
        raise InvalidArgument(f"min_answer_seconds must be a finite number >= 0, got {value!r}")
    return float(value)


def checked_context_window(value: int | None) -> int | None:
    """A model's ``context_window=`` checked: a whole number of tokens >= 1, or None."""
    if value is not None and (type(value) is not int or value < 1):
        raise InvalidArgument(f"context_window must be a whole number of tokens >= 1 (or None), "
                              f"got {value!r}")
    return value


def checked_chars_per_token(value: float | None) -> float:
    """A model's ``chars_per_token=`` checked: None is the default four; at most four (a
    larger value would let the estimate fall below the default's, which the reservations'
    safety rests on)."""
    if value is None:
        return CHARS_PER_TOKEN
    if not 0 < value <= CHARS_PER_TOKEN:
        raise InvalidArgument(f"chars_per_token must be in (0, {CHARS_PER_TOKEN}], got {value!r}")
    return float(value)
