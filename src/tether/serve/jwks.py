"""The issuer's signing keys, as a resource server needs them: found, fetched, cached, refreshed.

Why: a bearer token is only as trustworthy as the key its signature is checked with, and that
key belongs to the authorization server, which rotates it. So a tether MCP server serving with
authorization (``tether.serve.oauth``) keeps the issuer's JSON Web Key Set here: found through
the issuer's metadata (RFC 8414 ``/.well-known/oauth-authorization-server``, else OpenID
Connect's ``/.well-known/openid-configuration``) unless a JWKS URL is configured, fetched on
first use, and fetched again when a token names a key id (``kid``) the set does not hold — the
issuer has rotated — or when the set is older than ``max_age``.

Decisions:

- A refetch for an unknown ``kid`` happens at most once per ``min_refresh`` seconds, and one
  fetch at a time (requests that waited while a fetch was under way use what it brought, never
  fetch again): a stream of tokens naming made-up key ids cannot turn this server into a flood
  against the issuer. Until the next refetch is allowed such a token is refused.
- Only asymmetric keys are kept (``kty`` RSA, EC, OKP). A symmetric (``oct``) key published in a
  set would let anyone who can read the set mint tokens; it is dropped, never used.
- The metadata must name the configured issuer exactly (RFC 8414 §3.3), and the issuer and
  JWKS URLs must be ``https``, or ``http`` to a loopback host (a test's or a sidecar's): a key
  fetched in clear text over a network could be anyone's.
- A stale set is refetched under the same limit. A failed fetch keeps the keys already held
  (an issuer briefly down does not lock everyone out before their tokens expire) and is
  retried no sooner than ``min_refresh`` later.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from tether.errors import InvalidArgument, Unreachable

ASYMMETRIC = frozenset({"RSA", "EC", "OKP"})
FETCH_TIMEOUT = 10.0
DEFAULT_MIN_REFRESH = 30.0
DEFAULT_MAX_AGE = 3600.0

Fetch = Callable[[str], Awaitable[Any]]  # GET a URL, answer its JSON body


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_fetch_url(url: str, what: str) -> str:
    """``url`` when it is https, or http to a loopback host; InvalidArgument otherwise."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return url
    raise InvalidArgument(f"the {what} {url!r} must be an https URL (or http to 127.0.0.1 / "
                          "localhost): keys fetched in clear text could be anyone's")


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where an issuer's metadata may be: RFC 8414's well-known URI (inserted before the
    issuer's path), then OpenID Connect discovery's (appended to it)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return (f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}{path}/.well-known/openid-configuration")


async def http_get_json(url: str) -> Any:
    """GET ``url`` and decode its JSON body; Unreachable says why not."""
    import httpx2

    try:
        async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False) as client:
            response = await client.get(url, headers={"Accept": "application/json"})
            response.raise_for_status()
            return response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        raise Unreachable(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from exc


class KeySet:
    """The signing keys of one issuer, by ``kid``, fetched lazily and refreshed on rotation."""

    def __init__(self, issuer: str, *, jwks_url: str | None = None,
                 min_refresh: float = DEFAULT_MIN_REFRESH, max_age: float = DEFAULT_MAX_AGE,
                 fetch: Fetch = http_get_json,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if min_refresh < 0 or max_age <= 0:
            raise InvalidArgument("min_refresh must be >= 0 and max_age > 0 seconds, got "
                                  f"{min_refresh} and {max_age}")
        self.issuer = check_fetch_url(issuer, "issuer URL")
        self.jwks_url = None if jwks_url is None else check_fetch_url(jwks_url, "JWKS URL")
        self.min_refresh = min_refresh
        self.max_age = max_age
        self._fetch = fetch
        self._clock = clock
        self._keys: dict[str | None, Mapping[str, Any]] = {}
        self._fetched_at: float | None = None  # last successful fetch
        self._tried_at: float | None = None  # last attempt, successful or not
        self._attempts = 0  # attempts ended
        self._lock = asyncio.Lock()
        self.fetches = 0  # successful fetches, for tests and the benchmark

    @property
    def kids(self) -> frozenset[str | None]:
        return frozenset(self._keys)

    async def key(self, kid: str | None) -> Mapping[str, Any] | None:
        """The JWK named ``kid`` (None: the set's only key), fetching or refreshing the set
        when allowed; None when the issuer has no such key."""
        now = self._clock()
        stale = self._fetched_at is None or now - self._fetched_at >= self.max_age
        if stale or self._find(kid) is None:
            await self._refresh()
        return self._find(kid)

    def _find(self, kid: str | None) -> Mapping[str, Any] | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        attempts = self._attempts
        async with self._lock:
            if self._attempts != attempts:  # an attempt ended while this one waited: its keys
                return  # are as fresh as a fetch now would bring
            now = self._clock()
            if self._tried_at is not None and now - self._tried_at < self.min_refresh:
                return
            self._tried_at = now
            try:
                keys = await self._load()
            except Unreachable:
                return  # keep what is held; the next try waits min_refresh
            finally:
                self._attempts += 1
            self._keys, self._fetched_at = keys, self._clock()
            self.fetches += 1

    async def _load(self) -> dict[str | None, Mapping[str, Any]]:
        url = self.jwks_url or await self._discover()
        document = await self._fetch(url)
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise Unreachable(f"{url} is not a JSON Web Key Set (no 'keys' list)")
        keys: dict[str | None, Mapping[str, Any]] = {}
        for jwk in entries:
            if (isinstance(jwk, dict) and jwk.get("kty") in ASYMMETRIC
                    and jwk.get("use", "sig") == "sig"):
                kid = jwk.get("kid")
                keys[kid if isinstance(kid, str) else None] = jwk
        return keys

    async def _discover(self) -> str:
        failures = []
        for url in metadata_urls(self.issuer):
            try:
                metadata = await self._fetch(url)
            except Unreachable as exc:
                failures.append(str(exc))
                continue
            named = metadata.get("issuer") if isinstance(metadata, dict) else None
            if named != self.issuer:
                failures.append(f"{url} names issuer {named!r}, not {self.issuer!r}")
                continue
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                failures.append(f"{url} has no jwks_uri")
                continue
            try:
                self.jwks_url = check_fetch_url(jwks_uri, "JWKS URL")
            except InvalidArgument as exc:
                failures.append(str(exc))
                continue
            return self.jwks_url
        raise Unreachable("cannot find the issuer's keys: " + "; ".join(failures))
