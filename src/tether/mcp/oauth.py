"""OAuth for MCP servers behind an authorization server: which flow, and where the tokens live.

Why: an MCP server on streamable HTTP may answer ``401`` and point, through its protected
resource metadata, at an OAuth authorization server. The ``mcp`` SDK implements the client side
of the protocol's authorization spec (discovery, resource and issuer checks, PKCE, dynamic
registration, client-id metadata documents, scope step-up, refresh); tether does not redo any of
it. This module is the small part tether owns:

- the **configuration**, frozen data given as ``MCPServer.http(..., auth=...)``:
  ``AuthorizationCode`` (PKCE; pre-registered client, dynamic registration, or a client-id
  metadata document URL), ``ClientCredentials`` (``client_secret_basic`` or
  ``client_secret_post``) and ``PrivateKeyJWT``; client secrets and keys are ``Secret``;
- the **token store** (``TokenStore``), the SDK's ``TokenStorage`` kept in memory, per process,
  with every access token, refresh token and client secret wrapped in a ``Secret`` — so no
  repr, log line, journal entry, span or prompt can show one; nothing is written to disk;
- the **user agent seam** of the code flow: ``authorize(url) -> redirect URL``; the default,
  ``loopback_authorize``, prints the URL (and opens a browser when it can) and waits for the
  redirect on a listener bound to 127.0.0.1;
- the **errors**: every failure of the flow becomes an ``MCPConnectionError`` that says what
  happened (refused token, resource or issuer mismatch, a server that wants authorization when
  none is configured, ...) and what to do, and never quotes a token or a secret.

Imports the SDK only when a connection is opened (``httpx_auth``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NoReturn
from urllib.parse import parse_qs, urlsplit

from tether.credentials import Secret
from tether.mcp.errors import MCPConnectionError

if TYPE_CHECKING:
    import httpx2

    from tether.mcp.config import MCPServer

#: Given the authorization URL, bring the user (or a test's user agent) through it and return the
#: URL the authorization server redirected to, with its ``code`` and ``state`` (or ``error``).
Authorize = Callable[[str], Awaitable[str]]
SecretMethod = Literal["client_secret_basic", "client_secret_post"]
CodeMethod = Literal["client_secret_basic", "client_secret_post", "none"]

log = logging.getLogger("tether.mcp.oauth")
AUTHORIZE_TIMEOUT = 300.0  # seconds the default user agent waits for the browser's redirect


def _scopes(value: Iterable[str] | str) -> tuple[str, ...]:
    items = value.split() if isinstance(value, str) else [str(s) for s in value]
    for scope in items:
        if not scope or any(c.isspace() for c in scope):
            raise ValueError(f"OAuth scope {scope!r} is empty or contains whitespace; give "
                             "scopes as a list such as ['mcp:read', 'mcp:write']")
    return tuple(items)


def _secret(what: str, value: Secret | str | None) -> Secret | None:
    if value is None or isinstance(value, Secret):
        return value
    if isinstance(value, str):
        return Secret(value)
    raise TypeError(f"{what} must be a Secret (or a str, which is wrapped), got "
                    f"{type(value).__name__}")


def _client_id(value: object) -> None:
    if not isinstance(value, str) or not value or value != value.strip():
        raise ValueError("client_id must be a non-empty string without surrounding spaces")


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
        raise TypeError("a TokenStore cannot be pickled or copied: it holds OAuth tokens")


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
            raise ValueError("client_secret= needs the client_id= it belongs to")
        if self.client_metadata_url is not None and (
                not self.client_metadata_url.startswith("https://")
                or urlsplit(self.client_metadata_url).path in ("", "/")):
            raise ValueError("client_metadata_url must be an https URL with a path (the client-id "
                             f"metadata document), got {self.client_metadata_url!r}")
        if self.redirect_uri is not None and not self.redirect_uri.startswith(
                ("http://", "https://")):
            raise ValueError(f"redirect_uri must be an http(s) URL, got {self.redirect_uri!r}")
        if self.authorize is not None and not callable(self.authorize):
            raise TypeError("authorize must be an async callable: authorize(url) -> redirect URL")
        object.__setattr__(self, "scopes", _scopes(self.scopes))
        if self.token_endpoint_auth_method is not None and self.token_endpoint_auth_method not in (
                "client_secret_basic", "client_secret_post", "none"):
            raise ValueError("token_endpoint_auth_method must be 'client_secret_basic', "
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
            raise ValueError("ClientCredentials needs client_secret= (a Secret)")
        object.__setattr__(self, "client_secret", _secret("client_secret", self.client_secret))
        if self.method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("method must be 'client_secret_basic' or 'client_secret_post', got "
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
            raise ValueError("PrivateKeyJWT needs private_key= (a Secret holding the PEM key)")
        object.__setattr__(self, "private_key", _secret("private_key", self.private_key))
        if not isinstance(self.lifetime, int) or isinstance(self.lifetime, bool) or not (
                0 < self.lifetime <= 3600):
            raise ValueError(f"lifetime must be 1..3600 seconds, got {self.lifetime!r}")
        object.__setattr__(self, "scopes", _scopes(self.scopes))

    def secrets(self) -> list[Secret]:
        return [self.private_key, *self.store.secrets()]


OAuth = AuthorizationCode | ClientCredentials | PrivateKeyJWT
FLOWS = (AuthorizationCode, ClientCredentials, PrivateKeyJWT)


# -- the user agent of the code flow -----------------------------------------------------------


def loopback_port(redirect_uri: str) -> tuple[str, int, str] | None:
    """``(host, port, path)`` when ``redirect_uri`` is a plain-http loopback URL with a port."""
    parts = urlsplit(redirect_uri)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    if parts.port is None:
        return None
    return parts.hostname, parts.port, parts.path or "/"


def free_loopback_redirect() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}/callback"


PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
        b"tether: the authorization is complete; you can close this tab.\n")
NOT_HERE = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n"


def loopback_authorize(redirect_uri: str, *, timeout: float = AUTHORIZE_TIMEOUT,
                       open_browser: bool = True) -> Authorize:
    """The default user agent: print the authorization URL on stderr (and open a browser when a
    graphical one may exist), then wait up to ``timeout`` seconds for the redirect on
    ``redirect_uri``, a listener bound to 127.0.0.1 (loopback only). Returns the redirect URL."""
    where = loopback_port(redirect_uri)
    if where is None:
        raise ValueError(f"the default authorize needs an http loopback redirect_uri with a port "
                         f"(http://127.0.0.1:PORT/callback), got {redirect_uri!r}; pass "
                         "authorize= to handle another redirect URI")
    _, port, path = where

    async def authorize(url: str) -> str:
        got: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
                parts = line.split()
                target = parts[1] if len(parts) >= 2 else ""
                if parts[:1] == ["GET"] and urlsplit(target).path == path and not got.done():
                    writer.write(PAGE)
                    got.set_result(f"http://127.0.0.1:{port}{target}")
                else:
                    writer.write(NOT_HERE)
                await writer.drain()
            except (OSError, TimeoutError, UnicodeError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", port)
        try:
            print(f"tether: to authorize this MCP client, open this URL in a browser:\n  {url}",
                  file=sys.stderr, flush=True)
            if open_browser and _has_browser():
                with contextlib.suppress(Exception):
                    import webbrowser

                    await asyncio.to_thread(webbrowser.open, url)
            try:
                async with asyncio.timeout(timeout):
                    return await got
            except TimeoutError:
                raise MCPConnectionError(
                    f"no authorization arrived at {redirect_uri} within {timeout:g}s; open the "
                    "printed URL in a browser and sign in (and raise the server's "
                    "connect_timeout, which bounds the whole connection)") from None
        finally:
            server.close()
            await server.wait_closed()

    return authorize


def _has_browser() -> bool:
    """A graphical browser may exist (a text one would take over the terminal instead)."""
    import os

    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def code_from(redirect: str) -> tuple[str, str | None, str | None]:
    """``(code, state, iss)`` from the redirect URL; an ``error`` becomes a clear error."""
    query = parse_qs(urlsplit(redirect).query)

    def one(key: str) -> str | None:
        values = query.get(key)
        return values[0] if values else None

    error = one("error")
    if error is not None:
        detail = one("error_description")
        raise MCPConnectionError(
            f"the authorization server refused the authorization ({error}"
            f"{': ' + detail[:200] if detail else ''}); sign in again, or check the client's "
            "registration and the scopes it asks for")
    code = one("code")
    if code is None:
        raise MCPConnectionError("the redirect after the authorization carried no code; check "
                                 "that authorize() returns the URL the authorization server "
                                 "redirected to")
    return code, one("state"), one("iss")


# -- building the httpx auth ---------------------------------------------------------------------


def _provider(server_url: str, auth: OAuth) -> Any:
    """The SDK's provider for ``auth`` (imports the SDK)."""
    scope = " ".join(auth.scopes) or None
    if isinstance(auth, ClientCredentials):
        from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

        return ClientCredentialsOAuthProvider(
            server_url, auth.store, auth.client_id, auth.client_secret.get(),
            token_endpoint_auth_method=auth.method, scope=scope, issuer=auth.issuer)
    if isinstance(auth, PrivateKeyJWT):
        from mcp.client.auth.extensions.client_credentials import (
            PrivateKeyJWTOAuthProvider,
            SignedJWTParameters,
        )

        key, client, algorithm, lifetime = (auth.private_key, auth.client_id, auth.algorithm,
                                            auth.lifetime)

        async def assertion(audience: str) -> str:  # the key is read only when signing
            mint = SignedJWTParameters(issuer=client, subject=client, signing_key=key.get(),
                                       signing_algorithm=algorithm, lifetime_seconds=lifetime)
            return await mint.create_assertion_provider()(audience)

        return PrivateKeyJWTOAuthProvider(server_url, auth.store, auth.client_id, assertion,
                                          scope=scope, issuer=auth.issuer)
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    # a dynamic registration is bound to its redirect URI: a later login reuses it
    redirect_uri = auth.redirect_uri or auth.store.redirect_uri() or free_loopback_redirect()
    authorize = auth.authorize or loopback_authorize(redirect_uri)
    method = auth.token_endpoint_auth_method or (
        "client_secret_basic" if auth.client_secret is not None else "none")
    metadata = OAuthClientMetadata(
        client_name=auth.client_name, redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        scope=scope, token_endpoint_auth_method=None if auth.client_id is None else method)
    if auth.client_id is not None:
        from mcp.shared.auth import OAuthClientInformationFull

        info = OAuthClientInformationFull(
            client_id=auth.client_id, redirect_uris=[redirect_uri],
            client_secret=None if auth.client_secret is None else auth.client_secret.get(),
            token_endpoint_auth_method=method, grant_types=["authorization_code",
                                                            "refresh_token"])
        auth.store.put_client(info)
    got: list[tuple[str, str | None, str | None]] = []

    async def redirect_handler(url: str) -> None:
        got.clear()
        got.append(code_from(await authorize(url)))

    async def callback_handler() -> Any:
        if not got:
            raise MCPConnectionError("the authorization step returned no redirect")
        code, state, iss = got.pop()
        return AuthorizationCodeResult(code=code, state=state, iss=iss)

    return OAuthClientProvider(server_url, metadata, auth.store, redirect_handler,
                               callback_handler, client_metadata_url=auth.client_metadata_url)


def httpx_auth(server: MCPServer, failed: Callable[[MCPConnectionError], None] | None = None,
               ) -> httpx2.Auth:
    """The ``httpx2.Auth`` for ``server``'s HTTP client: the SDK's provider for its ``auth``
    inside tether's guard, or (no ``auth``) a guard that explains a server wanting one.
    ``failed`` hears each error before it is raised: once the session is up, the SDK's transport
    swallows an error raised by the auth flow and only reports the connection closed."""
    auth = server.auth
    inner = None if auth is None else _provider(str(server.url), auth)
    guard: httpx2.Auth = _guard_class()(server, inner, failed)
    return guard


_GUARD: Any = None


def _guard_class() -> Any:
    """The guard subclasses ``httpx2.Auth``, imported with the SDK (so built lazily)."""
    global _GUARD
    if _GUARD is not None:
        return _GUARD
    import httpx2

    class Guard(httpx2.Auth):
        """Runs the SDK's flow and turns what goes wrong into an ``MCPConnectionError``."""


        def __init__(self, server: MCPServer, inner: Any,
                     failed: Callable[[MCPConnectionError], None] | None) -> None:
            self.server = server
            self.inner = inner
            self.failed = failed

        def _raise(self, error: MCPConnectionError) -> NoReturn:
            if self.failed is not None:
                self.failed(error)
            raise error

        def __repr__(self) -> str:
            return f"<tether OAuth guard for MCP server {self.server.name!r}>"

        async def async_auth_flow(self, request: httpx2.Request,
                                  ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            if self.inner is None:
                plain = yield request
                if plain.status_code == 401 and _is_bearer(plain) and "authorization" in {
                        k.lower() for k in self.server.headers}:
                    self._raise(MCPConnectionError(self._say(
                        "refused the credentials of the Authorization header it was given "
                        "(401 with a Bearer challenge); the token may be invalid, expired or "
                        "revoked: renew it, or let tether get tokens with MCPServer.http(..., "
                        "auth=...), see the MCP authorization guide")))
                if plain.status_code == 401 and _is_bearer(plain):
                    self._raise(MCPConnectionError(self._say(
                        "demands OAuth authorization (it answered 401 with a Bearer challenge) "
                        "and no auth= is configured; connect with MCPServer.http(..., auth="
                        "AuthorizationCode(...) or ClientCredentials(...)), see the MCP "
                        "authorization guide")))
                return
            flow = self.inner.async_auth_flow(request)
            response: httpx2.Response | None = None
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                pass
            except MCPConnectionError as exc:
                self._raise(exc)
            except Exception as exc:
                error = self._explain(exc)
                if self.failed is not None:
                    self.failed(error)
                raise error from None
            finally:
                await flow.aclose()
            if response is not None and response.request.url == request.url:
                self._check_final(response)

        def _say(self, what: str) -> str:
            return f"MCP server {self.server.name!r} ({self.server.where()}) {what}"

        def _check_final(self, response: httpx2.Response) -> None:
            status = response.status_code
            if status == 401:
                self._forget()
                self._raise(MCPConnectionError(self._say(
                    "refused the access token it was given (401 after authorization: the token "
                    "is invalid, expired or revoked, or meant for another resource); the stored "
                    "tokens were dropped, so reconnecting authorizes again; if it keeps "
                    "refusing, check the authorization server the server trusts and the "
                    "client's registration")))
            if status == 403 and _www(response, "error") == "insufficient_scope":
                scope = _www(response, "scope")
                self._raise(MCPConnectionError(self._say(
                    "still refused the request for insufficient scope after authorizing "
                    f"again{' (it asks for ' + repr(scope) + ')' if scope else ''}; tether "
                    "authorizes at most once per request, so it stops here: grant the client "
                    "those scopes at the "
                    "authorization server, or use a server that asks for scopes it can grant")))

        def _forget(self) -> None:
            auth = self.server.auth
            if auth is not None:
                auth.store.drop_tokens()
                with contextlib.suppress(AttributeError):
                    self.inner.context.clear_tokens()

        def _explain(self, exc: Exception) -> MCPConnectionError:
            text = _scrub(str(exc), self.server)
            kind = type(exc).__name__
            lower = text.lower()
            if "protected resource" in lower and "does not match" in lower:
                what = ("advertises protected resource metadata for another resource "
                        f"({text}); tether refused it before any authorization request, as a "
                        "server may not borrow another resource's tokens (RFC 8707); check the "
                        "URL, or ask the server's operator to fix its metadata")
            elif "issuer mismatch" in lower or "configured issuer" in lower:
                what = (f"led to authorization server metadata whose issuer is not the one "
                        f"expected ({text}); tether refused it (RFC 8414 §3.3): the metadata may "
                        "be misconfigured or forged; check the authorization server, or the "
                        "issuer= configured")
            elif "state parameter mismatch" in lower:
                what = ("got an authorization redirect whose state does not match the request; "
                        "it was refused (possible forged redirect); authorize again")
            elif kind == "OAuthRegistrationError":
                what = (f"could not register the client dynamically ({text}); pre-register a "
                        "client and pass client_id= (and client_secret=)")
            elif kind == "OAuthTokenError":
                status = text.split(")")[0] + ")" if text.startswith("Token exchange") else text
                what = (f"got no token from the authorization server ({status[:200]}); check "
                        "the client id and secret (or key), the authentication method and the "
                        "scopes the client may request")
            else:
                what = f"could not complete OAuth authorization ({kind}: {text[:300]})"
            return MCPConnectionError(self._say(what))

    _GUARD = Guard
    return Guard


def _www(response: Any, key: str) -> str | None:
    from mcp.client.auth.utils import extract_field_from_www_auth

    value = extract_field_from_www_auth(response, key)
    return value if isinstance(value, str) else None


def _is_bearer(response: Any) -> bool:
    header = str(response.headers.get("www-authenticate", ""))
    return header.lower().startswith("bearer")


def _scrub(text: str, server: MCPServer) -> str:
    """``text`` with every secret the configuration and its store hold replaced."""
    auth = server.auth
    if auth is not None:
        for secret in auth.secrets():
            text = text.replace(secret.get(), "****")
    return text
