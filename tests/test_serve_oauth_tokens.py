"""``tether.serve.oauth.JWTVerifier`` and ``tether.serve.jwks.KeySet``: each check a bearer token
must pass, each attacked on its own (the reason it is refused is asserted, so removing one check
makes its test fail), with the issuer's keys served by an in-process fake of its endpoints.

The end-to-end tests, against a real authorization server in its own process and the real
``tether mcp serve``, are tests/test_serve_oauth.py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from hypothesis import given, settings
from hypothesis import strategies as st
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from tether.errors import InvalidArgument, Unreachable
from tether.serve.jwks import KeySet, check_fetch_url, metadata_urls
from tether.serve.oauth import Claims, Identity, JWTVerifier, OAuth, identity_of

ISSUER = "https://idp.example.com/realms/acme"
RESOURCE = "https://tools.example.com/mcp"
JWKS_URL = "https://idp.example.com/realms/acme/jwks"

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()
SIGNERS: dict[str, tuple[Any, str]] = {"RS256": (RSA_KEY, "rsa-1"), "ES256": (EC_KEY, "ec-1"),
                                       "EdDSA": (ED_KEY, "ed-1")}


def jwk_of(key: Any, kid: str, alg: str | None) -> dict[str, Any]:
    algorithm = {"rsa": RSAAlgorithm, "ec": ECAlgorithm, "ed": OKPAlgorithm}[kid.split("-")[0]]
    found = algorithm.to_jwk(key.public_key(), as_dict=True)
    return {**found, "kid": kid, "use": "sig", **({"alg": alg} if alg else {})}


class Issuer:
    """The issuer's metadata and JWKS endpoints, as a fetch function (counts its calls)."""

    def __init__(self) -> None:
        self.keys = [jwk_of(RSA_KEY, "rsa-1", "RS256"), jwk_of(EC_KEY, "ec-1", None),
                     jwk_of(ED_KEY, "ed-1", "EdDSA")]
        self.metadata_issuer = ISSUER
        self.fetched: list[str] = []
        self.down = False

    async def fetch(self, url: str) -> Any:
        self.fetched.append(url)
        if self.down:
            raise Unreachable(f"cannot fetch {url}: down")
        if url == metadata_urls(ISSUER)[0]:
            return {"issuer": self.metadata_issuer, "jwks_uri": JWKS_URL}
        if url == JWKS_URL:
            return {"keys": list(self.keys)}
        raise Unreachable(f"cannot fetch {url}: 404")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    found: dict[str, Any] = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "iat": now,
                             "exp": now + 300, "scope": "mcp:tools notes:read",
                             "tenant": "acme", "roles": ["writer", "support"],
                             "client_id": "desk-app"}
    found.update(changes)
    return {k: v for k, v in found.items() if v is not None}


def mint(alg: str = "RS256", *, kid: str | None = None, key: Any = None,
         **changes: Any) -> str:
    signer, default_kid = SIGNERS[alg]
    return jwt.encode(claims(**changes), key or signer, algorithm=alg,
                      headers={"kid": kid or default_kid})


def verifier(issuer: Issuer, clock: Clock | None = None, **options: Any) -> JWTVerifier:
    oauth = OAuth(issuer=ISSUER, resource=RESOURCE,
                  claims=options.pop("claims", Claims(tenant="tenant")), **options)
    keys = KeySet(ISSUER, fetch=issuer.fetch, min_refresh=oauth.jwks_min_refresh,
                  max_age=oauth.jwks_max_age,
                  clock=clock or Clock())
    return JWTVerifier(oauth, RESOURCE, keys)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


async def refused(check: JWTVerifier, token: str) -> str:
    """The one reason ``token`` was refused (it must be refused)."""
    before = sum(check.refusals.values())
    assert await check.verify_token(token) is None
    assert sum(check.refusals.values()) == before + 1
    (reason,) = [r for r, n in check.refusals.items() if n]
    check.refusals.clear()
    return reason


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
async def test_a_valid_token_names_its_subject_roles_tenant_and_scopes(alg: str) -> None:
    check = verifier(Issuer())
    token = mint(alg)
    access = await check.verify_token(token)
    assert access is not None
    assert access.subject == "alice" and access.client_id == "desk-app"
    assert access.scopes == ["mcp:tools", "notes:read"] and access.resource == RESOURCE
    assert identity_of(access) == Identity("alice", "acme", ("support", "writer"), ISSUER)
    assert token not in repr(access) and token not in access.token  # only a fingerprint kept
    assert access.token == "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:32]


async def test_expired_and_not_yet_valid_tokens_are_refused() -> None:
    check = verifier(Issuer(), leeway=0)
    now = int(time.time())
    assert await refused(check, mint(exp=now - 5)) == "expired"
    assert await refused(check, mint(nbf=now + 120)) == "not yet valid"
    assert await refused(check, mint(iat=now + 120)) == "not yet valid"  # issued in the future
    assert await refused(check, mint(exp=None)) == "invalid"  # exp is required


async def test_another_audience_is_refused_and_a_list_holding_this_one_is_not() -> None:
    check = verifier(Issuer())
    assert await refused(check, mint(aud="https://other.example.com/mcp")) == "audience"
    assert await refused(check, mint(aud=RESOURCE + "/admin")) == "audience"
    assert await refused(check, mint(aud=None)) == "invalid"  # aud is required
    assert await check.verify_token(mint(aud=["https://other.example.com", RESOURCE])) is not None
    assert await check.verify_token(mint(aud=RESOURCE + "/")) is not None


async def test_another_issuer_is_refused_even_when_signed_with_the_right_key() -> None:
    check = verifier(Issuer())
    assert await refused(check, mint(iss="https://idp.example.com/realms/evil")) == "issuer"
    assert await refused(check, mint(iss=None)) == "invalid"


async def test_a_bad_signature_is_refused() -> None:
    check = verifier(Issuer())
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert await refused(check, mint(key=other)) == "signature"  # right kid, wrong key
    head, _, sig = mint().split(".")
    forged = b64(json.dumps(claims(sub="mallory")).encode())
    assert await refused(check, f"{head}.{forged}.{sig}") == "signature"


async def test_alg_none_and_unlisted_algorithms_are_refused() -> None:
    check = verifier(Issuer(), algorithms=("RS256",))
    unsigned = jwt.encode(claims(), None, algorithm="none", headers={"kid": "rsa-1"})
    assert await refused(check, unsigned) == "algorithm"
    assert await refused(check, mint("ES256")) == "algorithm"  # a real key, an unlisted alg


async def test_hs256_with_the_public_key_as_the_secret_is_refused() -> None:
    """The classic confusion: the issuer's public key (which anyone can fetch) used as an HMAC
    secret. Refused by the allow-list; and an HS* algorithm cannot be allowed at all."""
    check = verifier(Issuer())
    pem = RSA_KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    body = b64(json.dumps(claims()).encode())
    sig = b64(hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest())
    assert await refused(check, f"{head}.{body}.{sig}") == "algorithm"
    for bad in (("HS256",), ("none",), ("RS256", "HS512"), ()):
        with pytest.raises(InvalidArgument, match="never 'none', never HS"):
            OAuth(issuer=ISSUER, algorithms=bad)


async def test_a_key_of_another_type_or_algorithm_is_refused() -> None:
    """A token naming the RSA key's kid but an EC algorithm; one naming the EC key (whose JWK
    states no alg) with an RSA algorithm; the RSA key's JWK states RS256, a PS256 token is
    refused by it even though the key type fits."""
    check = verifier(Issuer(), algorithms=("RS256", "ES256", "PS256"))
    assert await refused(check, mint("ES256", kid="rsa-1")) == "key type"
    assert await refused(check, mint("RS256", kid="ec-1")) == "key type"
    ps = jwt.encode(claims(), RSA_KEY, algorithm="PS256", headers={"kid": "rsa-1"})
    assert await refused(check, ps) == "key type"


async def test_subject_and_configured_tenant_are_required() -> None:
    check = verifier(Issuer())
    assert await refused(check, mint(sub=None)) == "subject"
    assert await refused(check, mint(sub="")) == "subject"
    assert await refused(check, mint(tenant=None)) == "tenant"
    assert await refused(check, mint(tenant=["acme"])) == "tenant"
    free = verifier(Issuer(), claims=Claims())  # no tenant claim configured: none read
    access = await free.verify_token(mint(tenant=None))
    assert identity_of(access) == Identity("alice", None, ("support", "writer"), ISSUER)


async def test_only_the_configured_claims_make_the_identity() -> None:
    check = verifier(Issuer(), claims=Claims(subject="email", roles="realm_access.roles",
                                             tenant="org"))
    token = mint(email="alice@acme.example", org="acme-eu", roles=["admin"],
                 realm_access={"roles": ["viewer", 7, ""]}, tenant="globex")
    access = await check.verify_token(token)
    assert identity_of(access) == Identity("alice@acme.example", "acme-eu", ("viewer",), ISSUER)
    spaced = verifier(Issuer(), claims=Claims(roles="scope"))
    access = await spaced.verify_token(mint(tenant=None))
    assert identity_of(access) is not None
    assert identity_of(access).roles == ("mcp:tools", "notes:read")  # type: ignore[union-attr]


async def test_an_unknown_kid_refetches_once_then_waits_for_min_refresh() -> None:
    issuer, clock = Issuer(), Clock()
    check = verifier(issuer, clock, jwks_min_refresh=30.0)
    assert await check.verify_token(mint()) is not None
    assert issuer.fetched.count(JWKS_URL) == 1
    for _ in range(20):  # a flood of made-up kids: at most one refetch per min_refresh
        assert await refused(check, mint(kid="made-up")) == "unknown key"
    assert issuer.fetched.count(JWKS_URL) == 1  # fetched within min_refresh: none at all
    clock.now += 31
    assert await refused(check, mint(kid="made-up")) == "unknown key"
    assert issuer.fetched.count(JWKS_URL) == 2


async def test_a_rotated_key_is_picked_up_and_the_retired_one_refused() -> None:
    issuer, clock = Issuer(), Clock()
    check = verifier(issuer, clock, jwks_min_refresh=30.0)
    assert await check.verify_token(mint()) is not None
    new = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    issuer.keys[0] = {**jwk_of(new, "rsa-2", "RS256")}
    clock.now += 31
    rotated = mint(kid="rsa-2", key=new)
    assert await check.verify_token(rotated) is not None  # unknown kid: refetched, found
    assert issuer.fetched.count(JWKS_URL) == 2
    clock.now += 31
    assert await refused(check, mint()) == "unknown key"  # rsa-1 is gone from the set


async def test_keys_are_cached_and_refetched_when_stale() -> None:
    issuer, clock = Issuer(), Clock()
    check = verifier(issuer, clock, jwks_max_age=600.0)
    for _ in range(5):
        assert await check.verify_token(mint()) is not None
    assert issuer.fetched.count(JWKS_URL) == 1
    clock.now += 601
    assert await check.verify_token(mint()) is not None
    assert issuer.fetched.count(JWKS_URL) == 2


async def test_an_issuer_down_keeps_the_keys_held() -> None:
    issuer, clock = Issuer(), Clock()
    check = verifier(issuer, clock, jwks_max_age=600.0)
    assert await check.verify_token(mint()) is not None
    issuer.down = True
    clock.now += 601
    assert await check.verify_token(mint()) is not None  # stale, refetch failed: still held


async def test_metadata_naming_another_issuer_yields_no_keys() -> None:
    issuer = Issuer()
    issuer.metadata_issuer = "https://evil.example.com"
    check = verifier(issuer)
    assert await refused(check, mint()) == "unknown key"
    assert JWKS_URL not in issuer.fetched


async def test_symmetric_keys_in_the_set_are_dropped() -> None:
    issuer = Issuer()
    issuer.keys.append({"kty": "oct", "kid": "hs-1", "k": b64(b"secret"), "alg": "HS256"})
    keys = KeySet(ISSUER, fetch=issuer.fetch)
    assert await keys.key("hs-1") is None
    assert keys.kids == frozenset({"rsa-1", "ec-1", "ed-1"})


def test_issuer_and_jwks_urls_must_be_https_or_loopback() -> None:
    for bad in ("http://idp.example.com", "http://127.evil.example.com/", "ftp://127.0.0.1/",
                "https://"):
        with pytest.raises(InvalidArgument, match="https"):
            check_fetch_url(bad, "issuer URL")
    for good in ("https://idp.example.com", "http://127.0.0.1:8080/", "http://localhost:1/",
                 "http://[::1]:9/"):
        assert check_fetch_url(good, "issuer URL") == good
    with pytest.raises(InvalidArgument):
        OAuth(issuer="http://idp.example.com")
    with pytest.raises(InvalidArgument):
        OAuth(issuer=ISSUER, jwks_url="http://idp.example.com/jwks")


CLAIM_NAMES = ("iss", "sub", "aud", "exp", "tenant", "roles", "scope")


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(CLAIM_NAMES),
       value=st.one_of(st.text(max_size=12), st.integers(), st.lists(st.text(max_size=5))))
async def test_any_claim_changed_after_signing_is_refused(name: str, value: Any) -> None:
    """Claims are untrusted until the signature verifies: a token whose payload was edited
    after signing is refused, whatever was edited."""
    check = verifier(Issuer())
    head, _, sig = mint().split(".")
    edited = claims()
    if edited.get(name) == value:
        return
    edited[name] = value
    forged = f"{head}.{b64(json.dumps(edited).encode())}.{sig}"
    assert await check.verify_token(forged) is None


async def test_concurrent_first_requests_fetch_the_keys_once() -> None:
    """Twenty requests arrive before the key set is fetched: one fetch, all served by it."""
    issuer, gate = Issuer(), asyncio.Event()

    async def slow(url: str) -> Any:
        found = await issuer.fetch(url)
        await gate.wait()
        return found

    check = JWTVerifier(OAuth(issuer=ISSUER, resource=RESOURCE), RESOURCE,
                        KeySet(ISSUER, fetch=slow, min_refresh=0.0))
    tasks = [asyncio.ensure_future(check.verify_token(mint())) for _ in range(20)]
    await asyncio.sleep(0)  # each task runs to its first wait: one fetching, the rest queued
    gate.set()
    assert all(access is not None for access in await asyncio.gather(*tasks))
    assert issuer.fetched.count(JWKS_URL) == 1


async def test_malformed_and_oversized_tokens_are_refused_unread() -> None:
    check = verifier(Issuer())
    good = mint()
    head, body, sig = good.split(".")
    for bad in ("", "not-a-jwt", f"{head}.{body}", f"{head}.{body}.{sig}.x",
                f"{b64(b'[1, 2]')}.{body}.{sig}", f"!!!.{body}.{sig}",
                f"{b64(b'{not json')}.{body}.{sig}"):
        assert await refused(check, bad) == "malformed"
    padded = jwt.encode(claims(pad="x" * 16_384), RSA_KEY, algorithm="RS256",
                        headers={"kid": "rsa-1"})
    assert await refused(check, padded) == "malformed"  # over 16 KiB: not parsed at all
    assert check.keys.fetches == 0  # nothing malformed made the server fetch keys


async def test_a_token_without_a_kid_needs_a_set_of_one_key() -> None:
    token = jwt.encode(claims(), RSA_KEY, algorithm="RS256")  # no kid in the header
    assert await refused(verifier(Issuer()), token) == "unknown key"  # three keys: which?
    single = Issuer()
    single.keys = single.keys[:1]
    assert await verifier(single).verify_token(token) is not None
