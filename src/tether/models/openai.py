"""OpenAIModel: OpenAI, and any OpenAI-compatible server, through the official ``openai`` SDK.

Decision: the adapter is a thin, exact bridge. It speaks Chat Completions natively
(``openai_format``), uses the SDK's async client with the SDK's own retries OFF
(``max_retries=0``) so every attempt is one call the runtime sees and pays for — retries belong
to ``Resilient``, which can honour budgets and deadlines — and turns SDK exceptions into
provider-neutral ``ProviderError``s. The SDK is an extra, imported on first use: ``import
tether.models`` never loads it. The key comes from ``api_key=``, ``OPENAI_API_KEY`` or a ``.env``
file and never appears in a repr or an error; the base URL from ``base_url=`` or
``OPENAI_BASE_URL``, which is how any OpenAI-compatible server (vLLM, Ollama, LiteLLM, ...) is
used; ``compat=`` names the server's kind (``openai_compat``: the fields it reads for the output
cap, the tool choice it needs). ``tool_choice`` and ``parallel_tool_calls`` go out only with
tools: OpenAI refuses them on the tool-less wrap-up turn. With telemetry on, each request
carries its span as the W3C ``traceparent`` header (``provider.trace_headers``); without, no
header is added. A request with an output schema carries it as ``response_format`` where the
server kind takes one (``openai_compat``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import InvalidArgument
from tether.models.clients import PerLoop
from tether.models.errors import ErrorKind, ProviderError, classify
from tether.models.keys import ApiKey, EnvFile, require_extra, setting, split_spec
from tether.models.openai_compat import profile, tool_choice
from tether.models.openai_format import (
    StreamAssembler,
    from_completion,
    response_format,
    to_messages,
    to_tools,
)
from tether.models.pricing import Price
from tether.models.provider import (
    ProviderModel,
    checked_chars_per_token,
    checked_context_window,
    checked_min_answer_seconds,
    past_cap,
    trace_headers,
)
from tether.types import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from openai import AsyncOpenAI

PROVIDER = "openai"
# framing the base estimate does not see: a call's id/type/function wrapper; a result's id
PER_CALL_TOKENS = 12
PER_RESULT_TOKENS = 8
# the reply priming and the framing of the tool declarations, once per request
PER_REQUEST_TOKENS = 16


class OpenAIModel(ProviderModel):
    """A tether Model on OpenAI's Chat Completions API (or any compatible server).

    Args:
        model: The model's name, optionally with its provider: ``"gpt-4o-mini"`` or
            ``"openai:gpt-4o-mini"``.
        api_key: The key. Default None: ``OPENAI_API_KEY`` from the environment, else from
            ``env_file``. It appears in no repr and no error.
        base_url: The API's URL. Default None: ``OPENAI_BASE_URL``, else the provider's own.
        price: Its price per million tokens. Default None: looked up (genai-prices, else
            tether's bundled table) on first use.
        client: An SDK client of your own, used as given (no key is read).
        organization: The OpenAI organization the calls are billed to.
        timeout: Seconds an HTTP request may take.
        max_output_tokens: A ceiling on every call's output cap. Default None: the budget's
            cap alone.
        params: Extra request fields (``{"temperature": 0}``); the fields tether sets from the
            request are refused.
        env_file: The ``.env`` file keys and URLs are read from (never loaded into
            ``os.environ``; the environment wins). None reads none.
        min_answer_seconds: A call with less time left before the time budget's deadline is
            not started: it could only be cancelled and charged.
        context_window: The model's input limit in tokens, for ``Compaction``. Default None:
            unknown.
        compat: The server's kind, for the fields it reads (``"openai"``, ``"llama.cpp"``,
            ``"vllm"``, ``"ollama"``, ``"generic"``). Default ``"auto"``: ``"openai"`` for
            OpenAI's own API, ``"generic"`` for any other ``base_url``.
        chars_per_token: Characters per token the runtime's estimate assumes (at most the
            default four, which the reservations' safety rests on).
    """

    provider = PROVIDER
    per_call_tokens = PER_CALL_TOKENS
    per_result_tokens = PER_RESULT_TOKENS
    per_request_tokens = PER_REQUEST_TOKENS

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        price: Price | None = None,
        client: AsyncOpenAI | None = None,
        organization: str | None = None,
        timeout: float = 600.0,
        max_output_tokens: int | None = None,
        compat: Literal["auto", "openai", "llama.cpp", "vllm", "ollama", "generic"] = "auto",
        params: Mapping[str, Any] | None = None,
        env_file: EnvFile = ".env",
        min_answer_seconds: float = 0.0,
        context_window: int | None = None,
        chars_per_token: float | None = None,
    ) -> None:
        self._model = split_spec(model, PROVIDER)
        self.min_answer_seconds = checked_min_answer_seconds(min_answer_seconds)
        self.context_window = checked_context_window(context_window)
        self._chars_per_token = checked_chars_per_token(chars_per_token)
        if max_output_tokens is not None and max_output_tokens < 1:
            raise InvalidArgument("max_output_tokens must be >= 1 (or None for no ceiling)")
        self._price = price  # None: looked up on first use (tether.models.pricing)
        self._max_output_tokens = max_output_tokens
        self._params = dict(params or {})
        reserved = {"model", "messages", "tools", "stream", "stream_options",
                    "max_tokens", "max_completion_tokens"} & self._params.keys()
        if reserved:
            raise InvalidArgument(f"params may not set {sorted(reserved)}: tether sets them from "
                                  "the request (use max_output_tokens= for a ceiling)")
        self._base_url = setting("OPENAI_BASE_URL", base_url, env_file)
        self._compat = profile(compat, self._base_url)
        key: ApiKey | None = None
        if client is None:
            require_extra("openai", "openai")
            raw = setting("OPENAI_API_KEY", api_key, env_file)
            if not raw:
                raise InvalidArgument(
                    "no OpenAI API key: set OPENAI_API_KEY (in the environment or a .env file) "
                    "or pass api_key=...; a local OpenAI-compatible server that needs no key "
                    "still needs a placeholder, e.g. api_key='unused'")
            key = ApiKey(raw)
        self._key = key
        self._timeout = timeout
        self._organization = organization
        if client is not None:  # the caller's client, with the SDK's retries off all the same
            client = client.with_options(max_retries=0)
        self._clients: PerLoop[AsyncOpenAI] = PerLoop(self._new_client, client)

    def _new_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        assert self._key is not None
        return AsyncOpenAI(api_key=self._key.get(), base_url=self._base_url,
                           organization=self._organization, timeout=self._timeout,
                           max_retries=0)

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The body of the create call for ``request`` (without ``stream``)."""
        params: dict[str, Any] = {**self._params, "model": self._model,
                                  "messages": to_messages(request.messages)}
        if request.tools:
            params["tools"] = to_tools(request.tools)
            choice = request.tool_choice or self._compat.tool_choice
            if choice is not None and (request.tool_choice or "tool_choice" not in params):
                params["tool_choice"] = tool_choice(choice, self._compat,
                                                    [t.name for t in request.tools], self.name)
        else:
            params.pop("tool_choice", None)
            params.pop("parallel_tool_calls", None)
        limit = self._limit(request)
        if limit is not None:
            params.update(dict.fromkeys(self._compat.cap_fields, limit))
        form = self._compat.output
        if request.output_schema is not None and form is not None:
            params["response_format"] = response_format(request.output_schema, form)
        return params

    def native_output(self, tools: bool) -> bool:
        """Whether this server follows an output schema itself (``openai_compat``)."""
        return self._compat.native_output(tools)

    @property
    def output_ceiling(self) -> int | None:
        """The most ``max_output_tokens`` this model ever sends (``output_ceiling``)."""
        return self._max_output_tokens

    def _limit(self, request: ModelRequest) -> int | None:
        limit = request.max_output_tokens
        if self._max_output_tokens is not None:
            limit = min(limit, self._max_output_tokens) if limit else self._max_output_tokens
        return None if limit is None else max(1, limit)

    def _input_estimate(self, request: ModelRequest) -> int:
        if request.input_tokens_estimate is not None:
            return request.input_tokens_estimate
        return sum(self.estimate_message_tokens(m) for m in request.messages)

    def _error(self, exc: Exception) -> ProviderError:
        return classify(exc, provider=self.name,
                        secret=self._key.get() if self._key is not None else None)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        from openai import OpenAIError

        client = self._clients.get()
        try:
            completion = await client.chat.completions.create(**self.request_params(request),
                                                              **trace_headers(request))
        except OpenAIError as exc:
            raise self._error(exc) from None  # the SDK's own text may hold the key
        try:
            return from_completion(completion, self._input_estimate(request))
        except ValueError as exc:
            raise ProviderError(str(exc), provider=self.name,
                                kind=ErrorKind.INVALID_RESPONSE) from exc

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Yield text deltas as they arrive, then the complete ModelResponse (tool calls
        assembled from their fragments, usage from the stream's final chunk). A server that
        streams far past the output cap it was sent is cut off (``past_cap``)."""
        from openai import OpenAIError

        client = self._clients.get()
        assembler = StreamAssembler(self._input_estimate(request))
        cap = self._limit(request)
        try:
            stream = await client.chat.completions.create(
                **self.request_params(request), stream=True,
                stream_options={"include_usage": True}, **trace_headers(request))
            async with stream:
                async for chunk in stream:
                    delta = assembler.feed(chunk)
                    if delta:
                        yield delta
                    if past_cap(assembler.chars, cap):
                        assembler.cut()
                        break
        except OpenAIError as exc:
            raise self._error(exc) from None  # the SDK's own text may hold the key
        if assembler.finish is None:
            raise ProviderError("the stream ended before the model finished its turn",
                                provider=self.name, kind=ErrorKind.CONNECTION)
        yield assembler.response()

    async def aclose(self) -> None:
        """Close this event loop's client (a client passed in is the caller's to close)."""
        client = self._clients.pop()
        if client is not None:
            await client.close()
