"""AnthropicModel: Claude through the official ``anthropic`` SDK's Messages API.

Decision: the same thin, exact bridge as ``OpenAIModel``: native Messages formats
(``anthropic_format``), the SDK's async client with its own retries OFF (``max_retries=0``; retries
belong to ``Resilient``), SDK exceptions turned into provider-neutral ``ProviderError``s, the SDK
imported on first use only. The key comes from ``api_key=``, ``ANTHROPIC_API_KEY`` or a ``.env``
file; when tether finds one it passes it explicitly, so the SDK does not go looking in profile
files. ``max_tokens`` is required by the API: the runtime's clamped ``max_output_tokens`` is sent,
capped by ``max_output_tokens=`` (default 4096, which also applies when the runtime sets no
limit). Streaming reads the raw event stream rather than the SDK's accumulating helper, which
raises on tool input JSON it cannot parse; tether keeps such input as raw text for its gate.
With telemetry on, each request carries its span as the W3C ``traceparent`` header
(``provider.trace_headers``); without, no header is added. An output schema goes out as a
forced tool (``anthropic_format.output_tool``), whose call comes back as the answer's text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument
from tether.models.anthropic_format import (
    OUTPUT_TOOL,
    StreamAssembler,
    answer_of_output_tool,
    from_message,
    output_tool,
    placeholder_tools,
    to_native,
    to_tools,
)
from tether.models.clients import PerLoop
from tether.models.errors import ErrorKind, ProviderError, classify
from tether.models.keys import ApiKey, EnvFile, require_extra, setting, split_spec
from tether.models.pricing import Price
from tether.models.provider import (
    ProviderModel,
    checked_context_window,
    checked_min_answer_seconds,
    past_cap,
    trace_headers,
)
from tether.types import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

PROVIDER = "anthropic"
DEFAULT_MAX_OUTPUT_TOKENS = 4096
# framing the base estimate does not see: a tool_use block's id/type/input wrapper; a
# tool_result block's tool_use_id and wrapper
PER_CALL_TOKENS = 16
PER_RESULT_TOKENS = 12
# Anthropic adds a system prompt of its own when tools are declared (346 tokens for
# tool_choice auto/none on current models); counted with the system message, once per request
PER_REQUEST_TOKENS = 400


# tether's tool choices in the Messages API's shape (a tool's name: {"type": "tool", ...})
TOOL_CHOICE = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


class AnthropicModel(ProviderModel):
    """A tether Model on Anthropic's Messages API.

    Args:
        model: The model's name, optionally with its provider: ``"claude-3-5-haiku-latest"`` or
            ``"anthropic:claude-3-5-haiku-latest"``.
        api_key: The key. Default None: ``ANTHROPIC_API_KEY`` from the environment, else from
            ``env_file``. It appears in no repr and no error.
        base_url: The API's URL. Default None: ``ANTHROPIC_BASE_URL``, else the provider's own.
        price: Its price per million tokens. Default None: looked up (genai-prices, else
            tether's bundled table) on first use.
        client: An SDK client of your own, used as given (no key is read).
        timeout: Seconds an HTTP request may take.
        max_output_tokens: The ceiling on every call's output cap (the Messages API requires
            one).
        params: Extra request fields (``{"temperature": 0}``); the fields tether sets from the
            request are refused.
        env_file: The ``.env`` file keys and URLs are read from (never loaded into
            ``os.environ``; the environment wins). None reads none.
        min_answer_seconds: A call with less time left before the time budget's deadline is
            not started: it could only be cancelled and charged.
        context_window: The model's input limit in tokens, for ``Compaction``. Default None:
            unknown.
    """

    provider = PROVIDER
    per_call_tokens = PER_CALL_TOKENS
    per_result_tokens = PER_RESULT_TOKENS
    per_request_tokens = PER_REQUEST_TOKENS

    def __init__(
        self,
        model: str = "claude-3-5-haiku-latest",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        price: Price | None = None,
        client: AsyncAnthropic | None = None,
        timeout: float = 600.0,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        params: Mapping[str, Any] | None = None,
        env_file: EnvFile = ".env",
        min_answer_seconds: float = 0.0,
        context_window: int | None = None,
    ) -> None:
        self._model = split_spec(model, PROVIDER)
        self.min_answer_seconds = checked_min_answer_seconds(min_answer_seconds)
        self.context_window = checked_context_window(context_window)
        if max_output_tokens < 1:
            raise InvalidArgument("max_output_tokens must be >= 1: the Messages API requires a "
                                  "max_tokens for every call")
        self._price = price  # None: looked up on first use (tether.models.pricing)
        self._max_output_tokens = max_output_tokens
        self._params = dict(params or {})
        reserved = {"model", "messages", "system", "tools", "stream",
                    "max_tokens"} & self._params.keys()
        if reserved:
            raise InvalidArgument(f"params may not set {sorted(reserved)}: tether sets them from "
                                  "the request (use max_output_tokens= for the max_tokens ceiling)")
        self._base_url = setting("ANTHROPIC_BASE_URL", base_url, env_file)
        key: ApiKey | None = None
        if client is None:
            require_extra("anthropic", "anthropic")
            raw = setting("ANTHROPIC_API_KEY", api_key, env_file)
            if not raw:
                raise InvalidArgument("no Anthropic API key: set ANTHROPIC_API_KEY (in the "
                                      "environment or a .env file) or pass api_key=...")
            key = ApiKey(raw)
        self._key = key
        self._timeout = timeout
        if client is not None:  # the caller's client, with the SDK's retries off all the same
            client = client.with_options(max_retries=0)
        self._clients: PerLoop[AsyncAnthropic] = PerLoop(self._new_client, client)

    def _new_client(self) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        assert self._key is not None
        return AsyncAnthropic(api_key=self._key.get(), base_url=self._base_url,
                              timeout=self._timeout, max_retries=0)

    @property
    def output_ceiling(self) -> int:
        """The most ``max_tokens`` this model ever sends (``output_ceiling``)."""
        return self._max_output_tokens

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The body of the create call for ``request`` (without ``stream``)."""
        system, messages = to_native(request.messages)
        limit = request.max_output_tokens
        params: dict[str, Any] = {
            **self._params, "model": self._model, "messages": messages,
            "max_tokens": max(1, min(limit, self._max_output_tokens) if limit
                              else self._max_output_tokens),
        }
        if system is not None:
            params["system"] = system
        if request.output_schema is not None:
            self._with_output_tool(request, params)
        elif request.tools:
            params["tools"] = to_tools(request.tools)
            if request.tool_choice is not None:
                params["tool_choice"] = TOOL_CHOICE.get(request.tool_choice) or {
                    "type": "tool", "name": request.tool_choice}
        elif placeholders := placeholder_tools(messages):
            params["tools"], params["tool_choice"] = placeholders, {"type": "none"}
        else:
            params.pop("tool_choice", None)  # only with tools
        return params

    def _with_output_tool(self, request: ModelRequest, params: dict[str, Any]) -> None:
        """Declare the output schema as a tool the model must call: the only tool, named in
        ``tool_choice``; with the agent's tools, ``any`` (a tool, the output one included),
        unless the run asked for a choice of its own."""
        if any(t.name == OUTPUT_TOOL for t in request.tools):
            raise ProviderError(f"a tool is named {OUTPUT_TOOL!r}, the name tether gives the "
                                "output schema's tool on Anthropic; rename the tool",
                                provider=self.name, kind=ErrorKind.BAD_REQUEST)
        assert request.output_schema is not None
        params["tools"] = [*to_tools(request.tools),
                           output_tool(request.output_schema)]
        choice = request.tool_choice
        if choice is not None:
            params["tool_choice"] = TOOL_CHOICE.get(choice) or {"type": "tool", "name": choice}
        else:
            params["tool_choice"] = ({"type": "any"} if request.tools
                                     else {"type": "tool", "name": OUTPUT_TOOL})

    def native_output(self, tools: bool) -> bool:
        """An output schema is a forced tool here, with or without other tools."""
        return True

    def _error(self, exc: Exception) -> ProviderError:
        return classify(exc, provider=self.name,
                        secret=self._key.get() if self._key is not None else None)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        from anthropic import AnthropicError

        client = self._clients.get()
        try:
            message = await client.messages.create(**self.request_params(request),
                                                   **trace_headers(request))
        except AnthropicError as exc:
            raise self._error(exc) from None  # the SDK's own text may hold the key
        response = from_message(message)
        return response if request.output_schema is None else answer_of_output_tool(response)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Yield text deltas as they arrive, then the complete ModelResponse (tool input
        assembled from its JSON fragments, usage from ``message_start`` and ``message_delta``).
        A server that streams far past the ``max_tokens`` it was sent is cut off
        (``past_cap``)."""
        from anthropic import AnthropicError

        client = self._clients.get()
        assembler = StreamAssembler()
        params = self.request_params(request)
        try:
            stream = await client.messages.create(**params, stream=True,
                                                  **trace_headers(request))
            async with stream:
                async for event in stream:
                    delta = assembler.feed(event)
                    if delta:
                        yield delta
                    if past_cap(assembler.chars, params["max_tokens"]):
                        assembler.cut()
                        break
        except AnthropicError as exc:
            raise self._error(exc) from None  # the SDK's own text may hold the key
        if not assembler.done:
            raise ProviderError("the stream ended before the model finished its turn",
                                provider=self.name, kind=ErrorKind.CONNECTION)
        response = assembler.response()
        yield response if request.output_schema is None else answer_of_output_tool(response)

    async def aclose(self) -> None:
        """Close this event loop's client (a client passed in is the caller's to close)."""
        client = self._clients.pop()
        if client is not None:
            await client.close()
