"""What checking a bearer token costs each request (``tether.serve.oauth.JWTVerifier``).

Per algorithm the issuer may sign with (RS256 with a 2048-bit key, ES256, EdDSA): the time of
``verify_token`` for a valid token with the issuer's keys already fetched (the steady state: the
keys are fetched once and again only on rotation or after ``jwks_max_age``), against PyJWT's own
``jwt.decode`` of the same token with the same prepared key (the signature check and claim
checks, which no resource server can skip) — the difference is what tether's layer adds (the
header read, the key lookup, the claim mapping, the SDK's AccessToken). Also a refused token (a
bad signature), and the path every request takes with authorization off (``request_identity``
on a request without a user). The fastest of ``--rounds`` rounds of ``--calls`` calls each
(tether's and PyJWT's alternating): on a shared machine the fastest round is the one least
disturbed by others, and medians move by half from one minute to the next.

    PYTHONPATH=src .venv/bin/python bench/oauth.py [--calls 2000] [--rounds 5]
    PYTHONPATH=src .venv/bin/python bench/oauth.py --instructions [--only EdDSA off]  # counted
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from instructions import counted
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from tether.serve.jwks import KeySet
from tether.serve.oauth import Claims, JWTVerifier, OAuth
from tether.serve.server import request_identity

ISSUER = "https://idp.example.com"
RESOURCE = "https://tools.example.com/mcp"
RSA_PEM = Path(tempfile.gettempdir()) / "tether-bench-oauth-rsa.pem"  # one key for every child


def rsa_key() -> Any:
    if not RSA_PEM.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        RSA_PEM.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    return serialization.load_pem_private_key(RSA_PEM.read_bytes(), None)


KEYS: dict[str, tuple[Any, Any, str]] = {  # fixed keys: a count is the same in every run
    "RS256": (rsa_key(), RSAAlgorithm, "rsa-1"),
    "ES256": (ec.derive_private_key(0x7E7E7E7E7E7E7E7E, ec.SECP256R1()), ECAlgorithm, "ec-1"),
    "EdDSA": (ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32))), OKPAlgorithm,
              "ed-1"),
}
NOW = 2_000_000_000  # tokens valid until 2033: the same bytes in every run


async def fetch(url: str) -> Any:
    if url.endswith("/jwks"):
        return {"keys": [{**algorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid,
                          "alg": alg} for alg, (key, algorithm, kid) in KEYS.items()]}
    return {"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"}


def token(alg: str) -> str:
    key, _, kid = KEYS[alg]
    claims = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "iat": 1_700_000_000, "exp": NOW,
              "scope": "mcp:tools", "tenant": "acme", "roles": ["writer"]}
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


async def per_call(verify: Any, argument: Any, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await verify(argument)
    return (time.perf_counter() - start) / calls * 1e6


async def main(calls: int, rounds: int) -> None:
    oauth = OAuth(issuer=ISSUER, resource=RESOURCE, claims=Claims(tenant="tenant"))
    verifier = JWTVerifier(oauth, RESOURCE, KeySet(ISSUER, fetch=fetch))
    print(f"{'':24} {'tether verify_token':>20} {'jwt.decode alone':>18} {'added':>8}")
    for alg in KEYS:
        signed = token(alg)
        assert await verifier.verify_token(signed) is not None
        prepared = await verifier._key(KEYS[alg][2], alg)

        async def bare(text: str, alg: str = alg, prepared: Any = prepared) -> Any:
            return jwt.decode(text, prepared, algorithms=[alg], audience=RESOURCE,
                              issuer=ISSUER)

        pairs = [(await per_call(verifier.verify_token, signed, calls),
                  await per_call(bare, signed, calls)) for _ in range(rounds)]
        ours, theirs = min(p[0] for p in pairs), min(p[1] for p in pairs)
        print(f"{alg + ' valid':24} {ours:17.1f} µs {theirs:15.1f} µs {ours - theirs:5.1f} µs")
    head, body, _ = token("RS256").split(".")
    forged = f"{head}.{body}.{token('RS256').split('.')[2][::-1]}"
    refused = min([await per_call(verifier.verify_token, forged, calls)
                   for _ in range(rounds)])
    print(f"{'RS256 bad signature':24} {refused:17.1f} µs")
    assert verifier.keys.fetches == 1, "the keys were fetched more than once"
    off = SimpleNamespace(request=SimpleNamespace(headers={}, scope={}))

    async def off_path(ctx: Any) -> Any:
        return request_identity(ctx)

    spent = min([await per_call(off_path, off, calls * 10) for _ in range(rounds)])
    print(f"{'authorization off':24} {spent:17.2f} µs  (request_identity, no user)")


CHILD = """
import asyncio, sys
sys.path.insert(0, {bench!r})
import oauth
asyncio.run(oauth.child({what!r}, {calls}))
"""


async def child(what: str, calls: int) -> None:
    """``calls`` checks of one kind (for ``--instructions``): ``ALG`` (tether), ``jwt:ALG``
    (PyJWT alone) or ``off``."""
    oauth = OAuth(issuer=ISSUER, resource=RESOURCE, claims=Claims(tenant="tenant"))
    verifier = JWTVerifier(oauth, RESOURCE, KeySet(ISSUER, fetch=fetch))
    alg = what.removeprefix("jwt:")
    signed = token(alg if alg in KEYS else "RS256")
    assert await verifier.verify_token(signed) is not None
    prepared = await verifier._key(KEYS[alg][2], alg) if alg in KEYS else None
    off = SimpleNamespace(request=SimpleNamespace(headers={}, scope={}))
    for _ in range(calls):
        if what == "off":
            request_identity(off)  # type: ignore[arg-type]
        elif what.startswith("jwt:"):
            jwt.decode(signed, prepared, algorithms=[alg], audience=RESOURCE, issuer=ISSUER)
        else:
            await verifier.verify_token(signed)


def instructions(what: str, calls: int) -> int:
    code = CHILD.format(bench=str(Path(__file__).parent), what=what, calls=calls)
    return counted(code)


def per_check(what: str, extra: int = 200) -> float:
    """Instructions of one check: (N + extra calls) - (N calls), over extra."""
    return (instructions(what, 20 + extra) - instructions(what, 20)) / extra


def count(only: list[str]) -> None:
    print(f"{'':24} {'tether verify_token':>20} {'jwt.decode alone':>18} {'added':>8}")
    for alg in [a for a in KEYS if not only or a in only]:
        ours, theirs = per_check(alg), per_check(f"jwt:{alg}")
        print(f"{alg + ' valid':24} {ours / 1e3:16.0f} k {theirs / 1e3:16.0f} k "
              f"{(ours - theirs) / 1e3:6.0f} k")
    if not only or "off" in only:
        print(f"{'authorization off':24} {per_check('off', 2000) / 1e3:16.2f} k  "
              "(request_identity, no user)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instructions", action="store_true",
                        help="count machine instructions per check under valgrind instead of "
                        "timing (deterministic; slow)")
    parser.add_argument("--only", nargs="*", default=[], metavar="WHAT",
                        help="with --instructions: only these (RS256, ES256, EdDSA, off)")
    options = parser.parse_args()
    if options.instructions:
        count(options.only)
    else:
        asyncio.run(main(options.calls, options.rounds))
