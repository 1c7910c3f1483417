"""A scan at the credential layer: the secret string appears in no text this layer produces.

Every route by which a secret could escape — repr, str, format, logging (DEBUG, with tracebacks),
pickle and JSON attempts, ``to_dict``, copies, and the message and formatted traceback of every
``CredentialError`` path, including Vault's — is exercised, all output is collected, and the
secrets (the tool's and the Vault token) are searched for in it.
"""

from __future__ import annotations

import copy
import json
import logging
import pickle
import secrets
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# importing it skips this module too without hvac (fails it under CI)
from test_credentials_vault import FakeVault, serve_fake_vault
from tether.credentials import CredentialBroker, CredentialError, Secret, VaultKV

SECRET = "scan-" + secrets.token_hex(16)
VAULT_TOKEN = "hvs." + secrets.token_hex(12)
ROUTES = [SECRET, json.dumps(SECRET)[1:-1], VAULT_TOKEN]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Collected:
    """Everything the layer said, to be searched for secrets at the end."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasons: set[str] = set()

    def text(self, value: object) -> None:
        self.texts.append(value if isinstance(value, str) else repr(value))

    def shown(self, value: object) -> None:
        self.texts += [repr(value), str(value), format(value), f"{value!r:>10}",
                       "%s" % (value,)]  # noqa: UP031 - the route logging takes

    def error(self, exc: BaseException) -> None:
        self.texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
        if isinstance(exc, CredentialError):
            self.reasons.add(exc.reason)

    def raises(self, action: Callable[[], object]) -> None:
        try:
            action()
        except (CredentialError, TypeError, ValueError) as exc:
            self.error(exc)
        else:
            raise AssertionError(f"{action} was expected to raise")


@pytest.fixture
def vault(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVault]:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "VAULT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with serve_fake_vault() as fake:
        fake.token = VAULT_TOKEN
        yield fake


def exercise_tokens(seen: Collected, log: logging.Logger) -> None:
    clock = Clock()
    broker = CredentialBroker(clock=clock)
    broker.register("db", SECRET, ttl=10, max_uses=1)
    broker.register("api", provider=lambda: Secret(SECRET), max_uses=2)

    token = broker.issue("s1", "db")
    assert token is not None and token.reveal() == SECRET
    seen.shown(token)
    seen.shown(broker)
    seen.shown(Secret(SECRET))
    seen.text(token.to_dict())
    seen.text(json.dumps(token.to_dict()))
    seen.text(broker.issued("s1"))
    seen.shown(copy.copy(token))
    seen.shown(copy.deepcopy({"token": token, "secret": Secret(SECRET)}))
    log.debug("token %s / %r / broker %s / dict %s", token, token, broker, token.to_dict())
    log.info("f-string %s", f"{token} {broker} {Secret(SECRET)}")

    seen.raises(token.reveal)  # used up
    seen.raises(lambda: token.reveal("email"))  # wrong tool
    expiring = broker.issue("s1", "db")
    assert expiring is not None
    clock.now = 11.0
    seen.raises(expiring.reveal)  # expired
    revoked = broker.issue("s1", "api")
    assert revoked is not None and revoked.reveal() == SECRET
    assert broker.revoke_session("s1") == 3
    seen.raises(revoked.reveal)  # revoked
    seen.shown(revoked)

    for attempt in (lambda: pickle.dumps(token), lambda: pickle.dumps(Secret(SECRET)),
                    lambda: pickle.dumps(broker), lambda: copy.deepcopy(broker),
                    lambda: json.dumps(token), lambda: json.dumps({"s": Secret(SECRET)}),
                    lambda: vars(token), lambda: vars(Secret(SECRET))):
        seen.raises(attempt)

    scrubbed = revoked.redact(f"output {SECRET} and {json.dumps(SECRET)}")
    seen.text(scrubbed)
    assert "[secret redacted]" in scrubbed


def exercise_provider_failures(seen: Collected, log: logging.Logger) -> None:
    def leaky() -> str:
        raise ValueError(f"could not parse {SECRET}")

    def wrong_type() -> Any:
        return {"password": SECRET}

    def ours() -> str:
        raise CredentialError("store refused", reason="forbidden")

    for name, provider in (("leaky", leaky), ("wrong", wrong_type), ("ours", ours)):
        broker = CredentialBroker()
        broker.register(name, provider=provider)
        try:
            broker.issue("s2", name)
        except CredentialError as exc:
            seen.error(exc)
            log.exception("issue failed for %s", name)
        else:
            raise AssertionError(f"provider {name} should have failed")


def exercise_vault(seen: Collected, log: logging.Logger, vault: FakeVault) -> None:
    def kv(path: str, key: str = "password", token: str = VAULT_TOKEN,
           url: str | None = None) -> VaultKV:
        return VaultKV(url or vault.url, token=token, path=path, key=key, timeout=2)

    vault.secrets[("secret", "app/db")] = {"password": SECRET, "other": SECRET, "n": 5}
    good = kv("app/db")
    seen.shown(good)
    broker = CredentialBroker()
    broker.register("db", provider=good)
    token = broker.issue("s3", "db")
    assert token is not None and token.reveal() == SECRET
    log.debug("vault provider %r issued %s", good, token)

    failing = [kv("missing"), kv("app/db", key="absent"), kv("app/db", key="n"),
               kv("app/db", token="hvs.wrong-" + VAULT_TOKEN)]
    for provider in failing:
        seen.raises(provider)
    vault.raw_body = {"data": {"password": SECRET}}  # KV v1 shape, carrying the secret
    seen.raises(kv("app/db"))
    vault.raw_body = None
    vault.sealed = True
    seen.raises(kv("app/db"))
    vault.sealed = False
    vault.status = 500
    seen.raises(kv("app/db"))
    vault.status = None
    seen.raises(kv("app/db", url="http://127.0.0.1:9"))  # nobody listens on the discard port
    seen.raises(lambda: pickle.dumps(good))

    vault.secrets.clear()
    try:
        broker.issue("s3", "db")
    except CredentialError as exc:
        seen.error(exc)
        log.exception("vault issue failed")


def exercise_mcp_oauth(seen: Collected, log: logging.Logger) -> None:
    """The MCP client's OAuth configuration, its token store and its error messages."""
    import asyncio

    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from tether.mcp import MCPServer
    from tether.mcp.oauth import AuthorizationCode, ClientCredentials, PrivateKeyJWT, TokenStore
    from tether.mcp.oauth.guard import _guard_class

    store = TokenStore()
    asyncio.run(store.set_tokens(OAuthToken(access_token=SECRET, refresh_token=VAULT_TOKEN)))
    asyncio.run(store.set_client_info(OAuthClientInformationFull(
        client_id="c", client_secret=SECRET, redirect_uris=None)))
    flows = [AuthorizationCode(client_id="app", client_secret=SECRET, store=store),
             ClientCredentials("machine", Secret(SECRET), store=store),
             PrivateKeyJWT("machine", Secret(SECRET), store=store)]
    for flow in flows:
        server = MCPServer.http("api", f"https://user:{SECRET}@mcp.example/mcp?access_token={SECRET}",
                                headers={"Authorization": f"Bearer {SECRET}"}, auth=flow)
        seen.shown(flow)
        seen.shown(server)
        seen.text(server.where())
        log.debug("connecting %r with %s", server, flow)
        guard = _guard_class()(server, None, None)
        seen.shown(guard)
        for exc in (OAuthTokenError(f'Token exchange failed (401): {{"client_secret":"{SECRET}"}}'),
                    OAuthRegistrationError(f"Registration failed: {SECRET}"),
                    OAuthFlowError(f"something about {VAULT_TOKEN}"),
                    RuntimeError(f"boom {SECRET}")):
            error = guard._explain(exc)
            seen.error(error)
            log.error("oauth failed: %s", error)
    seen.shown(store)
    seen.raises(lambda: pickle.dumps(store))
    seen.raises(lambda: copy.deepcopy(store))


def test_no_secret_in_anything_the_credential_layer_says(
        caplog: pytest.LogCaptureFixture, vault: FakeVault) -> None:
    log = logging.getLogger("tests.credentials.scan")
    seen = Collected()
    with caplog.at_level(logging.DEBUG):
        exercise_tokens(seen, log)
        exercise_provider_failures(seen, log)
        exercise_vault(seen, log, vault)
        exercise_mcp_oauth(seen, log)

    seen.texts.append(caplog.text)
    seen.texts += [record.getMessage() for record in caplog.records]

    assert seen.reasons == {"used_up", "wrong_tool", "expired", "revoked", "provider",
                            "forbidden", "not_found", "bad_response", "unavailable"}
    haystack = "\n".join(seen.texts)
    assert "ScopedToken(id=" in haystack and "Secret('****')" in haystack
    assert "issued ScopedToken(" in caplog.text  # the broker's own debug log was captured
    assert "Traceback" in caplog.text and len(caplog.records) >= 6
    for secret in ROUTES:
        assert secret not in haystack, f"a secret leaked into:\n{_context(haystack, secret)}"


def _context(haystack: str, needle: str) -> str:
    at = haystack.index(needle)
    return haystack[max(0, at - 300):at + 100]
