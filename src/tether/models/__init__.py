"""Model adapters: the protocol, the scripted model, prices, providers and resilience.

Provider SDKs are lazy extras: ``import tether.models`` loads neither ``openai`` nor
``anthropic`` (nor their HTTP stack); ``OpenAIModel`` and ``AnthropicModel`` import their SDK when
they first make a call, and the names below load their modules on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports
from tether.models.base import Model, ModelError, StreamingModel
from tether.models.pricing import DEFAULT_CATALOG, Price, PriceCatalog
from tether.models.scripted import FakeModel, ScriptedModel

if TYPE_CHECKING:
    from tether.models.anthropic import AnthropicModel
    from tether.models.breaker import CircuitBreaker, CircuitState
    from tether.models.errors import ErrorKind, ProviderError
    from tether.models.openai import OpenAIModel
    from tether.models.resilient import Backoff, Fallback, Resilient

_WHERE = {
    "AnthropicModel": "tether.models.anthropic",
    "OpenAIModel": "tether.models.openai",
    "Backoff": "tether.models.resilient",
    "Fallback": "tether.models.resilient",
    "Resilient": "tether.models.resilient",
    "CircuitBreaker": "tether.models.breaker",
    "CircuitState": "tether.models.breaker",
    "ErrorKind": "tether.models.errors",
    "ProviderError": "tether.models.errors",
}

__all__ = [
    "DEFAULT_CATALOG",
    "AnthropicModel",
    "Backoff",
    "CircuitBreaker",
    "CircuitState",
    "ErrorKind",
    "FakeModel",
    "Fallback",
    "Model",
    "ModelError",
    "OpenAIModel",
    "Price",
    "PriceCatalog",
    "ProviderError",
    "Resilient",
    "ScriptedModel",
    "StreamingModel",
]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
