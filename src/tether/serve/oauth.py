"""Who is calling: a tether MCP server as an OAuth 2.1 resource server.

Why: without authorization, ``tether mcp serve --transport http`` and ``tether mcp proxy``
answer whoever reaches the port, and the policy's Subject is whatever the deployment typed on
the command line. With an issuer configured, every HTTP request must carry a bearer token (a
JWT) signed by that issuer's keys (``tether.serve.jwks``), issued for this server, unexpired;
the Subject each call is decided for — user, roles, tenant — is then read from the token's
claims, so the policy and the journal name the caller the issuer vouched for.

Decisions:

- The MCP SDK's own seams do the HTTP part (``TokenVerifier``, ``RequireAuthMiddleware``,
  ``AuthSettings``, RFC 9728 protected resource metadata at
  ``/.well-known/oauth-protected-resource/...`` and the ``WWW-Authenticate`` challenge naming
  it); this module is the ``TokenVerifier``. Signatures are PyJWT's (with ``cryptography``):
  tether writes no cryptography of its own.
- A token is refused unless ALL of these hold: its header's ``alg`` is in the allow-list (only
  asymmetric algorithms may be listed: never ``none``, never an HS* that a public key could be
  used as the secret of); its ``kid`` names a key the issuer publishes (one refetch of the set
  when it does not, ``KeySet``); that key's type fits the algorithm and the key's own ``alg``,
  if it states one, is the header's; the signature verifies; ``iss`` is the issuer exactly;
  ``aud`` holds this resource's URL (RFC 8707; a trailing slash aside); ``exp`` is present and
  passed by no more than ``leeway`` seconds, and ``nbf``/``iat``, when present, are not in the
  future by more than that (the SDK then refuses any ``exp`` already past, leeway or not);
  the configured subject claim is a non-empty string; and, when a tenant claim is configured,
  that claim is a non-empty string.
- Until the signature has verified, nothing from the token is used but its header's ``alg`` and
  ``kid``, and those only to pick a key (read with the standard library: PyJWT's own header
  read checks every character in Python and would double the cost; PyJWT parses and verifies
  the same segment again). A token longer than 16 KiB is refused unread. After it, only the
  configured claims are read: the subject, the roles (a list of strings or a space-separated
  string; a dotted name such as ``realm_access.roles`` reaches into an object), the tenant, the
  scopes (``scope`` as RFC 9068 spells it, or a list), and ``client_id``/``azp`` for the SDK's
  session binding.
- The token itself is never kept: the ``AccessToken`` handed to the SDK carries a SHA-256
  fingerprint in its place, so no log line, repr or journal event can hold a bearer token.
- A refused token is answered by the SDK as 401 with the challenge; why it was refused is
  counted (``refusals``) for tests and operators, never echoed to the caller.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, RunError
from tether.serve.jwks import DEFAULT_MAX_AGE, DEFAULT_MIN_REFRESH, KeySet, check_fetch_url

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

ALLOWED_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                                "ES256", "ES384", "ES512", "EdDSA"})
DEFAULT_ALGORITHMS = ("RS256", "ES256", "EdDSA")
MAX_TOKEN_CHARS = 16_384  # a longer bearer token is refused before any parsing
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}  # by the algorithm's prefix


@dataclass(frozen=True, slots=True)
class Claims:
    """Which claims of a verified token make the policy's Subject. ``roles`` and ``tenant``
    None: not read (no roles; the server's configured tenant)."""

    subject: str = "sub"
    roles: str | None = "roles"
    tenant: str | None = None
    scope: str = "scope"


@dataclass(frozen=True, slots=True)
class OAuth:
    """A resource server's authorization: tokens from ``issuer``, for ``resource``.

    ``resource`` is this server's URL as its clients reach it (the tokens' audience, RFC 8707);
    None: the URL it serves at (``http://127.0.0.1:PORT/mcp``), known once bound.
    ``jwks_url`` None: found through the issuer's metadata. ``scopes``: every token must hold
    all of these (403 ``insufficient_scope`` otherwise)."""

    issuer: str
    resource: str | None = None
    jwks_url: str | None = None
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    scopes: tuple[str, ...] = ()
    claims: Claims = field(default_factory=Claims)
    leeway: float = 30.0
    jwks_min_refresh: float = DEFAULT_MIN_REFRESH
    jwks_max_age: float = DEFAULT_MAX_AGE

    def __post_init__(self) -> None:
        check_fetch_url(self.issuer, "issuer URL")
        if self.jwks_url is not None:
            check_fetch_url(self.jwks_url, "JWKS URL")
        refused = [a for a in self.algorithms if a not in ALLOWED_ALGORITHMS]
        if refused or not self.algorithms:
            raise InvalidArgument(
                f"signature algorithms {refused or '(none)'} are not allowed: list one or more "
                f"of {', '.join(sorted(ALLOWED_ALGORITHMS))} (never 'none', never HS*: a "
                "shared-secret algorithm lets a public key be used as the secret)")
        if not 0 <= self.leeway <= 300:
            raise InvalidArgument(f"leeway must be 0-300 seconds, got {self.leeway}")
        if not (self.jwks_min_refresh >= 0 and self.jwks_max_age > 0):
            raise InvalidArgument("the key set's refresh interval must be >= 0 and its max age "
                                  f"> 0 seconds, got {self.jwks_min_refresh} and "
                                  f"{self.jwks_max_age}")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a verified token says is calling: the policy's Subject."""

    user_id: str
    tenant_id: str | None
    roles: tuple[str, ...]
    issuer: str

    def key(self) -> str:
        """A short digest naming this identity (in a client key; never a claim's raw text)."""
        spelled = "\x00".join((self.issuer, self.user_id, self.tenant_id or "",
                               *self.roles))
        return hashlib.sha256(spelled.encode()).hexdigest()[:16]


def unverified_header(token: str) -> dict[str, Any]:
    """A JWT's header, read only to pick the algorithm and the key (PyJWT reads the same
    segment again and verifies it). Refused for anything but three segments within
    ``MAX_TOKEN_CHARS`` whose first is a base64url JSON object."""
    head, dots = token.partition(".")[0], token.count(".")
    if dots != 2 or len(token) > MAX_TOKEN_CHARS:
        raise Refused("malformed")
    try:
        found = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error) as exc:
        raise Refused("malformed") from exc
    if not isinstance(found, dict):
        raise Refused("malformed")
    return found


def fingerprint(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:32]


def claim(claims: Mapping[str, Any], name: str) -> Any:
    """A claim by name; a dotted name reaches into objects (``realm_access.roles``)."""
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def strings(value: Any) -> tuple[str, ...]:
    """A claim that lists names: a list of strings, or one space-separated string."""
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str) and v)
    return ()


class Refused(RunError):
    """Why a token was refused: an internal signal (drawn in ``tether.errors``) that never
    leaves ``verify_token``."""


class JWTVerifier:
    """The SDK's ``TokenVerifier`` for JWT access tokens from one issuer."""

    def __init__(self, oauth: OAuth, resource: str, keys: KeySet | None = None) -> None:
        import jwt  # imported here, once: a server without authorization never loads it
        from mcp.server.auth.provider import AccessToken

        self._jwt, self._access = jwt, AccessToken
        self.oauth = oauth
        self.resource = resource.rstrip("/")
        self.keys = keys or KeySet(oauth.issuer, jwks_url=oauth.jwks_url,
                                   min_refresh=oauth.jwks_min_refresh,
                                   max_age=oauth.jwks_max_age)
        self.refusals: Counter[str] = Counter()
        self._prepared: dict[tuple[str, str | None], Any] = {}  # for the key set fetched
        self._generation = 0

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self._verify(token)
        except Refused as why:
            self.refusals[str(why)] += 1
            return None

    async def _verify(self, token: str) -> AccessToken:
        jwt = self._jwt
        header = unverified_header(token)
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.oauth.algorithms:
            raise Refused("algorithm")
        if kid is not None and not isinstance(kid, str):
            raise Refused("malformed")
        key = await self._key(kid, alg)
        try:
            claims = jwt.decode(
                token, key, algorithms=[alg], audience=[self.resource, self.resource + "/"],
                issuer=self.oauth.issuer, leeway=self.oauth.leeway,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True,
                         "verify_exp": True, "verify_nbf": True, "verify_iat": True,
                         "verify_aud": True, "verify_iss": True})
        except jwt.ExpiredSignatureError as exc:
            raise Refused("expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise Refused("not yet valid") from exc
        except jwt.InvalidAudienceError as exc:
            raise Refused("audience") from exc
        except jwt.InvalidIssuerError as exc:
            raise Refused("issuer") from exc
        except jwt.InvalidSignatureError as exc:
            raise Refused("signature") from exc
        except jwt.PyJWTError as exc:
            raise Refused("invalid") from exc
        identity = self.identity(claims)
        client_id = claims.get("client_id", claims.get("azp"))
        return self._access(
            token=fingerprint(token),
            client_id=client_id if isinstance(client_id, str) and client_id
            else identity.user_id,
            scopes=list(strings(claims.get(self.oauth.claims.scope))),
            expires_at=int(claims["exp"]), resource=self.resource, subject=identity.user_id,
            claims={"iss": identity.issuer, IDENTITY: identity})

    async def _key(self, kid: str | None, alg: str) -> Any:
        jwk = await self.keys.key(kid)
        if jwk is None:
            raise Refused("unknown key")
        if jwk.get("kty") != KEY_TYPES.get(alg[:2]) or jwk.get("alg", alg) != alg:
            raise Refused("key type")
        if self._generation != self.keys.fetches:  # a new set: keys prepared from the old go
            self._prepared.clear()
            self._generation = self.keys.fetches
        prepared = self._prepared.get((alg, kid))
        if prepared is None:
            try:
                prepared = self._jwt.PyJWK(dict(jwk), algorithm=alg).key
            except self._jwt.PyJWKError as exc:
                raise Refused("key type") from exc
            self._prepared[(alg, kid)] = prepared
        return prepared

    def identity(self, claims: Mapping[str, Any]) -> Identity:
        """The Subject a VERIFIED token's configured claims name; Refused when they do not."""
        names = self.oauth.claims
        user = claim(claims, names.subject)
        if not isinstance(user, str) or not user:
            raise Refused("subject")
        tenant: str | None = None
        if names.tenant is not None:
            tenant = claim(claims, names.tenant)
            if not isinstance(tenant, str) or not tenant:
                raise Refused("tenant")
        roles = () if names.roles is None else strings(claim(claims, names.roles))
        return Identity(user, tenant, tuple(sorted(set(roles))), self.oauth.issuer)


IDENTITY = "tether/identity"  # where the verified Identity rides in AccessToken.claims


def identity_of(access: AccessToken | None) -> Identity | None:
    """The Identity a request's verified token carries (None: no authorization)."""
    if access is None:
        return None
    found = (access.claims or {}).get(IDENTITY)
    return found if isinstance(found, Identity) else None
