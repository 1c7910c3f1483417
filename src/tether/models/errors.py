"""Provider-neutral model errors: what went wrong, whether trying again can help, and when.

Decision: retry policy is decided on a small closed set of kinds (rate limit, server, connection,
timeout, bad request, auth, ...), never on a provider's exception classes. Adapters turn their
SDK's exceptions into a ``ProviderError`` with ``classify``; ``Resilient`` classifies whatever
reaches it the same way, so a user's own model raising raw ``openai``/``anthropic`` exceptions is
handled too. ``classify`` reads what both SDKs expose (``status_code``, ``response.headers``,
``body``, the class names of their connection and timeout errors) and imports neither.
Retry-After is honoured in its three forms: ``retry-after-ms``, seconds, and an HTTP date.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from tether.models.base import ModelError


class ErrorKind(enum.StrEnum):
    """What kind of failure a provider's error is (``ProviderError.kind``); ``Resilient`` retries
    the transient kinds (rate limit, server, connection, ...)."""
    RATE_LIMIT = "rate_limit"
    QUOTA = "quota"
    SERVER = "server"
    CONNECTION = "connection"
    TIMEOUT = "timeout"
    BAD_REQUEST = "bad_request"
    AUTH = "auth"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    CIRCUIT_OPEN = "circuit_open"
    INVALID_RESPONSE = "invalid_response"
    OTHER = "other"


RETRYABLE = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.CONNECTION,
                       ErrorKind.TIMEOUT})

_ADVICE = {
    ErrorKind.RATE_LIMIT: "the provider is rate limiting; Resilient(model) retries this, "
                          "honouring Retry-After, or lower the request rate",
    ErrorKind.QUOTA: "the account's quota or spend limit is exhausted; add credit or use "
                     "another key (retrying will not help)",
    ErrorKind.SERVER: "the provider failed or is overloaded; Resilient(model) retries this, "
                      "Fallback([...]) moves to another provider",
    ErrorKind.CONNECTION: "the provider could not be reached; check the network and base_url",
    ErrorKind.TIMEOUT: "the provider did not answer in time; raise the timeout or retry later",
    ErrorKind.BAD_REQUEST: "the provider rejected the request; the message above says which "
                           "field (retrying will not help)",
    ErrorKind.AUTH: "the API key was refused; check the key (argument, environment or .env)",
    ErrorKind.PERMISSION: "the key may not use this model or endpoint; check its permissions",
    ErrorKind.NOT_FOUND: "no such model or endpoint; check the model name and base_url",
    ErrorKind.CIRCUIT_OPEN: "calls are refused until the cool-down ends; Fallback([...]) can "
                            "route to another provider meanwhile",
    ErrorKind.INVALID_RESPONSE: "the provider's answer could not be used",
    ErrorKind.OTHER: "",
}

# error types a provider names in a body (Anthropic mid-stream errors arrive on an HTTP 200)
_BODY_TYPES = {
    "rate_limit_error": ErrorKind.RATE_LIMIT, "overloaded_error": ErrorKind.SERVER,
    "api_error": ErrorKind.SERVER, "timeout_error": ErrorKind.TIMEOUT,
    "invalid_request_error": ErrorKind.BAD_REQUEST, "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.PERMISSION, "not_found_error": ErrorKind.NOT_FOUND,
    "request_too_large": ErrorKind.BAD_REQUEST, "billing_error": ErrorKind.QUOTA,
}
_QUOTA_CODES = frozenset({"insufficient_quota", "contract_spend_limit_reached",
                          "enforced_spend_limit_reached", "billing_hard_limit_reached"})


class ProviderError(ModelError):
    """A model call failed; ``kind`` says how, ``retryable`` whether trying again can help, and
    ``retry_after`` how many seconds the provider asked to wait (None if it did not say)."""

    def __init__(self, detail: str, *, provider: str, kind: ErrorKind,
                 status: int | None = None, retry_after: float | None = None) -> None:
        status_text = f" (HTTP {status})" if status else ""
        advice = _ADVICE[kind]
        super().__init__(f"{provider}: {kind.value}{status_text}: {detail}"
                         + (f" — {advice}" if advice else ""))
        self.provider = provider
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        self.detail = detail

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE

    def __reduce__(self) -> tuple[Any, ...]:  # keyword-only arguments need help to unpickle
        return (_restore, (type(self), self.detail, self.provider, self.kind, self.status,
                           self.retry_after))


def _restore(cls: type[ProviderError], detail: str, provider: str, kind: ErrorKind,
             status: int | None, retry_after: float | None) -> ProviderError:
    return cls(detail, provider=provider, kind=kind, status=status, retry_after=retry_after)


def classify(exc: BaseException, *, provider: str = "model", secret: str | None = None,
             now: Callable[[], float] = time.time) -> ProviderError:
    """Describe any exception from a model call as a ProviderError (returned, not raised).

    ``secret`` (the API key) is scrubbed from the message, in case a provider quotes it.
    """
    if isinstance(exc, ProviderError):
        return exc
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    body = getattr(exc, "body", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    kind = _kind(exc, status, body)
    detail = _detail(exc, body)
    if secret:
        detail = detail.replace(secret, "****")
    retry_after = parse_retry_after(headers, now) if headers is not None else None
    return ProviderError(detail, provider=provider, kind=kind,
                         status=status if status and status >= 400 else None,
                         retry_after=retry_after)


def _kind(exc: BaseException, status: int | None, body: object) -> ErrorKind:
    names = {cls.__name__ for cls in type(exc).__mro__}
    error_type, code = _body_fields(body)
    if code in _QUOTA_CODES or status == 402:
        return ErrorKind.QUOTA
    if status is not None and status >= 400:
        return _status_kind(status)
    if error_type in _BODY_TYPES:
        return _BODY_TYPES[error_type]
    if "APITimeoutError" in names or isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return ErrorKind.TIMEOUT
    if "APIConnectionError" in names or isinstance(exc, ConnectionError | OSError):
        return ErrorKind.CONNECTION
    if isinstance(exc, ModelError):
        return ErrorKind.OTHER
    if "APIResponseValidationError" in names:
        return ErrorKind.INVALID_RESPONSE
    return ErrorKind.OTHER


def _status_kind(status: int) -> ErrorKind:
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status >= 500 or status == 409:  # the SDKs' own policies retry 409 (a lock timeout)
        return ErrorKind.SERVER
    if status == 408:
        return ErrorKind.TIMEOUT
    return {401: ErrorKind.AUTH, 403: ErrorKind.PERMISSION,
            404: ErrorKind.NOT_FOUND}.get(status, ErrorKind.BAD_REQUEST)


def _body_fields(body: object) -> tuple[str | None, str | None]:
    """(error type, error code) from an OpenAI or Anthropic error body, if present."""
    if not isinstance(body, Mapping):
        return None, None
    inner = body.get("error")
    err: Mapping[str, Any] = inner if isinstance(inner, Mapping) else body
    details = err.get("details")
    code = err.get("code") or (details.get("error_code") if isinstance(details, Mapping)
                               else None)
    error_type = err.get("type")
    return (error_type if isinstance(error_type, str) else None,
            code if isinstance(code, str) else None)


def _detail(exc: BaseException, body: object) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error")
        err = inner if isinstance(inner, Mapping) else body
        message = err.get("message")
        if isinstance(message, str) and message:
            return message
    text = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _header(headers: Any, name: str) -> str | None:
    value = headers.get(name) if hasattr(headers, "get") else None
    if value is None and isinstance(headers, Mapping):
        value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    return value if isinstance(value, str) else None


def parse_retry_after(headers: Any, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date.
    None when absent or unreadable; never negative."""
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):  # unreadable: fall back to retry-after
            return max(0.0, float(millis) / 1000)
    value = _header(headers, "retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN, inf
        return None
    return max(0.0, seconds)
