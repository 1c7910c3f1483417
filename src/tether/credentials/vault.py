"""A provider that reads a secret from HashiCorp Vault's KV version 2 engine at issue time.

Decision: use the official ``hvac`` client rather than hand-rolled HTTP, imported only when a
``VaultKV`` is built (it is the ``tether[vault]`` extra; ``import tether`` never pays for it).
A ``VaultKV`` is a plain callable, so it is registered like any provider —
``broker.register("db", provider=VaultKV(...))`` — and every issue reads the current version, so
a secret rotated in Vault is used by the next tool call. Every failure (no such path or key,
permission denied, sealed or unreachable Vault, a response that is not KV v2) becomes a
``CredentialError`` whose message says what to check; messages are built from the address,
mount, path and key only, the Vault token is held as a ``Secret`` and shown nowhere, and hvac's
exceptions (which carry response bodies) are never chained.
"""

from __future__ import annotations

import importlib
from typing import Any, NoReturn

from tether.credentials.errors import CredentialError, Reason
from tether.errors import InvalidArgument, MissingExtra, WrongType, install_command
from tether.secret import Secret
from tether.urls import redact_url


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingExtra(f"VaultKV needs the hvac package ({name} is missing): "
                          f"{install_command('vault')}") from None


class VaultKV:
    """Read ``key`` of the KV v2 secret at ``mount``/``path`` from the Vault at ``url``.

    ``token`` authenticates (when omitted, hvac falls back to ``VAULT_TOKEN`` or
    ``~/.vault-token``); pass ``client=`` to use an ``hvac.Client`` you built yourself.
    """

    __slots__ = ("_client", "_errors", "_requests_errors", "key", "mount", "path", "url")

    def __init__(self, url: str, token: str | Secret | None = None, *, mount: str = "secret",
                 path: str, key: str, client: Any = None, timeout: float = 10.0) -> None:
        if client is not None and token is not None:
            raise InvalidArgument("pass either token= or client= to VaultKV, not both: a client "
                             "you built already carries its own token")
        for what, value in (("url", url), ("mount", mount), ("path", path), ("key", key)):
            if not isinstance(value, str) or not value.strip("/"):
                raise InvalidArgument(f"VaultKV {what} must be a non-empty string, got {value!r}")
        hvac = _import("hvac")
        self.url = redact_url(url)
        self.mount = mount.strip("/")
        self.path = path.strip("/")
        self.key = key
        self._errors = hvac.exceptions
        self._requests_errors = _import("requests").exceptions
        if client is None:
            raw = token.get() if isinstance(token, Secret) else token
            client = hvac.Client(url=url, token=raw, timeout=timeout)
        self._client = client

    def __call__(self) -> Secret:
        """The current value, as a ``Secret``. Raises ``CredentialError`` on any failure."""
        try:
            response = self._client.secrets.kv.v2.read_secret_version(
                path=self.path, mount_point=self.mount, raise_on_deleted_version=True)
        except Exception as exc:  # classified, then raised outside this block: nothing chained
            failure = self._classify(exc)
        else:
            return self._extract(response)
        self._fail(*failure)

    def _classify(self, exc: Exception) -> tuple[Reason, str]:
        errors, where = self._errors, self._where
        if isinstance(exc, errors.InvalidPath):
            return "not_found", (f"Vault has no secret at {where} (404): check the mount and path "
                                 f"(`vault kv get -mount={self.mount} {self.path}`); a deleted "
                                 "latest version also reads as missing")
        if isinstance(exc, errors.Forbidden | errors.Unauthorized):
            return "forbidden", (f"Vault refused to read {where} (permission denied): the token "
                                 "is missing, expired, or its policy lacks `read` on "
                                 f"{self.mount}/data/{self.path}")
        if isinstance(exc, errors.VaultDown):
            return "unavailable", (f"the Vault at {self.url} is sealed or in standby (503): "
                                   "unseal it or point url= at the active node")
        if isinstance(exc, errors.VaultNotInitialized):
            return "unavailable", (f"the Vault at {self.url} is not initialized (501): "
                                   "run `vault operator init` first")
        if isinstance(exc, errors.VaultError):
            return "bad_response", (f"Vault answered {type(exc).__name__} when reading {where}: "
                                    "check the server's logs and status")
        if isinstance(exc, self._requests_errors.RequestException):
            return "unavailable", (f"cannot reach the Vault at {self.url} "
                                   f"({type(exc).__name__}): check the address and that the "
                                   "server is running")
        return "bad_response", (f"reading {where} failed with {type(exc).__name__}; the error's "
                                "text is withheld in case it contains a secret")

    def _extract(self, response: Any) -> Secret:
        where = self._where
        data = response.get("data") if isinstance(response, dict) else None
        values = data.get("data") if isinstance(data, dict) else None
        if not isinstance(values, dict):
            self._fail("bad_response", f"the answer for {where} is not a KV version 2 secret: is "
                       f"{self.mount!r} a KV v2 mount? (KV v1 mounts are not supported)")
        if self.key not in values:
            self._fail("not_found", f"the secret at {where} has no key {self.key!r}; its keys "
                       f"are {sorted(map(str, values))}")
        value = values[self.key]
        if not isinstance(value, str) or not value:
            kind = "an empty string" if value == "" else f"a {type(value).__name__}"
            self._fail("bad_response", f"key {self.key!r} of the secret at {where} holds {kind}, "
                       "not a non-empty string")
        return Secret(value)

    @property
    def _where(self) -> str:
        return f"{self.mount}/{self.path} on {self.url}"

    def _fail(self, reason: Reason, message: str) -> NoReturn:
        raise CredentialError(message, reason=reason)

    def __repr__(self) -> str:
        return (f"VaultKV(url={self.url!r}, mount={self.mount!r}, path={self.path!r}, "
                f"key={self.key!r})")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise WrongType("a VaultKV cannot be pickled: its client holds the Vault token. Build "
                        "one per process from configuration")
