"""VaultKV against a small KV v2 server on 127.0.0.1, through the real hvac client."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tether.credentials import CredentialBroker, CredentialError, Secret, VaultKV

from conftest import import_or_unavailable

import_or_unavailable("hvac", "vault")

VAULT_TOKEN = "hvs.test-vault-token-9f2c"


@dataclass
class FakeVault:
    """A KV v2 engine: ``secrets[(mount, path)]`` is the document, ``token`` the one accepted."""

    url: str = ""
    token: str = VAULT_TOKEN
    secrets: dict[tuple[str, str], Any] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    sealed: bool = False
    status: int | None = None  # force this status on every request
    raw_body: dict[str, Any] | None = None  # answer 200 with exactly this body

    def answer(self, method: str, path: str, token: str | None) -> tuple[int, dict[str, Any]]:
        self.requests.append((method, path, token))
        if self.status is not None:
            return self.status, {"errors": ["internal error"]}
        if self.sealed:
            return 503, {"errors": ["Vault is sealed"]}
        if token != self.token:
            return 403, {"errors": ["permission denied"]}
        if method != "GET" or not path.startswith("/v1/") or "/data/" not in path:
            return 404, {"errors": []}
        mount, _, secret_path = path[len("/v1/"):].split("?")[0].partition("/data/")
        if self.raw_body is not None:
            return 200, self.raw_body
        if (mount, secret_path) not in self.secrets:
            return 404, {"errors": []}
        document = self.secrets[(mount, secret_path)]
        return 200, {
            "request_id": "5e0b-test", "lease_id": "", "renewable": False, "lease_duration": 0,
            "data": {"data": document,
                     "metadata": {"created_time": "2024-01-01T00:00:00Z", "custom_metadata": None,
                                  "deletion_time": "", "destroyed": False, "version": 3}},
            "wrap_info": None, "warnings": None, "auth": None, "mount_type": "kv",
        }


def _handler(vault: FakeVault) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = vault.answer("GET", self.path, self.headers.get("X-Vault-Token"))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def serve_fake_vault() -> Iterator[FakeVault]:
    """A FakeVault listening on a random port of 127.0.0.1 for the duration of the block."""
    fake = FakeVault()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def vault(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVault]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "VAULT_TOKEN", "VAULT_ADDR"):
        monkeypatch.delenv(name, raising=False)
    with serve_fake_vault() as fake:
        yield fake


def _error(provider: VaultKV) -> CredentialError:
    with pytest.raises(CredentialError) as info:
        provider()
    return info.value


def test_reads_key_with_real_hvac_client_and_sends_path_and_token(vault: FakeVault) -> None:
    vault.secrets[("secret", "app/db")] = {"password": "pw-1", "user": "app"}
    provider = VaultKV(vault.url, token=VAULT_TOKEN, path="app/db", key="password")
    value = provider()
    assert isinstance(value, Secret) and value.get() == "pw-1"
    assert vault.requests == [("GET", "/v1/secret/data/app/db", VAULT_TOKEN)]


def test_custom_mount_and_secret_token(vault: FakeVault) -> None:
    vault.secrets[("kv-prod", "payments/stripe")] = {"api_key": "sk_live_x"}
    provider = VaultKV(vault.url, token=Secret(VAULT_TOKEN), mount="/kv-prod/",
                       path="/payments/stripe", key="api_key")
    assert provider().get() == "sk_live_x"
    assert vault.requests[0][1] == "/v1/kv-prod/data/payments/stripe"
    assert vault.requests[0][2] == VAULT_TOKEN


def test_as_broker_provider_picks_up_rotation(vault: FakeVault) -> None:
    vault.secrets[("secret", "app/db")] = {"password": "before"}
    broker = CredentialBroker()
    broker.register("db", provider=VaultKV(vault.url, token=VAULT_TOKEN, path="app/db",
                                           key="password"))
    first = broker.issue("s1", "db")
    vault.secrets[("secret", "app/db")] = {"password": "after"}
    second = broker.issue("s1", "db")
    assert first is not None and second is not None
    assert (first.reveal(), second.reveal()) == ("before", "after")
    assert len(vault.requests) == 2


async def test_aissue_runs_vault_read_off_the_loop(vault: FakeVault) -> None:
    vault.secrets[("secret", "app/db")] = {"password": "pw-async"}
    broker = CredentialBroker()
    broker.register("db", provider=VaultKV(vault.url, token=VAULT_TOKEN, path="app/db",
                                           key="password"))
    token = await broker.aissue("s1", "db")
    assert token is not None and token.reveal() == "pw-async"


def test_missing_path_is_not_found(vault: FakeVault) -> None:
    error = _error(VaultKV(vault.url, token=VAULT_TOKEN, path="nope", key="password"))
    assert error.reason == "not_found"
    assert "no secret at secret/nope" in str(error) and "vault kv get" in str(error)
    assert vault.requests[0][1] == "/v1/secret/data/nope"
    assert error.__cause__ is None and error.__context__ is None


def test_missing_key_lists_key_names(vault: FakeVault) -> None:
    vault.secrets[("secret", "app/db")] = {"user": "app", "pass": "pw-hidden"}
    error = _error(VaultKV(vault.url, token=VAULT_TOKEN, path="app/db", key="password"))
    assert error.reason == "not_found"
    assert "no key 'password'" in str(error) and "['pass', 'user']" in str(error)
    assert "pw-hidden" not in str(error)


def test_wrong_token_is_forbidden(vault: FakeVault) -> None:
    vault.secrets[("secret", "app/db")] = {"password": "pw"}
    error = _error(VaultKV(vault.url, token="hvs.wrong", path="app/db", key="password"))
    assert error.reason == "forbidden" and "permission denied" in str(error)
    assert vault.requests[0][2] == "hvs.wrong"
    assert "hvs.wrong" not in str(error)


def test_sealed_vault_is_unavailable(vault: FakeVault) -> None:
    vault.sealed = True
    error = _error(VaultKV(vault.url, token=VAULT_TOKEN, path="app/db", key="password"))
    assert error.reason == "unavailable" and "sealed" in str(error) and "unseal" in str(error)


def test_server_error_is_bad_response(vault: FakeVault) -> None:
    vault.status = 500
    error = _error(VaultKV(vault.url, token=VAULT_TOKEN, path="app/db", key="password"))
    assert error.reason == "bad_response" and "InternalServerError" in str(error)


def test_kv_v1_shaped_answer_is_bad_response(vault: FakeVault) -> None:
    vault.raw_body = {"data": {"password": "pw-v1"}}
    error = _error(VaultKV(vault.url, token=VAULT_TOKEN, path="app/db", key="password"))
    assert error.reason == "bad_response" and "KV version 2" in str(error)
    assert "pw-v1" not in str(error)


@pytest.mark.parametrize("value", [42, "", None, {"nested": "x"}])
def test_non_string_value_is_bad_response(vault: FakeVault, value: object) -> None:
    vault.secrets[("secret", "app/db")] = {"password": value}
    error = _error(VaultKV(vault.url, token=VAULT_TOKEN, path="app/db", key="password"))
    assert error.reason == "bad_response" and "not a non-empty string" in str(error)


def test_unreachable_vault_is_unavailable(vault: FakeVault) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago and nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = _error(VaultKV(f"http://127.0.0.1:{port}", token=VAULT_TOKEN, path="a", key="b",
                           timeout=2))
    assert error.reason == "unavailable" and "cannot reach the Vault" in str(error)


def test_broker_names_tool_on_vault_failure(vault: FakeVault) -> None:
    broker = CredentialBroker()
    broker.register("db", provider=VaultKV(vault.url, token=VAULT_TOKEN, path="x", key="k"))
    with pytest.raises(CredentialError) as info:
        broker.issue("s1", "db")
    assert info.value.reason == "not_found" and info.value.tool == "db"
    assert "tool 'db'" in str(info.value) and "no secret at secret/x" in str(info.value)
    assert info.value.__context__ is None


def test_repr_hides_token_and_userinfo(vault: FakeVault) -> None:
    url = vault.url.replace("http://", "http://admin:hunter2@") + "/?token=q-token"
    provider = VaultKV(url, token=VAULT_TOKEN, path="app/db", key="password")
    text = repr(provider)
    shown = vault.url.replace("http://", "http://admin:***@") + "/?token=***"
    assert text == f"VaultKV(url={shown!r}, mount='secret', path='app/db', key='password')"
    assert VAULT_TOKEN not in text and "hunter2" not in text and "q-token" not in text
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(provider)


def test_client_argument_is_used(vault: FakeVault) -> None:
    import hvac

    vault.secrets[("secret", "a")] = {"k": "v"}
    client = hvac.Client(url=vault.url, token=VAULT_TOKEN)
    assert VaultKV(vault.url, path="a", key="k", client=client)().get() == "v"
    with pytest.raises(ValueError, match="not both"):
        VaultKV(vault.url, token=VAULT_TOKEN, path="a", key="k", client=client)


@pytest.mark.parametrize("kwargs", [{"path": ""}, {"path": "/"}, {"key": ""}, {"mount": ""}])
def test_bad_arguments(kwargs: dict[str, str]) -> None:
    arguments: dict[str, Any] = {"path": "a", "key": "k", **kwargs}
    with pytest.raises(ValueError, match="must be a non-empty string"):
        VaultKV("http://127.0.0.1:1", token="t", **arguments)


def test_missing_hvac_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hvac", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[vault\]'"):
        VaultKV("http://127.0.0.1:1", token="t", path="a", key="k")


def test_import_tether_credentials_does_not_import_hvac() -> None:
    import subprocess

    code = ("import sys, tether, tether.credentials; "
            "print(any(m.split('.')[0] in ('hvac', 'requests') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
