"""The pieces under the provider adapters: error classes, Retry-After, .env keys, prices, and
that importing tether loads no provider SDK."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from decimal import Decimal
from email.utils import formatdate
from pathlib import Path

import pytest

from tether.models import DEFAULT_CATALOG, ErrorKind, ModelError, ProviderError
from tether.models.errors import classify, parse_retry_after
from tether.models.keys import ApiKey, read_env_file, setting

# -- error classification --------------------------------------------------------------------


class FakeStatusError(Exception):
    """Shaped like both SDKs' APIStatusError: status_code, response.headers, body."""

    def __init__(self, status: int, body: object = None, headers: dict[str, str] | None = None):
        super().__init__(f"Error code: {status}")
        self.status_code = status
        self.body = body
        self.response = type("R", (), {"headers": headers or {}})()


class APIConnectionError(Exception):
    pass


class APITimeoutError(APIConnectionError):
    pass


@pytest.mark.parametrize(("exc", "kind"), [
    (FakeStatusError(429), ErrorKind.RATE_LIMIT),
    (FakeStatusError(429, {"message": "quota", "code": "insufficient_quota"}), ErrorKind.QUOTA),
    (FakeStatusError(429, {"type": "error", "error": {
        "type": "rate_limit_error", "details": {"error_code": "enforced_spend_limit_reached"}}}),
     ErrorKind.QUOTA),
    (FakeStatusError(402), ErrorKind.QUOTA),
    (FakeStatusError(500), ErrorKind.SERVER), (FakeStatusError(529), ErrorKind.SERVER),
    (FakeStatusError(409), ErrorKind.SERVER), (FakeStatusError(408), ErrorKind.TIMEOUT),
    (FakeStatusError(400), ErrorKind.BAD_REQUEST), (FakeStatusError(413), ErrorKind.BAD_REQUEST),
    (FakeStatusError(401), ErrorKind.AUTH), (FakeStatusError(403), ErrorKind.PERMISSION),
    (FakeStatusError(404), ErrorKind.NOT_FOUND),
    # an Anthropic error event mid-stream arrives on the stream's HTTP 200
    (FakeStatusError(200, {"type": "error", "error": {"type": "overloaded_error"}}),
     ErrorKind.SERVER),
    (APITimeoutError(), ErrorKind.TIMEOUT), (APIConnectionError(), ErrorKind.CONNECTION),
    (TimeoutError(), ErrorKind.TIMEOUT), (ConnectionRefusedError(), ErrorKind.CONNECTION),
    (ModelError("script ran out"), ErrorKind.OTHER), (ValueError("bug"), ErrorKind.OTHER),
])
def test_classify_by_what_the_sdks_expose(exc: BaseException, kind: ErrorKind) -> None:
    error = classify(exc, provider="p")
    assert error.kind is kind and isinstance(error, ModelError)
    assert error.retryable is (kind in (ErrorKind.RATE_LIMIT, ErrorKind.SERVER,
                                        ErrorKind.CONNECTION, ErrorKind.TIMEOUT))


def test_a_provider_error_says_what_to_do_and_hides_the_key() -> None:
    exc = FakeStatusError(401, {"message": "Incorrect API key provided: sk-abc123"})
    error = classify(exc, provider="openai:gpt-4o-mini", secret="sk-abc123")
    assert str(error) == ("openai:gpt-4o-mini: auth (HTTP 401): Incorrect API key provided: "
                          "**** — the API key was refused; check the key (argument, environment "
                          "or .env)")
    assert classify(error) is error
    copy = pickle.loads(pickle.dumps(error))  # e.g. across a process pool
    assert str(copy) == str(error) and copy.kind is ErrorKind.AUTH and copy.status == 401


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": formatdate(now + 12, usegmt=True)},
                             lambda: now) == 12.0
    assert parse_retry_after({"retry-after": formatdate(now - 60, usegmt=True)},
                             lambda: now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({}) is None
    error = classify(FakeStatusError(429, headers={"retry-after": "4"}))
    assert error.retry_after == 4.0


# -- keys and .env ---------------------------------------------------------------------------

def test_env_file_parsing(tmp_path: Path) -> None:
    """What people write in .env files, read as python-dotenv reads it (the hand-written parser
    this replaced kept the quotes of a value with a trailing comment and cut multi-line ones)."""
    env = tmp_path / ".env"
    env.write_text("\n".join([
        "# comment", "", "A=plain", "export B = spaced  # trailing comment",
        "C='single # not a comment'", 'D="double\\nline \\"quoted\\""', "E=",
        "F=x#y", 'KEY="sk-abc" # prod key', "export G='exported'",
        'MULTI="-----BEGIN KEY-----', "line two", '-----END KEY-----"', "NO_VALUE",
    ]))
    assert read_env_file(env) == {
        "A": "plain", "B": "spaced", "C": "single # not a comment",
        "D": 'double\nline "quoted"', "E": "", "F": "x#y", "KEY": "sk-abc", "G": "exported",
        "MULTI": "-----BEGIN KEY-----\nline two\n-----END KEY-----"}
    assert read_env_file(tmp_path / "missing.env") == {}
    assert "KEY" not in os.environ and "MULTI" not in os.environ  # read, never exported


def test_setting_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / ".env"
    env.write_text("TETHER_TEST_KEY=from-file\n")
    monkeypatch.delenv("TETHER_TEST_KEY", raising=False)
    assert setting("TETHER_TEST_KEY", None, env) == "from-file"
    assert setting("TETHER_TEST_KEY", None, None) is None
    monkeypatch.setenv("TETHER_TEST_KEY", "from-env")
    assert setting("TETHER_TEST_KEY", None, env) == "from-env"
    assert setting("TETHER_TEST_KEY", "explicit", env) == "explicit"


def test_api_key_does_not_show_itself() -> None:
    key = ApiKey("sk-secret")
    assert repr(key) == str(key) == f"{key}" == "ApiKey('****')" and key.get() == "sk-secret"
    with pytest.raises(TypeError):
        pickle.dumps(key)
    with pytest.raises(ValueError):
        ApiKey("")


# -- prices ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "input", "output", "cached"), [
    ("gpt-4o-mini", "0.15", "0.60", "0.075"),
    ("openai:gpt-4o-mini-2024-07-18", "0.15", "0.60", "0.075"),
    ("gpt-4.1-nano-2025-04-14", "0.10", "0.40", "0.025"),
    ("o4-mini-2025-04-16", "1.10", "4.40", "0.275"),
    ("o3", "2.00", "8.00", "0.50"),
    ("claude-3-5-haiku-latest", "0.80", "4.00", "0.08"),
    ("claude-3-haiku-20240307", "0.25", "1.25", "0.03"),
    ("anthropic:claude-sonnet-4-20250514", "3.00", "15.00", "0.30"),
    ("claude-sonnet-4-0", "3.00", "15.00", "0.30"),
    ("claude-sonnet-4-5-20250929", "3.00", "15.00", "0.30"),
    ("claude-opus-4-1-20250805", "15.00", "75.00", "1.50"),
    ("claude-opus-4-5", "5.00", "25.00", "0.50"),
    ("claude-haiku-4-5-20251001", "1.00", "5.00", "0.10"),
])
def test_catalog_prices_with_cached_input(name: str, input: str, output: str,
                                          cached: str) -> None:
    price = DEFAULT_CATALOG.lookup(name)
    assert price is not None
    assert (price.input, price.output, price.cached_input) == (Decimal(input), Decimal(output),
                                                               Decimal(cached))


@pytest.mark.parametrize("name", ["claude-opus-4-9", "llama3.1:8b", "gpt-4o-mini-fast",
                                  "claude-sonnet-4-5-preview"])
def test_unknown_names_are_not_guessed(name: str) -> None:
    assert DEFAULT_CATALOG.lookup(name) is None


def test_cached_tokens_are_billed_at_the_cached_price() -> None:
    from tether.types import Usage

    price = DEFAULT_CATALOG.lookup("claude-sonnet-4")
    assert price is not None
    # 1000 input of which 800 cached, 100 output
    assert price.cost(Usage(1000, 100, 800)) == (Decimal(200) * 3 + Decimal(800) * Decimal("0.30")
                                                 + Decimal(100) * 15) / 1_000_000


# -- laziness --------------------------------------------------------------------------------

def test_import_tether_models_loads_no_provider_sdk() -> None:
    # (a model's price is looked up when first needed — Fallback asks its members at once —
    # and genai-prices, when installed, brings its own HTTP client for its updates)
    code = (
        "import sys, tether, tether.models\n"
        "from tether.models import OpenAIModel, AnthropicModel, Resilient, Fallback\n"
        "m = Fallback([Resilient(OpenAIModel(api_key='k', env_file=None)),\n"
        "              AnthropicModel(api_key='k', env_file=None)])\n"
        "sdks = ('openai', 'anthropic', 'httpx')\n"
        "if 'genai_prices' not in sys.modules: sdks += ('httpx2',)\n"
        "loaded = sorted(n for n in sys.modules if n.split('.')[0] in sdks)\n"
        "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_provider_error_is_importable_from_the_models_package() -> None:
    import tether.models as models

    assert models.ProviderError is ProviderError
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = models.Nope  # type: ignore[attr-defined]
