"""What a provider adapter reads before its first call: its model name, SDK, key and base URL.

Decision: an explicit argument wins, then the process environment, then a ``.env`` file (the one
in the working directory unless ``env_file=`` names another; ``None`` reads none). The file is
read, never loaded: nothing is written into ``os.environ``, so reading a key for one model does
not hand it to every library and subprocess of the process. It is read by python-dotenv's
``dotenv_values`` — the de-facto standard parser (quotes, trailing comments, ``export``,
multi-line values, escapes) that the provider extras bring — rather than by a parser of our own
that misreads what it does not know. The key itself is held in an ``ApiKey`` whose repr and str
are masked.
A ``"provider:model"`` spec names the provider only when the prefix is a known one, so model
names with colons (``"llama3.1:8b"``) pass through whole.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import final

from tether.errors import InvalidArgument, MissingExtra, WrongType, install_command

EnvFile = str | os.PathLike[str] | None


@final
class ApiKey:
    """An API key that does not show itself: ``repr``/``str`` print ``ApiKey('****')``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not value:
            raise InvalidArgument("an API key cannot be empty")
        self._value = value

    def get(self) -> str:
        """The key, for the SDK client; never log what this returns."""
        return self._value

    def __repr__(self) -> str:
        return "ApiKey('****')"

    __str__ = __repr__

    def __reduce__(self) -> str:
        raise WrongType("an ApiKey cannot be pickled")


def read_env_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """``KEY=value`` pairs of a .env file, as python-dotenv reads them (nothing is exported
    into ``os.environ``); ``{}`` if it does not exist. A key without a value is left out."""
    if not Path(path).is_file():
        return {}
    try:
        from dotenv import dotenv_values
    except ImportError:
        raise MissingExtra("reading a .env file needs python-dotenv; pip install "
                           f"the openai extra ({install_command('openai')}; or "
                           "anthropic), or pass env_file=None") from None
    return {key: value for key, value in dotenv_values(path).items() if value is not None}


def setting(name: str, explicit: str | None, env_file: EnvFile = ".env") -> str | None:
    """``explicit`` if given, else ``$name``, else ``name`` from ``env_file``; None if nowhere."""
    if explicit is not None:
        return explicit
    value = os.environ.get(name)
    if value:
        return value
    if env_file is None:
        return None
    return read_env_file(env_file).get(name) or None


PROVIDERS = ("openai", "anthropic")


def split_spec(spec: str, provider: str) -> str:
    """``"openai:gpt-4o-mini"`` → ``"gpt-4o-mini"``. Any other name passes through whole, colons
    included (``"llama3.1:8b"`` on an OpenAI-compatible server); another provider's prefix is
    refused."""
    prefix, sep, name = spec.partition(":")
    if not sep or prefix not in PROVIDERS:
        if not spec:
            raise InvalidArgument("the model name is empty")
        return spec
    if prefix != provider or not name:
        raise InvalidArgument(f"model {spec!r} names another provider; a {provider} model is "
                              f"given as '{provider}:<model>' or as the bare model name")
    return name


def require_extra(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingExtra(f"the {module!r} package is not installed; "
                           f"{install_command(extra)}")

