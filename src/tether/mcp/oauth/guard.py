"""The ``httpx2.Auth`` an MCP server's HTTP client carries: the SDK's OAuth provider inside
tether's guard.

Why: the ``mcp`` SDK runs the protocol (discovery, resource and issuer checks, PKCE, dynamic
registration, step-up, refresh); tether does not redo it. What tether owns is what a failure
says: every one becomes an ``MCPConnectionError`` naming what happened and what to do, and never
quoting a token or a secret. Imports the SDK only when a connection is opened.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, NoReturn

from tether.mcp.errors import MCPConnectionError
from tether.mcp.oauth.flows import ClientCredentials, OAuth, PrivateKeyJWT, hide_secrets
from tether.mcp.oauth.user_agent import code_from, free_loopback_redirect, loopback_authorize

if TYPE_CHECKING:
    import httpx2

    from tether.mcp.config import MCPServer


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


@functools.cache
def _guard_class() -> Any:
    """The guard subclasses ``httpx2.Auth``, imported with the SDK (so built lazily, once)."""
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
            except StopAsyncIteration:  # the SDK's flow is done: its last response is checked
                pass  # below, after the flow is closed
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
    return text if server.auth is None else hide_secrets(server.auth, text)
