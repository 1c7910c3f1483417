"""Model adapters: the protocol, the scripted model, prices. Provider SDKs are lazy extras."""

from tether.models.base import Model, ModelError, StreamingModel
from tether.models.pricing import DEFAULT_CATALOG, Price, PriceCatalog
from tether.models.scripted import FakeModel, ScriptedModel

__all__ = [
    "DEFAULT_CATALOG",
    "FakeModel",
    "Model",
    "ModelError",
    "Price",
    "PriceCatalog",
    "ScriptedModel",
    "StreamingModel",
]
