"""The OAuth configurations of an MCP server (``MCPServer.http(..., auth=...)``) and the store of
the tokens they obtain.

Why: the configuration is frozen data a user writes once; the tokens are secrets obtained at run
time. Both hold every secret as a ``Secret`` (no repr, log line, journal entry, span or prompt
can show one), and the store lives in memory, per process: nothing is written to disk.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn
from urllib.parse import urlsplit

from tether.errors import InvalidArgument, WrongType
from tether.secret import Secret

#: Given the authorization URL, bring the user (or a test's user agent) through it and return the
#: URL the authorization server redirected to, with its ``code`` and ``state`` (or ``error``).
Authorize = Callable[[str], Awaitable[str]]
SecretMethod = Literal["client_secret_basic", "client_secret_post"]
CodeMethod = Literal["client_secret_basic", "client_secret_post", "none"]

AUTHORIZE_TIMEOUT = 300.0  # seconds the default user agent waits for the browser's redirect


def _scopes(value: Iterable[str] | str) -> tuple[str, ...]:
    items = value.split() if isinstance(value, str) else [str(s) for s in value]
    for scope in items:
        if not scope or any(c.isspace() for c in scope):
            raise InvalidArgument(f"OAuth scope {scope!r} is empty or contains whitespace; give "
                             "scopes as a list such as ['mcp:read', 'mcp:write']")
    return tuple(items)


def _secret(what: str, value: Secret | str | None) -> Secret | None:
    if value is None or isinstance(value, Secret):
        return value
    if isinstance(value, str):
        return Secret(value)
    raise WrongType(f"{what} must be a Secret (or a str, which is wrapped), got "
                    f"{type(value).__name__}")


def _client_id(value: object) -> None:
    if not isinstance(value, str) or not value or value != value.strip():
        raise InvalidArgument("client_id must be a non-empty string without surrounding spaces")


# -- the token store -------------------------------------------------------------------------------


class TokenStore:
    """The SDK's ``TokenStorage``, in memory for this process, every secret as a ``Secret``.

    One store belongs to one ``auth`` configuration, so reconnecting the same ``MCPServer``
    reuses its tokens (and its dynamic registration) instead of authorizing again; a new process
    authorizes again. The tokens are rebuilt into the SDK's ``OAuthToken`` only when the SDK asks
    for them. ``clear()`` forgets everything (the next connection authorizes from scratch).
    """

    __slots__ = ("_access", "_client", "_client_secret", "_expires_at", "_refresh", "_scope",
                 "_token_type")

    def __init__(self) -> None:
        self._access: Secret | None = None
        self._refresh: Secret | None = None
        self._scope: str | None = None
        self._token_type = "Bearer"
        self._expires_at: float | None = None
        self._client: dict[str, Any] | None = None  # registration, without its secret
        self._client_secret: Secret | None = None

    @property
    def has_tokens(self) -> bool:
        return self._access is not None

    def secrets(self) -> list[Secret]:
        """Every secret held (to scrub text with); never shown."""
        return [s for s in (self._access, self._refresh, self._client_secret) if s is not None]

    def clear(self) -> None:
        self._access = self._refresh = self._client_secret = None
        self._scope = self._expires_at = self._client = None

    # the SDK's TokenStorage protocol

    async def get_tokens(self) -> Any:
        if self._access is None:
            return None
        from mcp.shared.auth import OAuthToken

        expires_in = None
        if self._expires_at is not None:
            expires_in = max(0, int(self._expires_at - time.monotonic()))
        return OAuthToken(access_token=self._access.get(), token_type="Bearer",
                          expires_in=expires_in, scope=self._scope,
                          refresh_token=None if self._refresh is None else self._refresh.get())

    async def set_tokens(self, tokens: Any) -> None:
        self._access = Secret(tokens.access_token)
        self._refresh = Secret(tokens.refresh_token) if tokens.refresh_token else None
        self._scope = tokens.scope
        self._expires_at = (None if tokens.expires_in is None
                            else time.monotonic() + float(tokens.expires_in))

    async def get_client_info(self) -> Any:
        if self._client is None:
            return None
        from mcp.shared.auth import OAuthClientInformationFull

        data = dict(self._client)
        if self._client_secret is not None:
            data["client_secret"] = self._client_secret.get()
        return OAuthClientInformationFull.model_validate(data)

    async def set_client_info(self, client_info: Any) -> None:
        self.put_client(client_info)

    def put_client(self, client_info: Any) -> None:
        """Keep the SDK's ``OAuthClientInformationFull``, its secret as a ``Secret``."""
        data = client_info.model_dump(mode="json", exclude_none=True)
        secret = data.pop("client_secret", None)
        self._client_secret = Secret(secret) if secret else None
        self._client = data

    def redirect_uri(self) -> str | None:
        """The first redirect URI of the client's registration, if it has one."""
        uris = (self._client or {}).get("redirect_uris") or []
        return str(uris[0]) if uris else None

    def drop_tokens(self) -> None:
        """Forget the tokens (a refused one), keeping the client's registration."""
        self._access = self._refresh = None
        self._scope = self._expires_at = None

    def __repr__(self) -> str:
        return (f"TokenStore(tokens={'held' if self._access is not None else 'none'}, "
                f"client={'registered' if self._client is not None else 'none'})")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise WrongType("a TokenStore cannot be pickled or copied: it holds OAuth tokens")


# -- the flows -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthorizationCode:
    """The authorization code flow with PKCE: a user signs in through a browser.

    The client is, in this order: pre-registered (``client_id``, with ``client_secret`` for a
    confidential client, authenticated by ``token_endpoint_auth_method``); identified by a
    client-id metadata document (``client_metadata_url``, an https URL, used when the
    authorization server supports it); otherwise registered dynamically (RFC 7591) as
    ``client_name``. ``redirect_uri`` defaults to a loopback URL on a free port
    (``http://127.0.0.1:<port>/callback``); a pre-registered client usually needs the exact one
    it registered. ``authorize`` brings the user through the authorization URL and returns the
    redirect URL (default: ``loopback_authorize``). ``scopes`` are the scopes the client
    registers for; what is requested follows the spec (the server's challenge, then its
    metadata), and a ``403 insufficient_scope`` asks once for the union (step-up).
    """

    client_id: str | None = None
    client_secret: Secret | None = None
    client_metadata_url: str | None = None
    redirect_uri: str | None = None
    authorize: Authorize | None = field(default=None, repr=False, compare=False)
    scopes: tuple[str, ...] = ()
    token_endpoint_auth_method: CodeMethod | None = None
    client_name: str = "tether"
    store: TokenStore = field(default_factory=TokenStore, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.client_id is not None:
            _client_id(self.client_id)
        object.__setattr__(self, "client_secret", _secret("client_secret", self.client_secret))
        if self.client_secret is not None and self.client_id is None:
            raise InvalidArgument("client_secret= needs the client_id= it belongs to")
        if self.client_metadata_url is not None and (
                not self.client_metadata_url.startswith("https://")
                or urlsplit(self.client_metadata_url).path in ("", "/")):
            raise InvalidArgument(
                "client_metadata_url must be an https URL with a path (the client-id "
                f"metadata document), got {self.client_metadata_url!r}")
        if self.redirect_uri is not None and not self.redirect_uri.startswith(
                ("http://", "https://")):
            raise InvalidArgument(f"redirect_uri must be an http(s) URL, got {self.redirect_uri!r}")
        if self.authorize is not None and not callable(self.authorize):
            raise WrongType("authorize must be an async callable: authorize(url) -> redirect URL")
        object.__setattr__(self, "scopes", _scopes(self.scopes))
        if self.token_endpoint_auth_method is not None and self.token_endpoint_auth_method not in (
                "client_secret_basic", "client_secret_post", "none"):
            raise InvalidArgument("token_endpoint_auth_method must be 'client_secret_basic', "
                             f"'client_secret_post' or 'none', got "
                             f"{self.token_endpoint_auth_method!r}")

    def secrets(self) -> list[Secret]:
        return [s for s in (self.client_secret,) if s is not None] + self.store.secrets()


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    """The client credentials grant: a machine client with its own id and secret, no user.

    ``method`` is how the secret reaches the token endpoint (``client_secret_basic``, the HTTP
    Basic header, or ``client_secret_post``, the form body). ``issuer`` (recommended) is the
    authorization server the credentials belong to: the flow stops if the server leads anywhere
    else, so the secret is never sent to another authorization server.
    """

    client_id: str
    client_secret: Secret
    method: SecretMethod = "client_secret_basic"
    scopes: tuple[str, ...] = ()
    issuer: str | None = None
    store: TokenStore = field(default_factory=TokenStore, repr=False, compare=False)

    def __post_init__(self) -> None:
        _client_id(self.client_id)
        if self.client_secret is None:
            raise InvalidArgument("ClientCredentials needs client_secret= (a Secret)")
        object.__setattr__(self, "client_secret", _secret("client_secret", self.client_secret))
        if self.method not in ("client_secret_basic", "client_secret_post"):
            raise InvalidArgument(
                "method must be 'client_secret_basic' or 'client_secret_post', got "
                f"{self.method!r}; for a signed assertion use PrivateKeyJWT")
        object.__setattr__(self, "scopes", _scopes(self.scopes))

    def secrets(self) -> list[Secret]:
        return [self.client_secret, *self.store.secrets()]


@dataclass(frozen=True, slots=True)
class PrivateKeyJWT:
    """The client credentials grant authenticated with a signed JWT (``private_key_jwt``).

    ``private_key`` is the PEM private key (a ``Secret``); each token request carries a fresh
    assertion signed with ``algorithm``, valid ``lifetime`` seconds, whose issuer and subject are
    ``client_id`` and whose audience is the authorization server. ``issuer`` as in
    ``ClientCredentials``.
    """

    client_id: str
    private_key: Secret
    algorithm: str = "RS256"
    scopes: tuple[str, ...] = ()
    issuer: str | None = None
    lifetime: int = 300
    store: TokenStore = field(default_factory=TokenStore, repr=False, compare=False)

    def __post_init__(self) -> None:
        _client_id(self.client_id)
        if self.private_key is None:
            raise InvalidArgument("PrivateKeyJWT needs private_key= (a Secret holding the PEM key)")
        object.__setattr__(self, "private_key", _secret("private_key", self.private_key))
        if not isinstance(self.lifetime, int) or isinstance(self.lifetime, bool) or not (
                0 < self.lifetime <= 3600):
            raise InvalidArgument(f"lifetime must be 1..3600 seconds, got {self.lifetime!r}")
        object.__setattr__(self, "scopes", _scopes(self.scopes))

    def secrets(self) -> list[Secret]:
        return [self.private_key, *self.store.secrets()]


OAuth = AuthorizationCode | ClientCredentials | PrivateKeyJWT
"""Any of the OAuth flows ``MCPServer.http(..., auth=...)`` takes."""
FLOWS = (AuthorizationCode, ClientCredentials, PrivateKeyJWT)
"""The OAuth flow classes, for an ``isinstance`` check."""


def hide_secrets(auth: OAuth, text: str) -> str:
    """``text`` with every secret ``auth`` and its store hold now (tokens rotate: read at each
    call) replaced: what a server says back — a result, an error, a log line — may quote the
    token it was sent."""
    for secret in auth.secrets():
        text = text.replace(secret.get(), "****")
    return text


